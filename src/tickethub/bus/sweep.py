"""Changes committed without a notification still wake this process's waiters.

A process that commits a change and then dies (``kill -9``), or cannot reach PostgreSQL
to ``NOTIFY``, leaves the other processes' waiters asleep until their long-poll times
out: the notification goes out after the commit, so no transaction can make the two one.
Every ``every`` seconds each process reads from the log which tickets changed since its
last sweep (``(seq, ticket_id)`` pairs, no event bodies), asks its bus which of those
changes it never heard of (:meth:`InProcessBus.unheard`), and wakes their waiters, who
read the tickets back. A change is judged only once it is a whole period old, so
notifications still on their way are not taken for lost ones; a lost notification
costs its waiters at most two periods. After the bus re-checked everything (its LISTEN
connection came back: ``recheck_all``), the changes up to the log's end read after it
are not judged: every waiter read its ticket back then, and the bus forgot what it had
heard.

Events commit in seq order (``store/advisory_locks.py``: ``EVENT_LOG``), so a range of
seqs read once is complete and is never read again.
"""

from __future__ import annotations

import asyncio
import logging

from tickethub.bus.memory import InProcessBus
from tickethub.ops.series import MISSED_NOTIFICATIONS
from tickethub.services.backoff import Backoff
from tickethub.services.events import EventService

log = logging.getLogger(__name__)

WINDOW = 50_000  # events read per sweep; beyond it every waiter reads back instead


class MissedNotificationSweep:
    """The sweep of one process: ``await run()`` while the hub runs."""

    def __init__(self, bus: InProcessBus, events: EventService, every: float) -> None:
        self._bus = bus
        self._events = events
        self._every = every
        self.woken = 0  # tickets whose waiters a sweep woke (no notification came)

    async def run(self) -> None:
        backoff = Backoff(log, "missed-notification sweep", longest=max(self._every, 30.0))
        checked: int | None = None  # every change up to this seq has been judged
        pending = 0  # the log's end at the last sweep: judged at the next
        rechecks = self._bus.rechecks
        while True:
            try:
                seen = self._bus.rechecks  # read before the log's end: see the doc
                end = await asyncio.to_thread(self._events.last_seq)
                if checked is None or seen != rechecks:
                    # At start, what came before is the past; after a re-check, every
                    # waiter has read back what was committed before it.
                    checked, rechecks = end, seen
                elif pending > checked:
                    await self._judge(checked, pending)
                    checked = pending
                pending = end
                backoff.succeeded()
                await asyncio.sleep(self._every)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # e.g. the database is away: try again later
                await asyncio.sleep(backoff.failed(exc))

    async def _judge(self, after: int, until: int) -> None:
        """Wake the waiters of the changes in ``(after, until]`` nobody announced."""
        changes = await asyncio.to_thread(self._events.ticket_seqs, after, until, WINDOW)
        if len(changes) == WINDOW and changes[-1][0] < until:
            log.warning("over %d changes since the last sweep; every waiter reads back",
                        WINDOW)
            self._bus.recheck_all()
            return
        unheard = self._bus.unheard(changes)
        if unheard:
            log.warning("%d ticket(s) changed without a notification reaching this "
                        "process (did another stop between commit and NOTIFY?); their "
                        "waiters read them back", len(unheard))
            self.woken += len(unheard)
            MISSED_NOTIFICATIONS.inc(len(unheard))
            self._bus.wake_unheard(until, unheard)
