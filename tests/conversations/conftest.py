"""An engine on a real database (SQLite and PostgreSQL) that can be rebuilt, as a
restarted hub would be, on the same database and clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine

from tickethub.conversations.engine import ConversationEngine
from tickethub.conversations.examples import foodselection
from tickethub.conversations.handlers import Handler
from tickethub.services.tickets import TicketService
from tickethub.store.chat_store import SqlChatState
from tickethub.store.engine import make_engine
from tickethub.store.migrate import upgrade
from tickethub.store.sql_store import SqlStore
from tickethub.testing import FakeClock, RecordingNotifier

# A Thursday, so "tomorrow" is Fri 2 Jan.
START = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


class Hub:
    """What a restart rebuilds: the store, the services and the engine."""

    def __init__(self, url: str, clock: FakeClock,
                 handlers: Callable[[], Sequence[Handler]],
                 responders: frozenset[str]) -> None:
        self.url, self.clock = url, clock
        self._handlers, self._responders = handlers, responders
        self.engines: list[Engine] = []
        self.engine = self.build()

    def build(self) -> ConversationEngine:
        sql = make_engine(self.url)
        upgrade(sql)
        self.engines.append(sql)
        self.store = SqlStore(sql)
        self.tickets = TicketService(self.store, self.clock, RecordingNotifier())
        self.state = SqlChatState(self.store)
        self.engine = ConversationEngine(self.state, self.tickets, self.clock,
                                         self._handlers(), responders=self._responders)
        return self.engine

    def close(self) -> None:
        for sql in self.engines:
            sql.dispose()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def make_hub(database_url: str, clock: FakeClock) -> Iterator[Callable[..., Hub]]:
    made: list[Hub] = []

    def make(handlers: Callable[[], Sequence[Handler]] = foodselection.handlers,
             responders: frozenset[str] = frozenset()) -> Hub:
        hub = Hub(database_url, clock, handlers, responders)
        made.append(hub)
        return hub

    yield make
    for hub in made:
        hub.close()
