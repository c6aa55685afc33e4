"""The status transition table: every allowed move, and the typed refusal of the rest."""

import pytest

from tickethub.domain.status import (
    RESOLVED,
    TRANSITIONS,
    WAITING,
    Kind,
    Status,
    check_transition,
)
from tickethub.errors import IllegalTransition


def test_every_status_has_a_row_and_waiting_and_resolved_partition_them():
    assert set(TRANSITIONS) == set(Status)
    assert set(Status) == WAITING | RESOLVED
    assert not WAITING & RESOLVED


@pytest.mark.parametrize("resolved", sorted(RESOLVED))
def test_every_resolved_ticket_can_be_reopened(resolved):
    assert Status.OPEN in TRANSITIONS[resolved]


@pytest.mark.parametrize("current", sorted(RESOLVED))
def test_a_resolved_ticket_cannot_be_resolved_again(current):
    for target in (Status.ANSWERED, Status.EXPIRED, Status.CANCELLED):
        with pytest.raises(IllegalTransition) as err:
            check_transition(Kind.QUESTION, current, target)
        assert err.value.current == current.value
        assert err.value.target == target.value


def test_approvals_are_resolved_by_approve_or_deny_only():
    check_transition(Kind.APPROVAL, Status.OPEN, Status.APPROVED)
    check_transition(Kind.APPROVAL, Status.OPEN, Status.DENIED)
    with pytest.raises(IllegalTransition, match="approve or deny"):
        check_transition(Kind.APPROVAL, Status.OPEN, Status.ANSWERED)


@pytest.mark.parametrize("kind", [Kind.QUESTION, Kind.TASK, Kind.INFO])
def test_only_approvals_can_be_approved(kind):
    check_transition(kind, Status.OPEN, Status.ANSWERED)
    with pytest.raises(IllegalTransition, match="only approvals"):
        check_transition(kind, Status.IN_PROGRESS, Status.APPROVED)


def test_illegal_transition_problem_names_both_states():
    problem = IllegalTransition("done", "answered").to_problem()
    assert problem["status"] == 409
    assert problem["code"] == "illegal_transition"
    assert problem["current"] == "done" and problem["target"] == "answered"
    assert "'done'" in problem["detail"] and "'answered'" in problem["detail"]
