"""The services on each store: the write path (``TicketWriter`` behind
``TicketService``), deadlines, the event log with its cursors, tokens and the delivery
queue behave the same on the in-memory store as on SQLite and PostgreSQL, so a test of a
service may run on the fake."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from tickethub.domain.actors import Actor, Role
from tickethub.domain.events import EventType
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketDraft
from tickethub.errors import CursorAhead, IdempotencyKeyReused, NotFound, StaleVersion
from tickethub.services.auth import AuthService
from tickethub.services.deadlines import DeadlineService
from tickethub.services.deliveries import DeliveryService
from tickethub.services.events import EventService
from tickethub.services.ticket_writes import Ask, Post, TicketWriter
from tickethub.services.tickets import TicketService
from tickethub.testing import CountingTokens, FakeClock, RecordingNotifier

AGENT = Actor("bot", Role.AGENT)
OTHER = Actor("other-bot", Role.AGENT)
ALICE = Actor("alice", Role.RESPONDER)


class Services:
    def __init__(self, store: Any) -> None:
        self.clock = FakeClock()
        self.notifier = RecordingNotifier()
        self.tickets = TicketService(store, self.clock, self.notifier)
        self.events = EventService(store)
        self.deadlines = DeadlineService(store, self.clock, self.notifier)
        self.deliveries = DeliveryService(store, self.clock, max_attempts=2,
                                          backoff_seconds=1, backoff_max_seconds=5)
        self.auth = AuthService(store, self.clock, CountingTokens())
        self.writer = TicketWriter(store, self.clock, self.notifier)


@pytest.fixture
def hub(store: Any) -> Services:
    return Services(store)


def test_ask_answer_and_read_back(hub: Services) -> None:
    ticket, created = hub.tickets.ask(AGENT, TicketDraft(Kind.QUESTION, "deploy?",
                                                         labels=("Ops",)))
    assert created and ticket.status is Status.OPEN and ticket.labels == ("ops",)
    hub.tickets.post_message(AGENT, ticket.id, "more context", "api")
    answered = hub.tickets.answer(ALICE, ticket.id, "yes", None, "web")
    assert answered.status is Status.ANSWERED and answered.answer.text == "yes"
    assert hub.tickets.get(ticket.id) == answered
    assert [m.body for m in hub.tickets.messages(ticket.id)] == ["more context", "yes"]
    types = [e.type for e in hub.events.since(0)]
    assert types == [EventType.TICKET_CREATED, EventType.MESSAGE_POSTED,
                     EventType.TICKET_ANSWERED]
    assert hub.notifier.calls[-1][1] == [ticket.id]


def test_idempotent_asks_replay_and_a_changed_request_is_refused(hub: Services) -> None:
    draft = TicketDraft(Kind.QUESTION, "once")
    first, created = hub.tickets.ask(AGENT, draft, "key-1")
    again, created_again = hub.tickets.ask(AGENT, draft, "key-1")
    assert created and not created_again and again == first
    with pytest.raises(IdempotencyKeyReused):
        hub.tickets.ask(AGENT, TicketDraft(Kind.QUESTION, "different"), "key-1")
    other, other_created = hub.tickets.ask(OTHER, draft, "key-1")  # per asker
    assert other_created and other.id != first.id


def test_a_stale_version_and_an_unknown_ticket_are_refused(hub: Services) -> None:
    ticket, _ = hub.tickets.ask(AGENT, TicketDraft(Kind.QUESTION, "q"))
    with pytest.raises(StaleVersion):
        hub.tickets.answer(ALICE, ticket.id, "yes", None, "web",
                           expected_version=ticket.version + 1)
    with pytest.raises(NotFound):
        hub.tickets.answer(ALICE, 999_999, "yes", None, "web")
    assert hub.tickets.get(ticket.id).status is Status.OPEN


def test_a_batch_writes_every_item_or_reports_each_failure(hub: Services) -> None:
    parent, _ = hub.tickets.ask(AGENT, TicketDraft(Kind.TASK, "parent"))
    results = hub.writer.write([
        Ask(AGENT, TicketDraft(Kind.QUESTION, "child", parent_id=parent.id)),
        Post(AGENT, parent.id, "note", "api"),
        Post(AGENT, 999_999, "nowhere", "api"),
        Ask(AGENT, TicketDraft(Kind.QUESTION, "orphan", parent_id=999_999)),
    ])
    assert results[0].ticket.parent_id == parent.id
    assert results[1].body == "note"
    assert isinstance(results[2], NotFound) and isinstance(results[3], NotFound)
    assert [t.title for t in hub.tickets.subtree(parent.id, 3)] == ["parent", "child"]


async def test_group_committed_answers(hub: Services) -> None:
    asked = [hub.tickets.ask(AGENT, TicketDraft(Kind.QUESTION, f"q{i}"))[0]
             for i in range(10)]
    answered = await asyncio.gather(*(hub.tickets.aanswer(ALICE, t.id, f"a{t.id}", None,
                                                          "api") for t in asked))
    assert [t.answer.text for t in answered] == [f"a{t.id}" for t in asked]
    assert all(hub.tickets.get(t.id).status is Status.ANSWERED for t in asked)


def test_deadlines_expire_once_and_the_next_one_is_known(hub: Services) -> None:
    soon = hub.clock.now() + timedelta(minutes=1)
    later = hub.clock.now() + timedelta(hours=1)
    due = [hub.tickets.ask(AGENT, TicketDraft(Kind.APPROVAL, f"a{i}", proposal={"n": i},
                                              due_at=soon))[0] for i in range(3)]
    waiting, _ = hub.tickets.ask(AGENT, TicketDraft(Kind.QUESTION, "w", due_at=later))
    assert hub.deadlines.next_deadline() == soon
    hub.clock.advance(minutes=2)
    expired = hub.deadlines.run_due()
    assert sorted(t.id for t in expired) == [t.id for t in due]
    assert all(hub.tickets.get(t.id).outcome == "denied" for t in due)
    assert hub.deadlines.run_due() == []
    assert hub.deadlines.next_deadline() == later == waiting.due_at


def test_the_event_cursor_resumes_and_a_cursor_ahead_is_refused(hub: Services) -> None:
    mine, _ = hub.tickets.ask(AGENT, TicketDraft(Kind.TASK, "mine"))
    hub.tickets.ask(OTHER, TicketDraft(Kind.TASK, "theirs"))
    everything = hub.events.since(0)
    assert [e.ticket_id for e in hub.events.since(0, viewer=AGENT)] == [mine.id]
    assert hub.events.since(everything[0].seq) == everything[1:]
    with pytest.raises(CursorAhead):
        hub.events.since(everything[-1].seq + 5)


def test_tokens_authenticate_until_revoked(hub: Services) -> None:
    admin_token = hub.auth.bootstrap_admin(None)
    assert admin_token is not None
    admin = hub.auth.authenticate(admin_token)
    assert admin.role is Role.ADMIN
    token, record = hub.auth.create_token(admin, "helper", Role.AGENT)
    assert hub.auth.authenticate(token).name == "helper"
    hub.auth.revoke(admin, record.id)
    with pytest.raises(Exception):  # noqa: B017 (Unauthorized)
        hub.auth.authenticate(token)


def test_deliveries_start_at_the_end_of_the_log_and_retry_then_die(hub: Services) -> None:
    hub.tickets.ask(AGENT, TicketDraft(Kind.TASK, "before the channel"))
    assert hub.deliveries.enqueue_new("hooks", lambda e: ["t"]) == 0  # starts at the end
    new, _ = hub.tickets.ask(AGENT, TicketDraft(Kind.TASK, "after"))
    assert hub.deliveries.enqueue_new("hooks", lambda e: ["t"]) == 1
    assert hub.deliveries.enqueue_new("hooks", lambda e: ["t"]) == 0  # once
    [(delivery, event)] = hub.deliveries.due("hooks")
    assert event.ticket_id == new.id
    assert hub.deliveries.failed(delivery, "down")  # retried later
    assert hub.deliveries.due("hooks") == []
    hub.clock.advance(seconds=10)
    [(again, _)] = hub.deliveries.due("hooks")
    assert not hub.deliveries.failed(again, "still down")  # the second attempt: dead
    assert [d.status for d in hub.deliveries.list("hooks")] == ["dead"]
