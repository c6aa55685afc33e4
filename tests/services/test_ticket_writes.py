"""The one write path: batches of asks, changes and messages in one transaction, each
item succeeding or failing on its own, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tickethub.domain.actors import Actor, Role
from tickethub.domain.events import EventType
from tickethub.domain.messages import Message
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket, TicketDraft
from tickethub.errors import (
    DatabaseUnavailable,
    Forbidden,
    IdempotencyKeyReused,
    IllegalTransition,
    NotFound,
    StaleVersion,
)
from tickethub.server.runtime import HubRuntime
from tickethub.services.ticket_writes import Ask, Asked, Change, Post, TicketWriter
from tickethub.settings import Settings
from tickethub.testing import FakeClock

AGENT = Actor("bot", Role.AGENT)
OTHER_AGENT = Actor("other-bot", Role.AGENT)
ALICE = Actor("alice", Role.RESPONDER)


@pytest.fixture
def hub(tmp_path: Path, database_url: str) -> Any:
    runtime = HubRuntime(Settings(data_dir=tmp_path, database_url=database_url),
                         clock=FakeClock())
    yield runtime
    runtime.close()


class _Counting:
    """A notifier that records each wake-up."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, list[int], list[int]]] = []

    def notify(self, seq: int, tickets: Any, touched: Any = ()) -> None:
        self.calls.append((seq, [t.id for t in tickets], list(touched)))


def _writer(hub: HubRuntime) -> tuple[TicketWriter, _Counting]:
    notifier = _Counting()
    return TicketWriter(hub.store, hub.clock, notifier), notifier


def _answer(hub: HubRuntime, ticket_id: int, text: str = "yes",
            version: int | None = None) -> Change:
    return hub.tickets._answer_item(ALICE, ticket_id, text, None, "api", version)


def test_a_batch_of_asks_answers_and_messages_is_one_commit_and_one_wakeup(
        hub: HubRuntime):
    open_one, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="a"))
    open_two, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="b"))
    writer, notifier = _writer(hub)
    results = writer.write([
        Ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="new")),
        _answer(hub, open_one.id),
        Post(AGENT, open_two.id, "more context", "api"),
        _answer(hub, open_two.id, "no"),
    ])
    asked, answered, message, answered_two = results
    assert isinstance(asked, Asked) and asked.created and asked.ticket.title == "new"
    assert isinstance(answered, Ticket) and answered.status is Status.ANSWERED
    assert isinstance(message, Message) and message.body == "more context"
    assert isinstance(answered_two, Ticket) and answered_two.answer is not None
    assert answered_two.answer.text == "no"
    # Nothing was read back: what the writer returned is what is stored.
    assert hub.tickets.get(open_one.id) == answered
    assert hub.tickets.get(asked.ticket.id) == asked.ticket
    # One wake-up for the batch, with every new state and the messaged ticket.
    [(seq, states, touched)] = notifier.calls
    assert sorted(states) == sorted([asked.ticket.id, open_one.id, open_two.id])
    assert touched == []
    events = hub.events.since(0, limit=100)
    assert events[-1].seq == seq
    kinds = [e.type for e in events[-4:]]
    assert kinds == [EventType.TICKET_CREATED, EventType.TICKET_ANSWERED,
                     EventType.TICKET_ANSWERED, EventType.MESSAGE_POSTED]
    # The decision's message id rides in its event, as with a single answer.
    answer_messages = [m for m in hub.tickets.messages(open_one.id) if m.kind.value == "answer"]
    assert events[-3].data["message_id"] == answer_messages[0].id


def test_a_bad_item_fails_alone(hub: HubRuntime):
    mine, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="mine"))
    done, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="done"))
    hub.tickets.answer(ALICE, done.id, "already", None, "api")
    theirs, _ = hub.tickets.ask(OTHER_AGENT, TicketDraft(kind=Kind.QUESTION, title="theirs"))
    writer, _ = _writer(hub)
    before = hub.events.since(0, limit=1000)[-1].seq
    results = writer.write([
        _answer(hub, 999_999),                                   # unknown
        _answer(hub, done.id),                                   # already answered
        _answer(hub, mine.id, version=7),                        # stale version
        Post(AGENT, theirs.id, "peek", "api"),                   # may not read it
        Ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="child", parent_id=theirs.id)),
        _answer(hub, mine.id),                                   # fine
    ])
    assert isinstance(results[0], NotFound)
    assert isinstance(results[1], IllegalTransition)
    assert isinstance(results[2], StaleVersion)
    assert isinstance(results[3], NotFound)
    assert isinstance(results[4], NotFound) and results[4].field == "parent_id"
    assert isinstance(results[5], Ticket) and results[5].status is Status.ANSWERED
    # Only the good item left a trace.
    after = hub.events.since(before, limit=1000)
    assert [(e.type, e.ticket_id) for e in after] == [(EventType.TICKET_ANSWERED, mine.id)]


def test_two_answers_to_one_ticket_in_one_batch_give_one_answer_and_one_conflict(
        hub: HubRuntime):
    ticket, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="q"))
    writer, _ = _writer(hub)
    first, second = writer.write([_answer(hub, ticket.id, "one"),
                                  _answer(hub, ticket.id, "two")])
    assert isinstance(first, Ticket) and first.answer is not None
    assert first.answer.text == "one"
    assert isinstance(second, IllegalTransition)
    stored = hub.tickets.get(ticket.id)
    assert stored.version == ticket.version + 1 and stored.answer == first.answer


