from datetime import UTC, datetime, timedelta

from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Moved, Ticket, normalize_labels, state_after

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _ticket(kind: Kind, status: Status) -> Ticket:
    return Ticket(id=1, kind=kind, title="t", body="", status=status, created_by="a",
                  created_at=NOW, updated_at=NOW)


def test_an_expired_approval_is_denied_fail_closed():
    assert _ticket(Kind.APPROVAL, Status.EXPIRED).outcome == "denied"
    assert _ticket(Kind.QUESTION, Status.EXPIRED).outcome == "expired"


def test_waiting_tickets_have_no_outcome():
    for status in (Status.OPEN, Status.IN_PROGRESS, Status.DEFERRED):
        assert _ticket(Kind.QUESTION, status).outcome is None


def test_moving_bumps_the_version():
    moved = _ticket(Kind.QUESTION, Status.OPEN).moved_to(Status.IN_PROGRESS, NOW)
    assert moved.status is Status.IN_PROGRESS
    assert moved.version == 2


def test_labels_are_normalized():
    assert normalize_labels([" Ops", "ops", "Billing ", " "]) == ("billing", "ops")


def test_a_moved_status_applies_only_to_the_state_just_before_it():
    before = _ticket(Kind.APPROVAL, Status.OPEN)
    later = NOW + timedelta(minutes=1)
    moved = Moved(before.id, Status.EXPIRED, later, before.version + 1)
    assert moved.applied_to(before) == before.moved_to(Status.EXPIRED, later)
    assert state_after(moved, before) == before.moved_to(Status.EXPIRED, later)
    # A held state of another version (something else changed it): read it back.
    assert moved.applied_to(before.moved_to(Status.IN_PROGRESS, NOW)) is None
    assert Moved(2, Status.EXPIRED, later, 2).applied_to(before) is None  # another ticket
    assert state_after(None, before) is None
    assert state_after(before, before.moved_to(Status.IN_PROGRESS, NOW)) is before
