"""Tickets: one unit of work or one question, in a tree."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, NamedTuple

from tickethub.domain.status import Kind, Status, check_transition, is_waiting

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Answer:
    """What resolved a ticket: free text plus structured data, who gave it and through where."""

    text: str | None
    data: Any
    by: str
    via: str
    at: datetime


@dataclass(frozen=True, slots=True)
class Ticket:
    """A ticket as stored. ``path`` is the materialized ancestry, ``/1/5/9/`` for ticket 9."""

    id: int
    kind: Kind
    title: str
    body: str
    status: Status
    created_by: str
    created_at: datetime
    updated_at: datetime
    version: int = 1
    parent_id: int | None = None
    path: str = ""
    assignee: str | None = None
    labels: tuple[str, ...] = ()
    due_at: datetime | None = None
    next_attention_at: datetime | None = None
    answer: Answer | None = None
    response_schema: JSON | None = None
    proposal: Any = None
    refs: JSON = field(default_factory=dict)

    @property
    def waiting(self) -> bool:
        return is_waiting(self.status)

    @property
    def approved(self) -> bool:
        """True only for an approval a person approved (an expired one is denied)."""
        return self.outcome == Status.APPROVED.value

    @property
    def denied(self) -> bool:
        """True for a denied approval, including one that expired unanswered."""
        return self.outcome == Status.DENIED.value

    @property
    def outcome(self) -> str | None:
        """The typed result an agent acts on; ``None`` while the ticket is waiting.

        An approval that expired is ``denied``: approvals fail closed.
        """
        return outcome_of(self.kind, self.status)

    def moved_to(self, target: Status, at: datetime, **fields: Any) -> Ticket:
        """This ticket in ``target`` status, with ``fields`` replaced too (one copy, not
        two: an answer's is on the hot path); raises ``IllegalTransition`` when not
        allowed."""
        check_transition(self.kind, self.status, target)
        return replace(self, status=target, updated_at=at, version=self.version + 1,
                       **fields)

    def changed(self, at: datetime, **fields: Any) -> Ticket:
        """This ticket with ``fields`` replaced, its version bumped."""
        return replace(self, updated_at=at, version=self.version + 1, **fields)


class Overdue(NamedTuple):
    """A ticket past its ``due_at`` as it was stored before it expired: what the expiry
    needs for its event and its wakeup, without reading the whole ticket. (A named
    tuple, as ``Moved``: a deadline round makes thousands.)"""

    id: int
    path: str
    kind: Kind
    status: Status
    due_at: datetime
    version: int


class Moved(NamedTuple):
    """A ticket's change of status and of nothing else: to ``status`` at ``at``, its
    version from ``version - 1`` to ``version`` (a deadline's expiry). Handed to the
    ticket's waiters instead of the whole new state: a waiter that holds the ticket at
    the version before gets the new state with ``applied_to``, without a read (the
    version says nothing else changed in between)."""

    id: int
    status: Status
    at: datetime
    version: int

    def follows(self, known: Ticket) -> bool:
        """Whether ``known`` is the state just before this change (else: read back)."""
        return known.id == self.id and known.version == self.version - 1

    def applied_to(self, known: Ticket) -> Ticket | None:
        """``known`` after this change; ``None`` when ``known`` is not the state just
        before it (read the ticket back)."""
        if not self.follows(known):
            return None
        return replace(known, status=self.status, updated_at=self.at, version=self.version)


def outcome_of(kind: Kind, status: Status) -> str | None:
    """:attr:`Ticket.outcome` of a ticket of ``kind`` in ``status``."""
    if is_waiting(status):
        return None
    if status is Status.EXPIRED and kind is Kind.APPROVAL:
        return Status.DENIED.value
    return status.value


def state_after(change: Ticket | Moved | None, known: Ticket) -> Ticket | None:
    """What a ticket's waiter was woken with, as a whole state: the new ``Ticket``,
    ``known`` with a ``Moved`` applied, or ``None`` (read the ticket back)."""
    if isinstance(change, Moved):
        return change.applied_to(known)
    return change


def normalize_labels(labels: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Labels are trimmed, lower-cased, unique and sorted, so filters match predictably."""
    return tuple(sorted({label.strip().lower() for label in labels if label.strip()}))


@dataclass(frozen=True, slots=True)
class TicketDraft:
    """What an asker supplies for a new ticket; the store gives it an id and a path."""

    kind: Kind
    title: str
    body: str = ""
    parent_id: int | None = None
    assignee: str | None = None
    labels: tuple[str, ...] = ()
    due_at: datetime | None = None
    response_schema: JSON | None = None
    proposal: Any = None
    refs: JSON = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TicketQuery:
    """Filters for listing tickets, newest first, ``after`` being the last id seen."""

    status: tuple[Status, ...] = ()
    kind: Kind | None = None
    label: str | None = None
    assignee: str | None = None
    parent_id: int | None = None
    created_by: str | None = None
    q: str | None = None
    ref: tuple[str, str] | None = None
    after: int | None = None
    limit: int = 50
    # Only tickets this name reads (``domain.visibility``); ``None``: no such filter.
    readable_by: str | None = None
