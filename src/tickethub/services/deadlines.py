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
from tickethub.domain.status import Status
from tickethub.domain.tickets import Ticket
from tickethub.services.ports import Clock, Notifier, Store

_BATCH = 1000  # tickets per transaction
# The first transaction of a round is smaller: its waiters are woken (and their
# responses sent) while the rest expire, instead of after a whole batch.
_FIRST_BATCH = 200


class DeadlineService:
    def __init__(self, store: Store, clock: Clock, notifier: Notifier) -> None:
        self._store = store
        self._clock = clock
        self._notifier = notifier

    def run_due(self) -> builtins.list[Ticket]:
        """Expire every overdue ticket and un-defer every elapsed deferral; return them."""
        changed: builtins.list[Ticket] = []
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

    def _run_batch(self, limit: int) -> builtins.list[Ticket]:
        """One transaction: every due ticket (up to ``limit``) changed with one
        ``UPDATE``, their events in one ``INSERT``, everyone woken after commit."""
        now = self._clock.now()
        changes: builtins.list[tuple[Ticket, int]] = []
        new_events: builtins.list[NewEvent] = []
        with self._store.write() as uow:
            for ticket in uow.tickets.overdue(now, limit, for_update=True):
                expired = ticket.moved_to(Status.EXPIRED, now)
                changes.append((expired, ticket.version))
                new_events.append(NewEvent(
                    EventType.TICKET_EXPIRED, ticket.id, ticket.path, SYSTEM.name,
                    {"from": ticket.status.value, "to": "expired", "outcome": expired.outcome,
                     "due_at": ticket.due_at.isoformat() if ticket.due_at else None}))
            expiring = {ticket.id for ticket, _ in changes}
            for ticket in uow.tickets.defer_elapsed(now, limit - len(changes),
                                                    for_update=True):
                if ticket.id in expiring:  # deferred past its due_at: it expires
                    continue
                reopened = replace(ticket.moved_to(Status.OPEN, now), next_attention_at=None)
                changes.append((reopened, ticket.version))
                new_events.append(NewEvent(
                    EventType.TICKET_TRANSITIONED, ticket.id, ticket.path, SYSTEM.name,
                    {"from": "deferred", "to": "open", "reason": "deferral ended"}))
            if not changes:
                return []
            uow.tickets.update_many(changes)
            written = uow.events.append_many(new_events, now)
        changed = [ticket for ticket, _ in changes]
        self._notifier.notify(written[-1].seq, changed)
        return changed
