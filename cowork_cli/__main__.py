"""Entry point of `cowork-curate` (and `python -m cowork_cli`): tune the process, then parse the command."""

import sys


def main(argv: list[str] | None = None) -> int:
    from cowork_assets.runtime.tuning import tune_process

    tune_process()  # before anything imports polars
    from cowork_cli.cli import main as run

    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
