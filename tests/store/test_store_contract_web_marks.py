"""The store contract, a person's web bookkeeping: read marks and saved views
(``ReadMarkStore``, ``SavedViewStore``) on the in-memory store, SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.domain.records import SavedView
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.store.memory_store import MemoryStore
from tickethub.store.memory_web_marks import MemoryReadMarks, MemorySavedViews
from tickethub.store.web_marks import SqlReadMarks, SqlSavedViews

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


def _people_and_tickets(store: Any) -> tuple[int, int, list[int]]:
    with store.write() as uow:
        alice = uow.actors.add(Actor("alice", Role.RESPONDER, ActorKind.PERSON), NOW)
        bob = uow.actors.add(Actor("bob", Role.RESPONDER, ActorKind.PERSON), NOW)
        tickets = uow.tickets.add_many([(TicketDraft(Kind.TASK, f"t{i}"), "agent")
                                        for i in range(4)], NOW)
    return alice.id, bob.id, [t.id for t in tickets]


def _marks(store: Any) -> Any:
    return MemoryReadMarks(store) if isinstance(store, MemoryStore) else SqlReadMarks(store)


def _views(store: Any) -> Any:
    return MemorySavedViews(store) if isinstance(store, MemoryStore) else SqlSavedViews(store)


def test_read_marks_are_per_person_added_once_and_removed(store: Any) -> None:
    alice, bob, (a, b, c, d) = _people_and_tickets(store)
    marks = _marks(store)
    marks.mark(alice, [a, b], True, NOW)
    marks.mark(alice, [b, c], True, NOW)  # b twice: kept once
    marks.mark(bob, [d], True, NOW)
    assert marks.read_among(alice, [a, b, c, d]) == {a, b, c}
    assert marks.read_among(bob, [a, b, c, d]) == {d}
    marks.mark(alice, [b, d], False, NOW)  # d was never hers: nothing happens
    assert marks.read_among(alice, [a, b, c, d]) == {a, c}
    assert marks.read_among(bob, [d]) == {d}
    assert marks.read_among(alice, []) == set()


def test_a_mark_of_an_unknown_ticket_is_refused_and_stores_nothing(store: Any) -> None:
    alice, _, (a, *_) = _people_and_tickets(store)
    marks = _marks(store)
    with pytest.raises(Exception):  # noqa: B017 (each store its own)
        marks.mark(alice, [a, 999_999], True, NOW)
    assert marks.read_among(alice, [a]) == set()


def test_saved_views_by_name_replaced_limited_and_deleted(store: Any) -> None:
    alice, bob, _ = _people_and_tickets(store)
    views = _views(store)
    assert views.put(alice, SavedView("mine", "view=me"), NOW, limit=2)
    assert views.put(alice, SavedView("all", "view=all"), NOW, limit=2)
    assert not views.put(alice, SavedView("third", "q=x"), NOW, limit=2)  # over the limit
    assert views.put(alice, SavedView("mine", "view=me&sort=urgent"), NOW, limit=2)
    assert views.put(bob, SavedView("mine", "view=team"), NOW, limit=2)
    assert views.views_of(alice) == [SavedView("all", "view=all"),
                                     SavedView("mine", "view=me&sort=urgent")]
    views.delete(alice, "all")
    views.delete(alice, "never there")
    assert views.views_of(alice) == [SavedView("mine", "view=me&sort=urgent")]
    assert views.views_of(bob) == [SavedView("mine", "view=team")]


def test_a_read_ticket_turns_unread_when_someone_else_writes_to_it(store: Any) -> None:
    """Activity by others after the mark unmarks; one's own does not; reading again
    covers what happened before it."""
    from tickethub.domain.events import EventType, NewEvent

    alice, _, (a, b, *_) = _people_and_tickets(store)
    marks = _marks(store)
    marks.mark(alice, [a, b], True, NOW)

    def event(ticket: int, actor: str) -> None:
        with store.write() as uow:
            uow.events.append_many([NewEvent(EventType.MESSAGE_POSTED, ticket,
                                             f"/{ticket}/", actor, {})], NOW)

    event(a, "agent")
    event(b, "alice")
    assert marks.read_among(alice, [a, b]) == {b}
    marks.mark(alice, [a], True, NOW)
    assert marks.read_among(alice, [a, b]) == {a, b}
