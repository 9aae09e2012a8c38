"""What trainers load from the project besides the published files: chat templates for training
(`templates/`, with `{% generation %}` markers for assistant-only loss) and verl's classes (`verl`: the
tools that answer RL tasks' calls from the workspace simulation, and the multi-turn SFT dataset); and a trainer's
own tokenizer and chat template, as the `tokenizer` setting counts with them (`tokenizer`)."""

from importlib.resources import files

TEMPLATES = files(__name__) / "templates"


def chat_template(name: str) -> str:
    """A shipped training chat template by file name (`qwen2.5.jinja`, `llama3.1.jinja`)."""
    return (TEMPLATES / name).read_text()
