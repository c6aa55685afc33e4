"""Load for throughput benches: keep N keep-alive connections busy with one kind of
request for a while (after a short warm-up) and measure requests, latencies and the hub's
CPU over the timed part."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from bench.hub import HubProcess
from bench.rawhttp import Connection


class Phase:
    """What one kind of request measured over its turns."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0
        self.cpu = 0.0
        self.latencies: list[float] = []
        self.sent = 0  # acknowledged requests, warm-up included

    @property
    def rps(self) -> float:
        return self.count / self.seconds if self.seconds else 0.0

    @property
    def cpu_ms(self) -> float:
        return self.cpu / max(1, self.count) * 1000


async def load(hub: HubProcess, token: str, concurrency: int, seconds: float,
               request: Callable[[], tuple[str, str, Any] | None], expect: int,
               phase: Phase, on_body: Callable[[Any], None] | None = None,
               warmup: float = 0.5) -> None:
    """Keep ``concurrency`` connections busy for ``seconds`` after a short warm-up, each
    sending ``request()`` (``None``: nothing left to send) again and again; what the
    timed part measured is added to ``phase`` (``phase.sent`` counts the warm-up too)."""
    conns = [await Connection.open(hub.host, hub.port, token) for _ in range(concurrency)]
    counting = False
    stop_at = 0.0
    latencies: list[float] = []

    async def client(conn: Connection) -> None:
        while time.perf_counter() < stop_at:
            job = request()
            if job is None:
                return
            method, path, body = job
            start = time.perf_counter()
            r = await conn.request(method, path, body)
            if r.status != expect:
                raise RuntimeError(f"{method} {path}: {r.status} {r.body[:300]!r}")
            phase.sent += 1
            if on_body is not None:
                on_body(r.json())
            if counting:
                latencies.append((time.perf_counter() - start) * 1000)

    try:
        stop_at = time.perf_counter() + min(warmup, seconds / 4)
        await asyncio.gather(*(client(c) for c in conns))  # warm-up, not counted
        counting = True
        cpu = hub.cpu_seconds()
        started = time.perf_counter()
        stop_at = started + seconds
        await asyncio.gather(*(client(c) for c in conns))
        elapsed = time.perf_counter() - started
        cpu = hub.cpu_seconds() - cpu
    finally:
        await asyncio.gather(*(c.close() for c in conns))
    phase.count += len(latencies)
    phase.seconds += elapsed
    phase.cpu += cpu
    phase.latencies += latencies
