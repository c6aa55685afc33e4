"""Text the hub stores: any Unicode except NUL.

PostgreSQL cannot store a NUL character in text (SQLite can), so a title, body, message,
label or filter holding one would be kept on one database and a 500 on the other. Every
door refuses it instead, with a 422 naming the field: the HTTP doors through their wire
schemas (``api/wire_types.py``), the others (mail, GitHub, MCP) through the services,
which call :func:`first_with_nul`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

NUL = "\x00"
NO_NUL_PATTERN = r"^[^\x00]*$"  # the same rule as a JSON Schema / pydantic pattern


def first_with_nul(fields: Mapping[str, str | Iterable[str] | None]) -> str | None:
    """The name of the first field whose text (or one of whose texts) holds a NUL."""
    for name, value in fields.items():
        if value is None:
            continue
        texts = (value,) if isinstance(value, str) else value
        if any(NUL in text for text in texts):
            return name
    return None
