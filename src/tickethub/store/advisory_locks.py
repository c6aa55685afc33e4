"""PostgreSQL advisory locks the hub takes, with their keys in one table so no two
purposes can share a key by accident. On SQLite there is one writer at a time and none
of them is needed.

- ``EVENT_LOG``: held by every transaction that appends events, so commit order equals
  ``seq`` order (``records.SqlEventLog``).
- ``LEADER``: a session lock; its holder runs the once-only loops (``server/leader.py``).
- ``BOOTSTRAP``: the first admin is created by one starting process at a time.
- ``MIGRATE``: processes started together migrate one after another.
- ``CHAT_INBOX`` (with the chat thread's name): held by every transaction that queues a
  chat message, so a thread's ``chat_inbox.seq`` order equals commit order and two
  processes cannot hand a thread's messages over out of arrival order
  (``store/chat_store.py``)."""

from __future__ import annotations

from sqlalchemy import Connection, text

EVENT_LOG = 0x7E1C4E7
LEADER = 0x7E1C4E8
BOOTSTRAP = 0x7E1C4E9
MIGRATE = 0x7E1C4EA
CHAT_INBOX = 0x7E1C4EB

_HOLD = text("SELECT pg_advisory_xact_lock(:k)")
# The two-key form: a lock space of its own (PostgreSQL keeps one-key and two-key
# locks apart), one lock per (purpose, name).
_HOLD_NAMED = text("SELECT pg_advisory_xact_lock(:k, hashtext(:name))")


def hold_for_transaction(connection: Connection, key: int) -> None:
    """Wait for and hold lock ``key`` until ``connection``'s transaction ends; nothing on
    a database other than PostgreSQL."""
    if connection.dialect.name == "postgresql":
        connection.execute(_HOLD, {"k": key})


def hold_named_for_transaction(connection: Connection, key: int, name: str) -> None:
    """Like :func:`hold_for_transaction`, for the lock of ``name`` among ``key``'s (a
    chat thread's, say): transactions on other names do not wait."""
    if connection.dialect.name == "postgresql":
        connection.execute(_HOLD_NAMED, {"k": key, "name": name})
