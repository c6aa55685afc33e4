"""The store contract, the people's inbox (``InboxReader``): views, filters, the two
orders and their keyset pages, and the count, on the in-memory store, SQLite and
PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.store.conftest import on_store
from tickethub.domain.inbox import Cursor, InboxQuery
from tickethub.domain.messages import MessageDraft, MessageKind
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketDraft
from tickethub.store.inbox_queries import SqlInboxReader
from tickethub.store.memory_inbox import MemoryInboxReader

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
STATUSES = (Status.OPEN, Status.IN_PROGRESS, Status.DEFERRED, Status.DONE)


@pytest.fixture
def inbox(store: Any) -> Any:
    return on_store(store, MemoryInboxReader, SqlInboxReader)


def _seed(store: Any, count: int = 24) -> list[Any]:
    """``count`` tickets over four statuses and three assignees, due dates with ties, a
    third undated; returns them as stored."""
    with store.write() as uow:
        made = uow.tickets.add_many([(TicketDraft(
            Kind.QUESTION if n % 2 else Kind.TASK, f"ticket {n}", body=f"body {n}",
            assignee=("me", "sam", None)[n % 3], labels=("ops",) if n % 4 == 1 else (),
            due_at=None if n % 3 == 0 else NOW + timedelta(minutes=n % 5)),
            "agent" if n % 5 else "other-agent") for n in range(count)], NOW)
        stored = []
        for n, ticket in enumerate(made):
            status = STATUSES[n % 4]
            if status is not Status.OPEN:
                assert uow.tickets.update(replace(ticket, status=status,
                                                  version=ticket.version + 1), 1)
            stored.append(uow.tickets.get(ticket.id))
    return stored


def _walk(inbox: Any, query: InboxQuery) -> list[int]:
    """Every page of ``query``, each from the cursor of the page before."""
    seen: list[int] = []
    while True:
        page = inbox.page(query)
        seen += [t.id for t in page]
        if len(page) < query.limit:
            return seen
        last = page[-1]
        query = replace(query, cursor=Cursor(last.id, last.due_at))


def _urgent(tickets: list[Any]) -> list[int]:
    dated = sorted((t for t in tickets if t.due_at), key=lambda t: (t.due_at, -t.id))
    return [t.id for t in dated] + sorted((t.id for t in tickets if not t.due_at),
                                          reverse=True)


def test_newest_first_in_pages_per_view(inbox: Any, store: Any) -> None:
    tickets = _seed(store)
    query = InboxQuery("me", limit=3)  # waiting tickets, mine or nobody's
    team = [t.id for t in reversed(tickets) if t.waiting and t.assignee in (None, "me")]
    assert 3 < len(team) < len(tickets)
    assert _walk(inbox, query) == team and inbox.count(query) == len(team)
    first = inbox.page(query)
    assert first == [next(t for t in tickets if t.id == i) for i in team[:3]]
    mine = [i for i in team if next(t for t in tickets if t.id == i).assignee == "me"]
    assert _walk(inbox, replace(query, view="me")) == mine
    everything = sorted((t.id for t in tickets), reverse=True)
    assert _walk(inbox, replace(query, view="all", limit=5)) == everything
    assert inbox.count(replace(query, view="all", cursor=Cursor(1), limit=1)) == 24
    done = [t.id for t in reversed(tickets) if t.status is Status.DONE]
    assert _walk(inbox, replace(query, view="all", status=(Status.DONE,))) == done


def test_most_urgent_first_in_pages_over_ties_and_undated(inbox: Any, store: Any) -> None:
    tickets = _seed(store, 40)
    for limit in (1, 4, 7, 50):
        for view, status in (("all", ()), ("team", ()),
                             ("all", (Status.OPEN, Status.DEFERRED))):
            query = InboxQuery("me", view=view, status=status, sort="urgent", limit=limit)
            expected = _urgent([t for t in tickets if replace(query, q=None).matches(t)])
            assert _walk(inbox, query) == expected, (limit, view, status)


def test_filters_kind_label_assignee_agent_and_text(inbox: Any, store: Any) -> None:
    tickets = _seed(store)
    with store.write() as uow:
        uow.messages.add_many([MessageDraft(tickets[4].id, "ann", "web", "Needs 50%_OFF",
                                            MessageKind.COMMENT, True)], NOW)

    def ids(**filters: Any) -> list[int]:
        query = InboxQuery("me", view="all", limit=100, **filters)
        found = [t.id for t in inbox.page(query)]
        assert inbox.count(query) == len(found)
        return sorted(found)

    assert ids(kind=Kind.QUESTION) == [t.id for t in tickets if t.kind is Kind.QUESTION]
    assert ids(label=" OPS ") == [t.id for t in tickets if "ops" in t.labels]
    assert ids(assignee="sam") == [t.id for t in tickets if t.assignee == "sam"]
    assert ids(agent="other-agent") == [t.id for t in tickets if t.created_by != "agent"]
    assert ids(q="TICKET 1") == [t.id for t in tickets if t.title.startswith("ticket 1")]
    assert ids(q="body 23") == [tickets[23].id]
    assert ids(q="50%_off") == [tickets[4].id]  # a message's text, wildcards as text
    assert ids(q="50%%") == [] and ids(q="_") == [tickets[4].id]
    assert ids(q="nowhere") == [] and ids(label="none") == []
    assert ids(kind=Kind.QUESTION, assignee="sam", q="ticket") == [
        t.id for t in tickets if t.kind is Kind.QUESTION and t.assignee == "sam"]


def test_only_what_the_reader_may_read(inbox: Any, store: Any) -> None:
    tickets = _seed(store, 10)
    with store.write() as uow:
        [child] = uow.tickets.add_many([(TicketDraft(Kind.TASK, "below", parent_id=tickets[0].id,
                                                     assignee="me"), "helper")], NOW)
    query = InboxQuery("me", view="all", limit=100, readable_by="other-agent")
    assert sorted(t.id for t in inbox.page(query)) == [tickets[0].id, tickets[5].id, child.id]
    assert inbox.count(query) == 3
    assert inbox.page(replace(query, readable_by="helper")) == [
        next(iter(inbox.page(replace(query, readable_by=None, q="below"))))]
    assert inbox.count(replace(query, readable_by="nobody")) == 0
