"""Deadlines at the service level, with a clock that only moves when told to."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketDraft
from tickethub.server.runtime import HubRuntime
from tickethub.services import deadlines
from tickethub.settings import Settings
from tickethub.testing import FakeClock, RecordingNotifier

AGENT = Actor("bot", Role.AGENT)


def test_a_hub_that_was_down_at_the_deadline_expires_the_ticket_on_start(
        tmp_path: Path, database_url: str):
    clock = FakeClock()
    settings = Settings(data_dir=tmp_path, database_url=database_url)
    first = HubRuntime(settings, clock=clock)
    approval, _ = first.tickets.ask(AGENT, TicketDraft(
        kind=Kind.APPROVAL, title="deploy", proposal={"v": 2},
        due_at=clock.now() + timedelta(minutes=5)))
    question, _ = first.tickets.ask(AGENT, TicketDraft(
        kind=Kind.QUESTION, title="later", due_at=clock.now() + timedelta(hours=5)))
    first.close()  # the hub goes down before the deadline

    clock.advance(minutes=6)
    second = HubRuntime(settings, clock=clock)
    expired = second.deadlines.run_due()  # what HubRuntime.running() does at start
    assert [t.id for t in expired] == [approval.id]
    stored = second.tickets.get(approval.id)
    assert stored.status is Status.EXPIRED and stored.outcome == "denied"
    assert second.tickets.get(question.id).status is Status.OPEN
    assert second.deadlines.next_deadline() == question.due_at
    assert second.deadlines.run_due() == []  # idempotent
    second.close()


def test_many_overdue_tickets_are_expired_in_batches(tmp_path: Path):
    clock = FakeClock()
    hub = HubRuntime(Settings(data_dir=tmp_path), clock=clock)
    for i in range(450):
        hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title=f"q{i}",
                                           due_at=clock.now() + timedelta(seconds=1 + i % 3)))
    clock.advance(seconds=10)
    assert len(hub.deadlines.run_due()) == 450
    assert hub.deadlines.next_deadline() is None
    hub.close()


def test_a_round_starts_with_a_small_transaction_then_whole_batches(
        tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch):
    """The first batch is small (its waiters wake while the rest expire); each batch is
    one transaction, notified once; every ticket expires exactly once."""
    monkeypatch.setattr(deadlines, "_FIRST_BATCH", 2)
    monkeypatch.setattr(deadlines, "_BATCH", 3)
    clock = FakeClock()
    hub = HubRuntime(Settings(data_dir=tmp_path, database_url=database_url), clock=clock)
    asked = [hub.tickets.ask(AGENT, TicketDraft(
        kind=Kind.QUESTION, title=f"q{i}", due_at=clock.now() + timedelta(seconds=1 + i)))[0]
        for i in range(7)]
    clock.advance(seconds=10)
    notifier = RecordingNotifier()
    service = deadlines.DeadlineService(hub.store, clock, notifier)
    expired = service.run_due()
    assert [t.id for t in expired] == [t.id for t in asked]  # earliest due first
    assert [len(ids) for _, ids in notifier.calls] == [2, 3, 2]
    assert {t.status for t in expired} == {Status.EXPIRED}
    assert all(hub.tickets.get(t.id).version == t.version == 2 for t in expired)
    assert service.run_due() == []
    hub.close()


def test_reopening_an_expired_ticket_drops_its_passed_deadline(tmp_path: Path):
    clock = FakeClock()
    hub = HubRuntime(Settings(data_dir=tmp_path), clock=clock)
    ticket, _ = hub.tickets.ask(AGENT, TicketDraft(
        kind=Kind.QUESTION, title="q", due_at=clock.now() + timedelta(minutes=1)))
    clock.advance(minutes=2)
    assert [t.id for t in hub.deadlines.run_due()] == [ticket.id]
    reopened = hub.tickets.transition(Actor("alice", Role.RESPONDER), ticket.id, Status.OPEN,
                                      "api")
    assert reopened.status is Status.OPEN and reopened.due_at is None
    assert hub.deadlines.run_due() == []
    assert hub.tickets.get(ticket.id).status is Status.OPEN
    hub.close()
