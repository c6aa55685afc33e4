"""The webhook inbox worker: processes stored deliveries in arrival order.

``/hooks/github`` only verifies, stores and wakes this loop, so GitHub gets its 2xx at
once; a delivery stays ``pending`` until it is processed, so a crash or restart loses
none. A failure (GitHub busy while checking a permission, a database hiccup) is retried
later; after ``max_attempts`` the delivery is marked ``failed`` and kept for inspection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time

from tickethub.channels.github.client import GitHubBusy
from tickethub.channels.github.inbound import GithubInbound
from tickethub.services.github_sync import GithubSyncService, InboxItem

log = logging.getLogger(__name__)


class WebhookIntake:
    def __init__(self, sync: GithubSyncService, inbound: GithubInbound,
                 idle_seconds: float = 5.0, backoff_seconds: float = 1.0) -> None:
        self._sync = sync
        self._inbound = inbound
        self._idle = idle_seconds
        self._backoff = backoff_seconds
        self._wake: asyncio.Event | None = None
        self._not_before: dict[int, float] = {}
        self._submitted: list[InboxItem] = []
        self._finished: set[int] = set()  # ids handled lately (a scan may race a submit)
        self.outcomes: dict[str, str] = {}  # delivery id -> outcome (recent; for tests)

    def submit(self, item: InboxItem) -> None:
        """Hand over a delivery just stored (on the hub's event loop): processed next,
        without reading it back. The stored copy is what survives a restart."""
        self._submitted.append(item)
        if self._wake is not None:
            self._wake.set()

    async def run(self) -> None:
        self._wake = asyncio.Event()
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
        if not self._not_before:
            return self._idle
        return max(0.01, min(self._idle, min(self._not_before.values()) - time.monotonic()))

    async def run_once(self) -> int:
        """Process the submitted deliveries, else the stored pending ones that are due;
        returns how many were handled."""
        handled = 0
        if self._submitted:
            batch, self._submitted = self._submitted, []
            for item in batch:
                await self._process(item)
                handled += 1
            return handled
        for item in await asyncio.to_thread(self._sync.pending):
            if self._not_before.get(item.id, 0.0) > time.monotonic():
                continue
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
            await asyncio.to_thread(self._sync.failed, item, f"unreadable payload: {exc}")
            return
        try:
            outcome = await self._inbound.handle(item.event, payload)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            wait = exc.retry_after if isinstance(exc, GitHubBusy) else (
                self._backoff * 2 ** item.attempts)
            retry = await asyncio.to_thread(self._sync.failed, item, repr(exc))
            if retry:
                self._not_before[item.id] = time.monotonic() + wait
            else:
                self._not_before.pop(item.id, None)
            log.warning("GitHub delivery %s failed (%r)%s", item.delivery_id, exc,
                        f"; retrying in {wait:.1f}s" if retry else "; giving up")
            return
        self._not_before.pop(item.id, None)
        if len(self._finished) > 10_000:
            self._finished.clear()
        self._finished.add(item.id)
        status = "ignored" if outcome.startswith("ignored") else "done"
        await asyncio.to_thread(self._sync.processed, item, status)
        if len(self.outcomes) > 1000:
            self.outcomes.clear()
        self.outcomes[item.delivery_id] = outcome
        log.debug("GitHub delivery %s (%s): %s", item.delivery_id, item.event, outcome)
