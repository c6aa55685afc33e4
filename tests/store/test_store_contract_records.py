"""The store contract, everything besides tickets: messages and their outside ids, the
event log (order, cursors, filters, the read rule), actors and tokens, deliveries and
channel cursors, webhooks; and the transactions themselves (rollback, batches, one
writer at a time). Each test runs on the in-memory store, SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.domain.events import EventType, NewEvent
from tickethub.domain.messages import Decision, MessageDraft, MessageKind
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft, TicketQuery

NOW = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)


class Rollback(Exception):
    """Raised inside a unit of work to roll it back."""


def _ticket(store: Any, by: str = "agent", parent_id: int | None = None) -> Any:
    with store.write() as uow:
        return uow.tickets.add(TicketDraft(Kind.TASK, "t", parent_id=parent_id), by, NOW)


def _event(ticket: Any, n: int = 0, type: EventType = EventType.MESSAGE_POSTED) -> NewEvent:
    return NewEvent(type, ticket.id, ticket.path, "agent", {"n": n, "nested": [n, None]})


def test_messages_keep_their_order_and_are_found_by_outside_id(store: Any) -> None:
    a, b = _ticket(store), _ticket(store)
    drafts = [MessageDraft(a.id, "agent", "api", "one", MessageKind.COMMENT, False),
              MessageDraft(b.id, "alice", "email", "two", MessageKind.COMMENT, True,
                           external_id="<m2@example.org>", data={"n": [1, 2]}),
              MessageDraft(a.id, "bob", "chat", "three", MessageKind.COMMENT, True),
              MessageDraft(b.id, "carol", "web", "", MessageKind.ANSWER, True,
                           data={"ok": 1}, decision=Decision.EDITED)]
    with store.write() as uow:
        added = uow.messages.add_many(drafts, NOW)
        single = uow.messages.add(a.id, "dave", "github", "four", MessageKind.SYSTEM, True,
                                  NOW, external_id="c-1")
    assert [m.body for m in added] == ["one", "two", "three", ""]
    assert [m.decision for m in added] == [None, None, None, Decision.EDITED]
    ids = [m.id for m in [*added, single]]
    assert ids == sorted(ids) and len(set(ids)) == 5
    with store.read() as uow:
        assert uow.messages.for_ticket(a.id) == [added[0], added[2], single]
        assert uow.messages.for_ticket(b.id) == [added[1], added[3]]
        assert uow.messages.find_external("email", "<m2@example.org>") == added[1]
        assert uow.messages.find_external("github", "c-1") == single
        assert uow.messages.find_external("chat", "c-1") is None  # per channel
        assert uow.messages.for_ticket(10_000) == []
    assert single.created_at == NOW


def test_an_outside_id_is_stored_once_per_channel(store: Any) -> None:
    ticket = _ticket(store)
    with store.write() as uow:
        uow.messages.add(ticket.id, "a", "email", "x", MessageKind.COMMENT, True, NOW,
                         external_id="<1@x>")
        uow.messages.add(ticket.id, "a", "chat", "x", MessageKind.COMMENT, True, NOW,
                         external_id="<1@x>")
    with pytest.raises(Exception), store.write() as uow:  # noqa: B017 (each store its own)
        uow.messages.add(ticket.id, "a", "email", "again", MessageKind.COMMENT, True, NOW,
                         external_id="<1@x>")
    with store.read() as uow:
        assert [m.body for m in uow.messages.for_ticket(ticket.id)] == ["x", "x"]


def test_event_seqs_ascend_in_append_order_and_resume_from_a_cursor(store: Any) -> None:
    ticket = _ticket(store)
    with store.read() as uow:
        assert uow.events.last_seq() == 0
        assert uow.events.since(0, limit=10) == []
    with store.write() as uow:
        appended = uow.events.append_many([_event(ticket, n) for n in range(5)], NOW)
        one = uow.events.append(_event(ticket, 5), NOW)
    seqs = [e.seq for e in [*appended, one]]
    assert seqs == list(range(seqs[0], seqs[0] + 6))
    with store.read() as uow:
        assert uow.events.last_seq() == one.seq
        assert uow.events.since(0, limit=100) == [*appended, one]
        assert uow.events.since(seqs[1], limit=2) == appended[2:4]
        assert uow.events.since(seqs[1], limit=100, until=seqs[3]) == appended[2:4]
        assert uow.events.since(one.seq, limit=100) == []
    assert appended[0].data == {"n": 0, "nested": [0, None]} and appended[0].at == NOW


def test_events_filter_by_ticket_by_subtree_and_by_reader(store: Any) -> None:
    root = _ticket(store, "agent")
    child = _ticket(store, "other", parent_id=root.id)
    stranger = _ticket(store, "other")
    with store.write() as uow:
        uow.events.append_many([_event(root, 1), _event(child, 2), _event(stranger, 3),
                                _event(child, 4)], NOW)

    def ns(**filters: Any) -> list[int]:
        with store.read() as uow:
            return [e.data["n"] for e in uow.events.since(0, limit=100, **filters)]

    assert ns() == [1, 2, 3, 4]
    assert ns(ticket_id=child.id) == [2, 4]
    assert ns(path_prefix=root.path) == [1, 2, 4]
    assert ns(reader="agent") == [1, 2, 4]
    assert ns(reader="other") == [2, 3, 4]
    assert ns(reader="nobody") == []


def test_ticket_seqs_name_the_changed_tickets_in_a_range_oldest_first(store: Any) -> None:
    a, b = _ticket(store), _ticket(store)
    with store.write() as uow:
        written = uow.events.append_many(
            [_event(a, 1), _event(b, 2), _event(a, 3), _event(b, 4)], NOW)
    seqs = [e.seq for e in written]
    with store.read() as uow:
        assert uow.events.ticket_seqs(0, seqs[-1], 100) == [
            (seqs[0], a.id), (seqs[1], b.id), (seqs[2], a.id), (seqs[3], b.id)]
        # after ``after``, up to and with ``until``, at most ``limit``
        assert uow.events.ticket_seqs(seqs[0], seqs[2], 100) == [
            (seqs[1], b.id), (seqs[2], a.id)]
        assert uow.events.ticket_seqs(0, seqs[-1], 2) == [(seqs[0], a.id), (seqs[1], b.id)]
        assert uow.events.ticket_seqs(seqs[-1], seqs[-1] + 10, 100) == []


def test_a_rolled_back_append_leaves_no_gap_a_reader_could_skip(store: Any) -> None:
    ticket = _ticket(store)
    with store.write() as uow:
        first = uow.events.append(_event(ticket, 1), NOW)
    with pytest.raises(Rollback), store.write() as uow:
        uow.events.append(_event(ticket, 2), NOW)
        raise Rollback
    with store.write() as uow:
        third = uow.events.append(_event(ticket, 3), NOW)
    with store.read() as uow:
        assert uow.events.since(first.seq, limit=10) == [third]
        assert uow.events.last_seq() == third.seq > first.seq


def test_concurrent_writers_commit_events_in_seq_order(store: Any) -> None:
    """Eight threads append at once; every seq is taken once and a reader that resumes
    from any seq it saw misses none (commit order is seq order)."""
    ticket = _ticket(store)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(5):
                with store.write() as uow:
                    uow.events.append_many([_event(ticket, n * 100 + i)] * 2, NOW)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    with store.read() as uow:
        log = uow.events.since(0, limit=1000)
    seqs = [e.seq for e in log]
    assert len(seqs) == 80 and seqs == sorted(set(seqs))
    pairs = [(log[i].data["n"], log[i + 1].data["n"]) for i in range(0, 80, 2)]
    assert all(a == b for a, b in pairs)  # each transaction's two events are adjacent


def test_actors_and_tokens(store: Any) -> None:
    with store.read() as uow:
        assert uow.actors.get("alice") is None and uow.actors.count_admins() == 0
    with store.write() as uow:
        alice = uow.actors.add(Actor("alice", Role.RESPONDER, ActorKind.PERSON), NOW)
        root = uow.actors.add(Actor("root", Role.ADMIN), NOW)
        first = uow.actors.add_token(alice, "laptop", "h" * 64, "th_abc", NOW,
                                     frozenset({"read:all"}))
        second = uow.actors.add_token(root, "ci", "g" * 64, "th_def", NOW)
    assert alice.id is not None and root.id is not None and alice.id != root.id
    assert second.id > first.id
    with store.read() as uow:
        assert uow.actors.get("alice") == alice
        assert uow.actors.count_admins() == 1
        found = uow.actors.by_token_hash("h" * 64)
        assert found is not None and found.name == "alice"
        assert found.scopes == frozenset({"read:all"}) and found.role is Role.RESPONDER
        assert uow.actors.by_token_hash("x" * 64) is None
        tokens = uow.actors.tokens()
    assert [(t.id, t.actor.name, t.name, t.prefix, t.revoked_at, t.scopes) for t in tokens] == [
        (first.id, "alice", "laptop", "th_abc", None, frozenset({"read:all"})),
        (second.id, "root", "ci", "th_def", None, frozenset())]
    with store.write() as uow:
        assert uow.actors.revoke_token(first.id, NOW)
        assert not uow.actors.revoke_token(first.id, NOW)  # once
        assert not uow.actors.revoke_token(10_000, NOW)
    with store.read() as uow:
        assert uow.actors.by_token_hash("h" * 64) is None
        assert uow.actors.tokens()[0].revoked_at == NOW
    with pytest.raises(Exception), store.write() as uow:  # noqa: B017 (each store its own)
        uow.actors.add(Actor("alice", Role.AGENT), NOW)  # names are unique
    with store.read() as uow:
        assert uow.actors.get("alice") == alice


def test_deliveries_are_queued_once_per_key_retried_and_listed(store: Any) -> None:
    later = NOW + timedelta(minutes=5)
    with store.write() as uow:
        assert uow.deliveries.enqueue("github", "o/r#1", 7, "k1", NOW)
        assert not uow.deliveries.enqueue("github", "o/r#1", 7, "k1", NOW)  # same key
        assert uow.deliveries.enqueue("github", "o/r#2", 8, "k2", later)
        assert uow.deliveries.enqueue("email", "a@x", 8, "k3", NOW)
    with store.write() as uow:
        due = uow.deliveries.claim("github", NOW, 10, None)
        assert [(d.target, d.event_seq, d.status, d.attempts) for d in due] == [
            ("o/r#1", 7, "pending", 0)]
        first = due[0]
        uow.deliveries.mark_failed(first.id, "boom " * 1000, later)
    with store.read() as uow:
        failed = uow.deliveries.get(first.id)
        assert failed.attempts == 1 and failed.next_attempt_at == later
        assert failed.last_error == ("boom " * 1000)[:2000] and failed.status == "pending"
        assert uow.deliveries.claim("github", NOW, 10, None) == []
        assert [d.target for d in uow.deliveries.claim("github", later, 10, None)] == ["o/r#1",
                                                                               "o/r#2"]
        assert len(uow.deliveries.claim("github", later, 1, None)) == 1
    with store.write() as uow:
        uow.deliveries.mark_delivered(first.id, later)
        email = uow.deliveries.claim("email", NOW, 10, None)[0]
        uow.deliveries.mark_failed(email.id, "gone", None)
    with store.read() as uow:
        done, dead = uow.deliveries.get(first.id), uow.deliveries.get(email.id)
        assert (done.status, done.attempts, done.last_error) == ("delivered", 2, None)
        assert (dead.status, dead.attempts, dead.last_error) == ("dead", 1, "gone")
        assert uow.deliveries.get(10_000) is None
        assert [d.idempotency_key for d in uow.deliveries.list(None, None, 10)] == [
            "k3", "k2", "k1"]
        assert [d.idempotency_key for d in uow.deliveries.list("github", None, 1)] == ["k2"]
        assert [d.idempotency_key for d in uow.deliveries.list(None, "dead", 10)] == ["k3"]


def test_a_claimed_delivery_is_not_due_again_until_its_claim_runs_out(store: Any) -> None:
    lease = NOW + timedelta(minutes=1)
    with store.write() as uow:
        uow.deliveries.enqueue("github", "o/r#1", 7, "k1", NOW)
        uow.deliveries.enqueue("github", "o/r#2", 8, "k2", NOW)
    with store.write() as uow:
        [claimed] = uow.deliveries.claim("github", NOW, 1, lease)
        assert claimed.target == "o/r#1"  # oldest first
    with store.write() as uow:
        assert [d.target for d in uow.deliveries.claim("github", NOW, 10, lease)] == ["o/r#2"]
    with store.read() as uow:
        assert uow.deliveries.claim("github", NOW, 10, None) == []
        assert uow.deliveries.get(claimed.id).attempts == 0  # a claim is not an attempt
        assert [d.target for d in uow.deliveries.claim("github", lease, 10, None)] == [
            "o/r#1", "o/r#2"]  # the process that claimed them died: tried again


def test_channel_cursors_survive_and_move(store: Any) -> None:
    with store.write() as uow:
        assert uow.deliveries.cursor("github") is None
        uow.deliveries.set_cursor("github", 5)
        uow.deliveries.set_cursor("email", 2)
    with store.write() as uow:
        uow.deliveries.set_cursor("github", 9)
    with pytest.raises(Rollback), store.write() as uow:
        uow.deliveries.set_cursor("github", 50)
        raise Rollback
    with store.read() as uow:
        assert uow.deliveries.cursor("github") == 9
        assert uow.deliveries.cursor("email") == 2


def test_webhooks_are_added_listed_and_deleted_softly(store: Any) -> None:
    with store.write() as uow:
        one = uow.webhooks.add("https://a.example/h", "s1", ("ticket.created",), "root", NOW)
        two = uow.webhooks.add("https://b.example/h", "s2", (), "root", NOW)
    assert two.id > one.id and one.active and one.event_types == ("ticket.created",)
    with store.write() as uow:
        assert uow.webhooks.delete(one.id)
        assert not uow.webhooks.delete(one.id)
        assert not uow.webhooks.delete(10_000)
    with store.read() as uow:
        assert uow.webhooks.list() == [two]
        gone = uow.webhooks.get(one.id)
        assert gone is not None and not gone.active and gone.url == "https://a.example/h"
        assert uow.webhooks.get(10_000) is None


def test_a_batch_is_one_transaction_of_savepoints(store: Any) -> None:
    """Inside ``batch()`` a write that fails changes nothing and the others stay; reads
    see the batch's writes; everything is committed at the end."""
    with store.batch():
        with store.write() as uow:
            kept = uow.tickets.add(TicketDraft(Kind.TASK, "kept"), "agent", NOW)
        with pytest.raises(Rollback), store.write() as uow:
            uow.tickets.add(TicketDraft(Kind.TASK, "dropped"), "agent", NOW)
            raise Rollback
        with store.read() as uow:
            assert [t.title for t in uow.tickets.list(TicketQuery())] == ["kept"]
        with store.batch(), store.write() as uow:  # a nested batch joins
            uow.events.append(_event(kept), NOW)
    with store.read() as uow:
        assert [t.title for t in uow.tickets.list(TicketQuery())] == ["kept"]
        assert [e.ticket_id for e in uow.events.since(0, limit=10)] == [kept.id]


def test_a_failed_batch_stores_nothing(store: Any) -> None:
    with pytest.raises(Rollback), store.batch():
        with store.write() as uow:
            uow.tickets.add(TicketDraft(Kind.TASK, "a"), "agent", NOW)
        raise Rollback
    with store.read() as uow:
        assert uow.tickets.count() == 0


def test_other_threads_do_not_see_an_open_transaction(store: Any) -> None:
    """A reader on another thread either reads past the open write (SQL: the state
    before it) or waits for its commit (memory: one lock); never what is uncommitted."""
    inside, read = threading.Event(), threading.Event()
    seen: list[int] = []

    def reader() -> None:
        inside.wait(10)
        with store.read() as uow:
            seen.append(uow.tickets.count())
        read.set()

    thread = threading.Thread(target=reader)
    thread.start()
    with store.write() as uow:
        uow.tickets.add(TicketDraft(Kind.TASK, "a"), "agent", NOW)
        inside.set()
        read_inside = read.wait(0.5)  # the reader finished while this was still open
    thread.join(10)
    assert seen == ([0] if read_inside else [1])
    with store.read() as uow:
        assert uow.tickets.count() == 1
