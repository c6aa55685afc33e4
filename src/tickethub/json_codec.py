"""JSON for the hub's hot paths: orjson where it can, the standard library where orjson
refuses, so what is stored and sent is the same JSON either way.

orjson is several times faster than ``json`` for the small documents the hub writes per
request (message and event data, Agent Protocol responses), but it refuses integers
beyond 64 bits and reads no ``NaN``; those (rare) documents fall back to ``json``.
Output is compact (``{"a":1}``), as the web responses always were.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS


def dumps(value: Any) -> str:
    return dumps_bytes(value).decode()


def dumps_bytes(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=_OPTIONS)
    except TypeError:  # e.g. an integer beyond 64 bits
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def loads(text: str | bytes) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # e.g. NaN, or an integer beyond 64 bits
        return json.loads(text)
