"""What an id, a sequence number or a cursor can be, at every door.

Ticket, message, token and webhook ids and event sequence numbers are ``INTEGER`` columns
(``store/tables.py``): 32-bit on PostgreSQL, 64-bit on SQLite. The hub accepts the range
both databases can hold, ``1 .. MAX_ID`` (``0 .. MAX_ID`` for an event cursor), so the same
request gets the same answer on either: a number outside it, or anything but ASCII digits
(``int()`` takes ``'٣'``, ``str.isdigit()`` takes ``'²'``), is a 422 naming the parameter,
never a database error; an id inside it that names nothing is a 404.
"""

from __future__ import annotations

MAX_ID = 2**31 - 1  # PostgreSQL INTEGER; widen here (and migrate to BIGINT) together


def parse_id(raw: str, minimum: int = 1) -> int | None:
    """``raw`` as an id in ``minimum .. MAX_ID``, or ``None``: only ASCII digits count
    (surrounding spaces are ignored), so ``'²'``, ``'-1'`` and ``'1e3'`` are ``None``."""
    text = raw.strip()
    if not text or len(text) > 10 or not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if minimum <= value <= MAX_ID else None
