"""The one status transition table of a ticket.

A ticket waits (``open``, ``in_progress``, ``deferred``) until it is resolved
(``answered``, ``approved``, ``denied``, ``done``, ``cancelled``, ``expired``); a
resolved ticket may be reopened. Approvals resolve by ``approved``/``denied``, never by
``answered``; other kinds never by ``approved``/``denied``. Anything else raises
:class:`~tickethub.errors.IllegalTransition`: nothing is ever silently overwritten.
"""

from __future__ import annotations

from enum import StrEnum

from tickethub.errors import IllegalTransition


class Kind(StrEnum):
    QUESTION = "question"
    APPROVAL = "approval"
    TASK = "task"
    INFO = "info"


class Status(StrEnum):
    OPEN = "open"
    IN_PROGRESS = "in_progress"
    DEFERRED = "deferred"
    ANSWERED = "answered"
    APPROVED = "approved"
    DENIED = "denied"
    DONE = "done"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


WAITING: frozenset[Status] = frozenset({Status.OPEN, Status.IN_PROGRESS, Status.DEFERRED})
RESOLVED: frozenset[Status] = frozenset(set(Status) - WAITING)

_FROM_WAITING = frozenset(
    {
        Status.OPEN,
        Status.IN_PROGRESS,
        Status.DEFERRED,
        Status.ANSWERED,
        Status.APPROVED,
        Status.DENIED,
        Status.DONE,
        Status.CANCELLED,
        Status.EXPIRED,
    }
)

TRANSITIONS: dict[Status, frozenset[Status]] = {
    Status.OPEN: _FROM_WAITING - {Status.OPEN},
    Status.IN_PROGRESS: _FROM_WAITING - {Status.IN_PROGRESS},
    Status.DEFERRED: _FROM_WAITING - {Status.DEFERRED},
    # An answer or an approval can still be closed as done by whoever asked.
    Status.ANSWERED: frozenset({Status.DONE, Status.OPEN}),
    Status.APPROVED: frozenset({Status.DONE, Status.OPEN}),
    Status.DENIED: frozenset({Status.OPEN}),
    Status.DONE: frozenset({Status.OPEN}),
    Status.CANCELLED: frozenset({Status.OPEN}),
    Status.EXPIRED: frozenset({Status.OPEN}),
}

_APPROVAL_ONLY = frozenset({Status.APPROVED, Status.DENIED})


def check_transition(kind: Kind, current: Status, target: Status) -> None:
    """Raise :class:`IllegalTransition` unless ``current → target`` is allowed for ``kind``."""
    if target not in TRANSITIONS[current]:
        raise IllegalTransition(current.value, target.value)
    if kind is Kind.APPROVAL and target is Status.ANSWERED:
        raise IllegalTransition(
            current.value, target.value, "an approval is resolved by approve or deny, not answer"
        )
    if kind is not Kind.APPROVAL and target in _APPROVAL_ONLY:
        raise IllegalTransition(
            current.value, target.value, f"only approvals can be {target.value}, not a {kind.value}"
        )


def is_waiting(status: Status) -> bool:
    """True while an agent waiting on the ticket should keep waiting."""
    return status in WAITING
