"""A helper process of `count_tokens`: `python -m cowork_assets.tokens ENCODING FILE` reads a JSON list of
texts from FILE and writes their token counts, a JSON list, on stdout."""

import sys
from pathlib import Path

import orjson

from cowork_assets.tokens import get_encoding

encode = get_encoding(sys.argv[1]).encode_ordinary
sys.stdout.buffer.write(orjson.dumps([len(encode(text)) for text in orjson.loads(Path(sys.argv[2]).read_bytes())]))
