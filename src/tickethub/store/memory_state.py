"""The tables of the in-memory store (``memory_store``) and its undo log."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, overload

from tickethub import json_codec
from tickethub.domain.actors import Actor
from tickethub.domain.events import Event
from tickethub.domain.messages import Message
from tickethub.domain.records import Delivery, Webhook
from tickethub.domain.tickets import Ticket


class ConstraintViolation(Exception):
    """A unique key or a reference the in-memory store enforces, as a database would."""


_MISSING = object()


def as_json(value: Any) -> Any:
    """``value`` as a JSON column gives it back: a fresh copy, tuples as lists."""
    if value is None:
        return None
    return json_codec.loads(json_codec.dumps(value))


@overload
def as_utc(value: datetime) -> datetime: ...
@overload
def as_utc(value: None) -> None: ...
def as_utc(value: datetime | None) -> datetime | None:
    """An aware datetime in UTC, as ``store.types.UTCDateTime`` keeps it."""
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("naive datetime given to the store")
    return value.astimezone(UTC)


@dataclass(slots=True)
class TicketRow:
    """A stored ticket and what the ticket value does not carry."""

    ticket: Ticket
    depth: int
    idempotency_key: str | None
    request_hash: str | None


@dataclass(slots=True)
class TokenRow:
    id: int
    actor_name: str
    name: str
    token_hash: str
    prefix: str
    created_at: datetime
    revoked_at: datetime | None
    scopes: frozenset[str]


@dataclass(slots=True)
class MemoryState:
    """Every table, as dicts in insertion (= id) order."""

    tickets: dict[int, TicketRow] = field(default_factory=dict)
    idempotency: dict[tuple[str, str], int] = field(default_factory=dict)
    messages: dict[int, Message] = field(default_factory=dict)
    external_ids: dict[tuple[str, str], int] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    actors: dict[str, tuple[Actor, datetime]] = field(default_factory=dict)
    tokens: dict[int, TokenRow] = field(default_factory=dict)
    token_hashes: dict[str, int] = field(default_factory=dict)
    deliveries: dict[int, Delivery] = field(default_factory=dict)
    delivery_keys: dict[str, int] = field(default_factory=dict)
    cursors: dict[str, int] = field(default_factory=dict)
    webhooks: dict[int, Webhook] = field(default_factory=dict)
    # web bookkeeping (``memory_web_marks``): (actor id, ticket id) -> (read at, the
    # log's last seq then); (actor id, view name) -> (query, created at)
    web_reads: dict[tuple[int, int], tuple[datetime, int]] = field(default_factory=dict)
    saved_views: dict[tuple[int, str], tuple[str, datetime]] = field(default_factory=dict)
    # people's sign-in (``memory_sessions``): actor name -> password hash; token hash ->
    # session (actor name, csrf, created, expires); token hash -> link (name, created,
    # expires)
    passwords: dict[str, str] = field(default_factory=dict)
    sessions: dict[str, tuple[str, str, datetime, datetime]] = field(default_factory=dict)
    links: dict[str, tuple[str, datetime, datetime]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    # the side stores' tables (``memory_ap``, ``memory_chat``, ``memory_mail``,
    # ``memory_github``, ``memory_agents``), by table name, each a dict by key
    tables: dict[str, dict[Any, Any]] = field(default_factory=dict)

    def table(self, name: str) -> dict[Any, Any]:
        """The side table ``name``, empty until first written."""
        return self.tables.setdefault(name, {})

    def next_ids(self, table: str, count: int) -> list[int]:
        """``count`` new ids of ``table``, ascending; never rolled back."""
        start = self.counters.get(table, 0)
        self.counters[table] = start + count
        return list(range(start + 1, start + count + 1))


class Changes:
    """The undo log of the open transaction: every change records how to take it back."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def put(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        old = table.get(key, _MISSING)
        table[key] = value
        if old is _MISSING:
            self._undo.append(lambda: table.pop(key, None))
        else:
            self._undo.append(lambda: table.__setitem__(key, old))

    def drop(self, table: dict[Any, Any], key: Any) -> None:
        old = table.pop(key)
        self._undo.append(lambda: table.__setitem__(key, old))

    def append(self, table: list[Any], value: Any) -> None:
        table.append(value)
        self._undo.append(table.pop)

    def mark(self) -> int:
        return len(self._undo)

    def roll_back_to(self, mark: int) -> None:
        while len(self._undo) > mark:
            self._undo.pop()()


