"""PostgreSQL advisory locks the hub takes, with their keys in one table so no two
purposes can share a key by accident. On SQLite there is one writer at a time and none
of them is needed.

- ``EVENT_LOG``: held by every transaction that appends events, so commit order equals
  ``seq`` order (``records.SqlEventLog``).
- ``LEADER``: a session lock; its holder runs the once-only loops (``server/leader.py``).
- ``BOOTSTRAP``: the first admin is created by one starting process at a time.
- ``MIGRATE``: processes started together migrate one after another."""

from __future__ import annotations

from sqlalchemy import Connection, text

EVENT_LOG = 0x7E1C4E7
LEADER = 0x7E1C4E8
BOOTSTRAP = 0x7E1C4E9
MIGRATE = 0x7E1C4EA

_HOLD = text("SELECT pg_advisory_xact_lock(:k)")


def hold_for_transaction(connection: Connection, key: int) -> None:
    """Wait for and hold lock ``key`` until ``connection``'s transaction ends; nothing on
    a database other than PostgreSQL."""
    if connection.dialect.name == "postgresql":
        connection.execute(_HOLD, {"k": key})
