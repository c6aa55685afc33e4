"""``ticket_json`` (the hot paths' encoder) writes exactly what ``TicketOut`` would, and
``shared_ticket_json`` (one body for a write's requester and its woken waiters) too."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from tickethub.api.schemas import MovedJson, TicketOut, shared_ticket_json, ticket_json
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Answer, Moved, Ticket, outcome_of

AT = datetime(2026, 11, 24, 0, 12, 15, 656399, tzinfo=UTC)


def _ticket(**fields: object) -> Ticket:
    base: dict[str, object] = dict(
        id=5, parent_id=None, path="/5/", kind=Kind.QUESTION, title="Deploy?", body="",
        status=Status.OPEN, created_by="bot", assignee=None, labels=(), due_at=None,
        next_attention_at=None, answer=None, response_schema=None, proposal=None, refs={},
        created_at=AT, updated_at=AT, version=1)
    base.update(fields)
    return Ticket(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("ticket", [
    _ticket(),
    _ticket(id=9, parent_id=5, path="/5/9/", labels=("a", "deploy"), assignee="alice",
            due_at=AT + timedelta(hours=1), title="Ünïcode ✓ \"quoted\"\n",
            body="line\u2028sep", refs={"github": "o/r#1", "n": 3, "list": ["x", 1]}),
    _ticket(kind=Kind.APPROVAL, status=Status.APPROVED, version=3,
            response_schema={"type": "object", "properties": {"n": {"type": "number"}}},
            proposal={"n": 1.5, "nested": [None, True, {"k": "v"}]},
            answer=Answer("ok", {"n": 2.25}, "alice", "web", AT.replace(microsecond=0))),
    _ticket(status=Status.DEFERRED,
            next_attention_at=datetime(2026, 12, 1, 8, 0, tzinfo=timezone(timedelta(hours=2)))),
    _ticket(status=Status.ANSWERED, answer=Answer(None, {"big": 2**70, "f": 1e-7}, "a",
                                                  "api", AT)),
    _ticket(status=Status.EXPIRED, kind=Kind.APPROVAL, due_at=AT),
])
def test_ticket_json_is_the_models_json_byte_for_byte(ticket: Ticket) -> None:
    expected = TicketOut.of(ticket, "http://hub:8080").model_dump_json().encode()
    assert ticket_json(ticket, "http://hub:8080") == expected


def test_a_shared_body_is_the_same_bytes_encoded_once_per_state() -> None:
    answered = _ticket(status=Status.ANSWERED, version=2,
                       answer=Answer("go", None, "alice", "api", AT))
    first = shared_ticket_json(answered, "http://hub:8080")
    assert first == ticket_json(answered, "http://hub:8080")
    assert shared_ticket_json(answered, "http://hub:8080") is first  # the same state
    # An equal state read back is another object: encoded afresh, same bytes.
    again = replace(answered)
    assert shared_ticket_json(again, "http://hub:8080") is not first
    assert shared_ticket_json(again, "http://hub:8080") == first
    # Another base URL, another ticket state: their own bytes.
    assert shared_ticket_json(again, "http://other") == ticket_json(again, "http://other")
    later = replace(again, version=3, title="changed")
    assert shared_ticket_json(later, "http://hub:8080") == ticket_json(later,
                                                                       "http://hub:8080")


@pytest.mark.parametrize("before", [
    _ticket(due_at=AT),
    _ticket(kind=Kind.APPROVAL, due_at=AT + timedelta(hours=1), version=7,
            status=Status.IN_PROGRESS, proposal={"n": 1.5}, labels=("x",),
            title="a \x00 nul and \u2028", refs={"k": ["v", 1]}),
    _ticket(status=Status.DEFERRED, due_at=AT, next_attention_at=AT + timedelta(days=1)),
])
def test_a_prepared_moved_body_is_ticket_json_of_the_moved_state(before: Ticket) -> None:
    """The body a waiter prepares while it waits (``MovedJson``) is, once the ticket
    expires, byte for byte what ``ticket_json`` writes for the new state."""
    prepared = MovedJson.of(before, "http://hub:8080")
    assert prepared is not None
    for at in (AT + timedelta(minutes=1), AT.replace(microsecond=0) + timedelta(days=400)):
        after = Moved(before.id, Status.EXPIRED, at, before.version + 1).applied_to(before)
        assert after is not None
        assert prepared.render(after) == ticket_json(after, "http://hub:8080")
        # The waiter's hot path renders from the move alone, without the new Ticket
        # (an expired approval's outcome is "denied": fail closed).
        assert prepared.render_moved(Status.EXPIRED,
                                     outcome_of(before.kind, Status.EXPIRED), at,
                                     before.version + 1) == ticket_json(after,
                                                                        "http://hub:8080")


def test_a_ticket_json_cannot_encode_is_not_prepared() -> None:
    assert MovedJson.of(_ticket(due_at=AT, proposal={"big": 2**70}), "http://hub") is None
