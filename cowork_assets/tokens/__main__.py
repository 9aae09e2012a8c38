"""A helper process of `TokenCounter`: `python -m cowork_assets.tokens ENCODING` loads the encoding, then for
each line on stdin (the path of a JSON list of texts) writes their token counts, a JSON list, as a line."""

import sys
from pathlib import Path

import orjson

from cowork_assets.runtime.helper_process import write_line
from cowork_assets.tokens import get_encoding

encode = get_encoding(sys.argv[1]).encode_ordinary
for line in sys.stdin.buffer:
    texts = orjson.loads(Path(line.strip().decode()).read_bytes())
    write_line(sys.stdout.buffer, orjson.dumps([len(encode(text)) for text in texts]))
