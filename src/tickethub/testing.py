"""In-memory fakes of the ports, for tests (ours and plugin authors'). ``MemoryStore``
(``store/memory_store.py``) is the fake ``Store``: it passes the same contract tests as
SQLite and PostgreSQL (``tests/store/test_store_contract_*.py``). The side stores over
it pass theirs too: ``MemoryApStore`` (Agent Protocol tasks, steps, artifacts),
``MemoryChatState`` (conversations), ``MemoryMailState`` (the mail pipeline),
``MemoryGithubStore``, ``MemoryAgentStore`` (personal agents) and ``MemoryInboxReader``;
each takes the ``MemoryStore`` whose transactions it shares."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from tickethub.domain.tickets import Moved, Ticket
from tickethub.store.memory_agents import MemoryAgentStore
from tickethub.store.memory_ap import MemoryApStore
from tickethub.store.memory_chat import MemoryChatState
from tickethub.store.memory_github import MemoryGithubStore
from tickethub.store.memory_inbox import MemoryInboxReader
from tickethub.store.memory_mail import MemoryMailState
from tickethub.store.memory_sessions import MemorySessionStore
from tickethub.store.memory_store import MemoryStore
from tickethub.store.memory_web_marks import MemoryReadMarks, MemorySavedViews

__all__ = ["CountingTokens", "FakeClock", "MemoryAgentStore", "MemoryApStore",
           "MemoryChatState", "MemoryGithubStore", "MemoryInboxReader", "MemoryMailState",
           "MemoryReadMarks", "MemorySavedViews", "MemorySessionStore", "MemoryStore",
           "RecordingNotifier"]


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> datetime:
        self._now += timedelta(**delta)
        return self._now


class CountingTokens:
    """Predictable tokens: ``th_test_1``, ``th_test_2``, ..."""

    def __init__(self) -> None:
        self._n = itertools.count(1)

    def token(self) -> str:
        return f"th_test_{next(self._n):040d}"


class RecordingNotifier:
    """Records every notification instead of waking anyone."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, list[int]]] = []

    def notify(self, seq: int, tickets: Sequence[Ticket | Moved], touched: Sequence[int] = ()
               ) -> None:
        self.calls.append((seq, [t.id for t in tickets] + list(touched)))
