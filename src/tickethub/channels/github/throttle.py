"""Spacing writes: GitHub asks integrations to make mutating requests one at a time and
about a second apart (secondary rate limits). Reads are only capped in concurrency."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
from githubkit.throttling import BaseThrottler, LocalThrottler

_READS = frozenset({"GET", "HEAD", "OPTIONS"})


class WriteSpacer(BaseThrottler):
    """At most one write in flight, each starting ``interval`` seconds after the last
    one started; reads run beside them, at most ``max_reads`` at once."""

    def __init__(self, interval: float = 1.0, max_reads: int = 10) -> None:
        self.interval = interval
        self._max_reads = max_reads
        self._sync_reads = LocalThrottler(max_reads)
        # asyncio primitives (not anyio's) so task cancellation always propagates
        self._reads: asyncio.Semaphore | None = None
        self._lock: asyncio.Lock | None = None
        self._last = 0.0

    @contextmanager
    def acquire(self, request: httpx.Request) -> Generator[None, Any, Any]:
        with self._sync_reads.acquire(request):  # the sync client is only used by the CLI
            yield

    @asynccontextmanager
    async def async_acquire(self, request: httpx.Request) -> AsyncGenerator[None, Any]:
        if request.method in _READS:
            if self._reads is None:
                self._reads = asyncio.Semaphore(self._max_reads)
            async with self._reads:
                yield
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            delay = self._last + self.interval - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self._last = time.monotonic()
            yield
