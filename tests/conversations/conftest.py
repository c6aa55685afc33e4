"""An engine on a real database (SQLite and PostgreSQL) that can be rebuilt, as a
restarted hub would be, on the same database and clock; and on the in-memory store
(``MemoryStore`` with ``MemoryChatState``), whose state a rebuilt hub keeps as a
database would: the fakes run the same engine tests as the real stores."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from tests.conftest import _PgDatabases, require_server
from tickethub.conversations.engine import ConversationEngine
from tickethub.conversations.examples import foodselection
from tickethub.conversations.handlers import Handler
from tickethub.services.tickets import TicketService
from tickethub.store.chat_store import SqlChatState
from tickethub.store.engine import make_engine
from tickethub.store.memory_chat import MemoryChatState
from tickethub.store.memory_store import MemoryStore
from tickethub.store.migrate import upgrade
from tickethub.store.sql_store import SqlStore
from tickethub.testing import FakeClock, RecordingNotifier

# A Thursday, so "tomorrow" is Fri 2 Jan.
START = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


class Hub:
    """What a restart rebuilds: the store, the services and the engine."""

    def __init__(self, url: str | MemoryStore, clock: FakeClock,
                 handlers: Callable[[], Sequence[Handler]],
                 responders: frozenset[str]) -> None:
        self.url, self.clock = url, clock
        self._handlers, self._responders = handlers, responders
        self.engines: list[Engine] = []
        self.memory = url if isinstance(url, MemoryStore) else None
        self.engine = self.build()

    def build(self) -> ConversationEngine:
        self.store: Any
        if self.memory is not None:
            self.store = self.memory
            self.state: Any = MemoryChatState(self.memory)
        else:
            assert isinstance(self.url, str)
            sql = make_engine(self.url)
            upgrade(sql)
            self.engines.append(sql)
            self.store = SqlStore(sql)
            self.state = SqlChatState(self.store)
        self.tickets = TicketService(self.store, self.clock, RecordingNotifier())
        self.engine = ConversationEngine(self.state, self.tickets, self.clock,
                                         self._handlers(), responders=self._responders)
        return self.engine

    def close(self) -> None:
        for sql in self.engines:
            sql.dispose()


MEMORY = "memory"


@pytest.fixture(params=[MEMORY, "sqlite", "postgresql"])
def chat_database(request: pytest.FixtureRequest, tmp_path: Path,
                  pg_databases: _PgDatabases | None) -> Iterator[str | MemoryStore]:
    """Where the hub keeps its state: a ``MemoryStore`` (shared by every hub of the
    test, as a database is), or a database URL."""
    if request.param != "postgresql":
        yield MemoryStore() if request.param == MEMORY else f"sqlite:///{tmp_path / 'hub.db'}"
        return
    require_server("PostgreSQL", pg_databases is not None)
    assert pg_databases is not None
    url = pg_databases.fresh()
    yield url
    pg_databases.drop(url)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def make_hub(chat_database: str | MemoryStore, clock: FakeClock) -> Iterator[Callable[..., Hub]]:
    made: list[Hub] = []

    def make(handlers: Callable[[], Sequence[Handler]] = foodselection.handlers,
             responders: frozenset[str] = frozenset()) -> Hub:
        hub = Hub(chat_database, clock, handlers, responders)
        made.append(hub)
        return hub

    yield make
    for hub in made:
        hub.close()
