"""Deadlines: tickets past ``due_at`` expire; deferred tickets come back at their time.

An expired approval resolves as denied (fail-closed). Called by the server's deadline
loop, and once at start so a hub that was down at a deadline catches up.
"""

from __future__ import annotations

import builtins
from dataclasses import replace
from datetime import datetime

from tickethub.domain.actors import SYSTEM
from tickethub.domain.events import EventType, NewEvent
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Moved, Ticket
from tickethub.services.ports import Clock, Notifier, Store

_BATCH = 1000  # tickets per transaction
# The first transaction of a round is smaller: its waiters are woken (and their
# responses sent) while the rest expire, instead of after a whole batch.
_FIRST_BATCH = 200
_EXPIRED = Status.EXPIRED.value
_DENIED = Status.DENIED.value  # an expired approval's outcome: approvals fail closed


class DeadlineService:
    def __init__(self, store: Store, clock: Clock, notifier: Notifier) -> None:
        self._store = store
        self._clock = clock
        self._notifier = notifier

    def run_due(self) -> builtins.list[Ticket | Moved]:
        """Expire every overdue ticket and un-defer every elapsed deferral; return the
        changes (an expiry as a ``Moved``, a deferral's end as the whole ``Ticket``)."""
        changed: builtins.list[Ticket | Moved] = []
        limit = _FIRST_BATCH
        while True:
            batch = self._run_batch(limit)
            changed.extend(batch)
            if len(batch) < limit:
                return changed
            limit = _BATCH

    def next_deadline(self) -> datetime | None:
        """The earliest ``due_at`` or deferral end among waiting tickets, if any."""
        with self._store.read() as uow:
            return uow.tickets.next_deadline()

    def _run_batch(self, limit: int) -> builtins.list[Ticket | Moved]:
        """One transaction: due tickets (up to ``limit``) expired with one ``UPDATE``
        (no whole ticket read: the waiters apply the ``Moved`` to the state they hold),
        elapsed deferrals reopened, their events in one ``INSERT``, everyone woken after
        commit."""
        now = self._clock.now()
        changed: builtins.list[Ticket | Moved] = []
        new_events: builtins.list[NewEvent] = []
        expired = Status.EXPIRED
        due_texts: dict[datetime, str] = {}  # a shared deadline is formatted once
        with self._store.write() as uow:
            for was in uow.tickets.expire_overdue(now, limit):
                changed.append(Moved(was.id, expired, now, was.version + 1))
                due = due_texts.get(was.due_at)
                if due is None:
                    due = due_texts[was.due_at] = was.due_at.isoformat()
                new_events.append(NewEvent(
                    EventType.TICKET_EXPIRED, was.id, was.path, SYSTEM.name,
                    {"from": was.status.value, "to": _EXPIRED,
                     "outcome": _DENIED if was.kind is Kind.APPROVAL else _EXPIRED,
                     "due_at": due}))
            reopened: builtins.list[tuple[Ticket, int]] = []
            for ticket in uow.tickets.defer_elapsed(now, limit - len(changed),
                                                    for_update=True):
                back = replace(ticket.moved_to(Status.OPEN, now), next_attention_at=None)
                reopened.append((back, ticket.version))
                changed.append(back)
                new_events.append(NewEvent(
                    EventType.TICKET_TRANSITIONED, ticket.id, ticket.path, SYSTEM.name,
                    {"from": "deferred", "to": "open", "reason": "deferral ended"}))
            if not changed:
                return []
            uow.tickets.update_many(reopened)
            written = uow.events.append_many(new_events, now)
        self._notifier.notify(written[-1].seq, changed)
        return changed
