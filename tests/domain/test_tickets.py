from datetime import UTC, datetime

from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket, normalize_labels

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