def test_changes_of_one_ticket_in_one_batch_apply_in_order(hub: HubRuntime):
    ticket, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="q",
                                                   labels=("a",)))
    writer, _ = _writer(hub)
    labelled, moved = writer.write([
        hub.tickets._label_item(AGENT, ticket.id, ["b"], ["a"], None),
        hub.tickets._transition_item(AGENT, ticket.id, Status.IN_PROGRESS, None, None,
                                     ticket.version + 1),
    ])
    assert isinstance(labelled, Ticket) and labelled.labels == ("b",)
    assert isinstance(moved, Ticket) and moved.status is Status.IN_PROGRESS
    assert moved.version == ticket.version + 2 and moved.labels == ("b",)
    assert hub.tickets.get(ticket.id) == moved
    # The label table followed (a list by label finds it under its new label only).
    from tickethub.domain.tickets import TicketQuery
    assert [t.id for t in hub.tickets.list(TicketQuery(label="b")).items] == [ticket.id]
    assert hub.tickets.list(TicketQuery(label="a")).items == []


def test_one_idempotency_key_twice_in_one_batch_opens_one_ticket(hub: HubRuntime):
    writer, _ = _writer(hub)
    same = hub.tickets._ask_item(AGENT, TicketDraft(kind=Kind.QUESTION, title="q"), "k1")
    other = hub.tickets._ask_item(AGENT, TicketDraft(kind=Kind.QUESTION, title="r"), "k1")
    first, again, different = writer.write([same, same, other])
    assert isinstance(first, Asked) and first.created
    assert isinstance(again, Asked) and not again.created and again.ticket == first.ticket
    assert isinstance(different, IdempotencyKeyReused)
    # And in a later batch, as before.
    [later] = writer.write([same])
    assert isinstance(later, Asked) and not later.created
    assert later.ticket.id == first.ticket.id


def test_an_outside_message_twice_in_one_batch_is_stored_once(hub: HubRuntime):
    ticket, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="q"))
    writer, notifier = _writer(hub)
    post = Post(ALICE, ticket.id, "from mail", "email", external_id="<m1@x>")
    one, two = writer.write([post, post])
    assert isinstance(one, Message) and one == two
    assert [m.id for m in hub.tickets.messages(ticket.id)] == [one.id]
    # Only a message: its ticket's waiters are woken to read back, no new state.
    assert notifier.calls[-1][1:] == ([], [ticket.id])


def test_an_answer_not_allowed_to_its_actor_is_refused_in_place(hub: HubRuntime):
    approval, _ = hub.tickets.ask(ALICE, TicketDraft(kind=Kind.APPROVAL, title="mine",
                                                     proposal={"x": 1}))
    writer, _ = _writer(hub)
    [own] = writer.write([hub.tickets._deny_item(ALICE, approval.id, "no", "api", None)])
    assert isinstance(own, Forbidden)
    assert hub.tickets.get(approval.id).status is Status.OPEN


async def test_concurrent_grouped_answers_share_commits_and_each_gets_its_own_result(
        hub: HubRuntime):
    hub.bus.bind(asyncio.get_running_loop())
    tickets = [hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title=f"q{i}"))[0]
               for i in range(40)]
    commits = 0
    write = hub.tickets._writer.write

    def counting(items: Any) -> Any:
        nonlocal commits
        commits += 1
        return write(items)

    hub.tickets._grouped._commit = counting
    results = await asyncio.gather(
        *(hub.tickets.aanswer(ALICE, t.id, f"answer {t.id}", None, "api") for t in tickets),
        hub.tickets.aanswer(ALICE, 999_999, "nobody", None, "api"),
        return_exceptions=True)
    *answered, unknown = results
    assert isinstance(unknown, NotFound)
    assert all(isinstance(r, Ticket) and r.answer is not None
               and r.answer.text == f"answer {r.id}" for r in answered)
    assert commits < len(tickets)  # grouped, not one transaction each
    for t in tickets:
        assert hub.tickets.get(t.id).status is Status.ANSWERED


def test_deadlines_expire_many_tickets_with_one_statement_each_and_one_wakeup(
        tmp_path: Path, database_url: str):
    clock = FakeClock()
    hub = HubRuntime(Settings(data_dir=tmp_path, database_url=database_url), clock=clock)
    notifier = _Counting()
    hub.deadlines._notifier = notifier
    due = clock.now() + timedelta(minutes=1)
    asked = [hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title=f"q{i}",
                                                due_at=due))[0] for i in range(30)]
    deferred, _ = hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="later",
                                                     due_at=due))
    hub.tickets.transition(AGENT, deferred.id, Status.DEFERRED, "api",
                           until=clock.now() + timedelta(seconds=30))
    clock.advance(minutes=2)
    changed = hub.deadlines.run_due()
    # Deferred past its deadline: it expires (once), it does not come back.
    assert sorted(t.id for t in changed) == sorted([*(t.id for t in asked), deferred.id])
    assert all(t.status is Status.EXPIRED for t in changed)
    assert len(notifier.calls) == 1 and len(notifier.calls[0][1]) == 31
    assert all(hub.tickets.get(t.id).status is Status.EXPIRED for t in asked)
    assert hub.deadlines.run_due() == []
    hub.close()


def test_an_outage_fails_the_whole_batch_at_once(hub: HubRuntime) -> None:
    """With the database away, every item of the batch gets ``DatabaseUnavailable`` from
    one attempt: no item is retried alone (each would wait on the dead server too)."""
    attempts = []

    class _Away:
        def write(self) -> Any:
            attempts.append(1)
            raise DatabaseUnavailable("connection refused")

    writer = TicketWriter(_Away(), hub.clock, _Counting())  # type: ignore[arg-type]
    results = writer.write([Ask(AGENT, TicketDraft(kind=Kind.QUESTION, title=f"q{i}"))
                            for i in range(3)])
    assert attempts == [1]
    assert [type(r) for r in results] == [DatabaseUnavailable] * 3
