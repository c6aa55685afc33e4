"""The webhook inbox worker: processes stored deliveries in arrival order.

``/hooks/github`` only verifies, stores and wakes this loop, so GitHub gets its 2xx at
once; a delivery stays ``pending`` until it is processed, so a crash or restart loses
none. A delivery whose processing fails (GitHub down while checking a permission, a
database hiccup) gets its own next attempt, stored, by the sync service's
``RetrySchedule`` (exponential back-off, capped, for hours), and the worker moves on:
one delivery that keeps failing never holds up the ones behind it. When the schedule's
window has passed the delivery is marked ``failed``, kept for inspection, and its
commenter is told on the issue (``GithubInbound.tell_failed``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from datetime import datetime
from functools import partial
from typing import Any

from tickethub.channels.github.client import GitHubBusy
from tickethub.channels.github.inbound import GithubInbound
from tickethub.services.github_sync import GithubSyncService, InboxItem
from tickethub.services.ports import Clock

log = logging.getLogger(__name__)


class WebhookIntake:
    def __init__(self, sync: GithubSyncService, inbound: GithubInbound, clock: Clock,
                 idle_seconds: float = 5.0) -> None:
        self._sync = sync
        self._inbound = inbound
        self._clock = clock
        self._idle = idle_seconds
        self._wake: asyncio.Event | None = None
        self._next_retry: datetime | None = None  # earliest retry this process scheduled
        self._last_scan: datetime | None = None
        self._submitted: list[InboxItem] = []
        self._finished: set[int] = set()  # ids handled lately (a scan may race a submit)
        self.outcomes: dict[str, str] = {}  # delivery id -> outcome (recent; for tests)

    def submit(self, item: InboxItem) -> None:
        """Hand over a delivery just stored (on the hub's event loop): processed next,
        without reading it back. The stored copy is what survives a restart, and what
        the process running the loop finds at its next scan when this one does not run
        it (several hub processes: only the leader does)."""
        if self._wake is not None:
            self._submitted.append(item)
            self._wake.set()

    async def run(self) -> None:
        self._wake = asyncio.Event()
        try:
            await self._rounds()
        finally:
            self._wake = None

    async def _rounds(self) -> None:
        assert self._wake is not None
        while True:
            self._wake.clear()
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # keep the loop alive; the next round retries
                log.exception("GitHub webhook round failed")
            with contextlib.suppress(TimeoutError):  # (not wait_for: see bus.memory)
                async with asyncio.timeout(self._next_wait()):
                    await self._wake.wait()

    def _next_wait(self) -> float:
        # Retries scheduled before a restart are found by the idle scan.
        if self._next_retry is None:
            return self._idle
        until = (self._next_retry - self._clock.now()).total_seconds()
        return max(0.01, min(self._idle, until))

    async def run_once(self) -> int:
        """Process the submitted deliveries, then the stored pending ones that are due
        (skipped while submissions keep coming, unless a retry is due or the last scan
        is ``idle_seconds`` old); returns how many were handled."""
        handled = 0
        batch, self._submitted = self._submitted, []
        for item in batch:
            await self._process(item)
            handled += 1
        now = self._clock.now()
        retry_due = self._next_retry is not None and self._next_retry <= now
        scanned_lately = (self._last_scan is not None
                          and (now - self._last_scan).total_seconds() < self._idle)
        if batch and not retry_due and scanned_lately:
            return handled
        self._next_retry = None
        self._last_scan = now
        for item in await asyncio.to_thread(self._sync.pending):
            await self._process(item)
            handled += 1
        return handled

    async def _process(self, item: InboxItem) -> None:
        if item.id in self._finished:
            return
        try:
            payload = json.loads(item.payload)
            if not isinstance(payload, dict):
                raise ValueError("the payload is not a JSON object")
        except ValueError as exc:
            await asyncio.to_thread(partial(self._sync.failed, final=True), item,
                                    f"unreadable payload: {exc}")
            return
        try:
            outcome = await self._inbound.handle(item.event, payload)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._failed(item, payload, exc)
            return
        if len(self._finished) > 10_000:
            self._finished.clear()
        self._finished.add(item.id)
        status = "ignored" if outcome.startswith("ignored") else "done"
        await asyncio.to_thread(self._sync.processed, item, status)
        if len(self.outcomes) > 1000:
            self.outcomes.clear()
        self.outcomes[item.delivery_id] = outcome
        log.debug("GitHub delivery %s (%s): %s", item.delivery_id, item.event, outcome)

    async def _failed(self, item: InboxItem, payload: dict[str, Any],
                      exc: Exception) -> None:
        busy = isinstance(exc, GitHubBusy)
        asked = exc.retry_after if isinstance(exc, GitHubBusy) and exc.asked else None
        next_at = await asyncio.to_thread(self._sync.failed, item, repr(exc), asked)
        if next_at is not None:
            if self._next_retry is None or next_at < self._next_retry:
                self._next_retry = next_at
            log.warning("GitHub delivery %s failed (%r); next try at %s", item.delivery_id,
                        exc, next_at.isoformat())
            return
        log.error("GitHub delivery %s failed for good after %d tries (%r)",
                  item.delivery_id, item.attempts + 1, exc)
        try:
            await self._inbound.tell_failed(item.delivery_id, item.event, payload, busy)
        except Exception:  # the delivery stays on record as failed either way
            log.exception("could not tell about failed GitHub delivery %s", item.delivery_id)
