"""Sleeps until the next deadline (or a change that may bring one closer) and runs it."""

from __future__ import annotations

import asyncio
import logging

from tickethub.bus.memory import InProcessBus
from tickethub.services.backoff import Backoff
from tickethub.services.deadlines import DeadlineService
from tickethub.services.ports import Clock

log = logging.getLogger(__name__)

ROUND_COALESCE_SECONDS = 0.05


class DeadlineLoop:
    def __init__(self, deadlines: DeadlineService, clock: Clock, bus: InProcessBus,
                 max_sleep: float) -> None:
        self._deadlines = deadlines
        self._clock = clock
        self._bus = bus
        self._max_sleep = max_sleep

    async def run(self) -> None:
        backoff = Backoff(log, "deadline round", longest=self._max_sleep)
        with self._bus.state_signal() as signal:
            while True:
                try:
                    # A read first: most wakeups (any new event) have nothing due, and a
                    # write transaction for nothing would queue behind real writers.
                    upcoming = await asyncio.to_thread(self._deadlines.next_deadline)
                    if upcoming is not None and upcoming <= self._clock.now():
                        expired = await asyncio.to_thread(self._deadlines.run_due)
                        log.info("deadlines: %d ticket(s) expired or back from deferral",
                                 len(expired))
                        upcoming = await asyncio.to_thread(self._deadlines.next_deadline)
                    backoff.succeeded()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # e.g. the database is away: try again later
                    await asyncio.sleep(backoff.failed(exc))
                    continue
                sleep = self._max_sleep
                if upcoming is not None:
                    sleep = min(sleep, max(0.0, (upcoming - self._clock.now()).total_seconds()))
                # Any change of a ticket may bring an earlier deadline, so it also ends
                # the sleep (a new message on a ticket changes no deadline).
                if await signal.wait(sleep + 0.01):
                    await asyncio.sleep(ROUND_COALESCE_SECONDS)  # one round per burst
