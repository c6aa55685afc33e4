"""Concurrent waiters: many agents parked on one server process, woken in one burst.

Against a real ``tickethub serve`` process (SQLite): ``--waiters`` tickets are asked,
each gets its own connection long-polling ``GET .../wait?timeout=60``; once ``/healthz``
counts them all parked, the server's resident memory (``VmRSS``) is read. Then
``--answerers`` parallel connections answer every ticket as fast as the server takes
it. Goal (issue 3): 5,000 waiters in <= 600 MB, all woken within 2 s.

Reported: the RSS with everyone parked (anchor: the same server idle, before the
waiters); the burst (time to get all answers accepted); the wake lag from the last
accepted answer to the last waiter woken (the goal's "time until all are woken after
their tickets are answered"); and the total from burst start to the last waiter woken.
The time anchor is HumanLayer's 3 s poll interval: a polling client learns of an answer
up to one interval later, even if the server kept up with 5,000 pollers.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import httpx

from bench.hub import HubProcess, raise_open_files_limit
from bench.rawhttp import Connection
from bench.report import Goal, Row, percentile
from bench.runner import main, size

NAME = "concurrent_waiters"
ANCHOR_INTERVAL = 3.0
MB = 1024 * 1024
WAIT_TIMEOUT = 60


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--waiters", type=int, help="parked long-polls [5000; quick 500].")
    group.add_argument("--answerers", type=int,
                       help="parallel answer connections in the burst [8].")


async def _in_parallel(conns: list[Connection], jobs: list[Any],
                       one: Any) -> list[Any]:
    """Run ``one(conn, job)`` for every job, each connection taking jobs in turn."""
    queue: asyncio.Queue[tuple[int, Any]] = asyncio.Queue()
    for item in enumerate(jobs):
        queue.put_nowait(item)
    results: list[Any] = [None] * len(jobs)

    async def worker(conn: Connection) -> None:
        while not queue.empty():
            index, job = queue.get_nowait()
            results[index] = await one(conn, job)

    await asyncio.gather(*(worker(c) for c in conns))
    return results


async def _ask_all(hub: HubProcess, count: int) -> list[int]:
    conns = [await Connection.open(hub.host, hub.port, hub.agent_token) for _ in range(16)]

    async def ask(conn: Connection, n: int) -> int:
        r = await conn.request("POST", "/api/v1/tickets", {"title": f"waiter {n}"})
        if r.status != 201:
            raise RuntimeError(f"ask failed: {r.status} {r.body[:200]!r}")
        return int(r.json()["id"])

    try:
        return await _in_parallel(conns, list(range(count)), ask)
    finally:
        await asyncio.gather(*(c.close() for c in conns))


async def _parked(hub: HubProcess, count: int, limit: float) -> float:
    """Seconds until ``/healthz`` reports ``count`` waiters."""
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=hub.url, timeout=30) as client:
        while time.perf_counter() - started < limit:
            if (await client.get("/healthz")).json()["waiters"] >= count:
                return time.perf_counter() - started
            await asyncio.sleep(0.2)
    raise RuntimeError(f"not all {count} waiters parked within {limit:g} s")


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    count = size(args, "waiters", 5000, 500)
    answerers = size(args, "answerers", 8, 8)
    raise_open_files_limit(2 * count + 1000)  # the server (a child) inherits it
    with HubProcess() as hub:
        idle_rss = hub.rss()
        ids = await _ask_all(hub, count)
        asked_rss = hub.rss()

        # Park: one connection per waiter, all long-polling at once.
        opened = time.perf_counter()
        gate = asyncio.Semaphore(200)

        async def connect() -> Connection:
            async with gate:
                return await Connection.open(hub.host, hub.port, hub.agent_token)

        conns = await asyncio.gather(*(connect() for _ in ids))
        for conn, ticket_id in zip(conns, ids, strict=True):
            conn.send("GET", f"/api/v1/tickets/{ticket_id}/wait?timeout={WAIT_TIMEOUT}")
        woken_at: list[float] = [0.0] * count
        statuses: list[str] = [""] * count

        async def waiter(i: int, conn: Connection) -> None:
            r = await conn.receive()
            woken_at[i] = time.perf_counter()
            statuses[i] = r.json()["status"] if r.status == 200 else f"http {r.status}"

        waiting = [asyncio.create_task(waiter(i, c)) for i, c in enumerate(conns)]
        park_seconds = await _parked(hub, count, WAIT_TIMEOUT / 2)
        park_seconds = time.perf_counter() - opened
        await asyncio.sleep(1)  # let the allocator settle before reading memory
        parked_rss = hub.rss()
        early = sum(1 for s in statuses if s)
        if early:
            raise RuntimeError(f"{early} waiters returned before any answer")

        # Burst: answer every ticket from several connections in parallel.
        answer_conns = [await Connection.open(hub.host, hub.port, hub.responder_token)
                        for _ in range(answerers)]
        sent_at: list[float] = [0.0] * count
        accepted_at: list[float] = [0.0] * count

        async def answer(conn: Connection, i: int) -> None:
            sent_at[i] = time.perf_counter()
            r = await conn.request("POST", f"/api/v1/tickets/{ids[i]}/answer",
                                   {"text": "go"})
            accepted_at[i] = time.perf_counter()
            if r.status != 200:
                raise RuntimeError(f"answer failed: {r.status} {r.body[:200]!r}")

        cpu_before = hub.cpu_seconds()
        burst_start = time.perf_counter()
        await _in_parallel(answer_conns, list(range(count)), answer)
        burst_end = time.perf_counter()
        await asyncio.wait_for(asyncio.gather(*waiting), WAIT_TIMEOUT)
        last_woken = max(woken_at)
        burst_cpu = hub.cpu_seconds() - cpu_before
        peak_rss = hub.peak_rss()
        await asyncio.gather(*(c.close() for c in [*conns, *answer_conns]))

    wrong = [s for s in statuses if s != "answered"]
    if wrong:
        raise RuntimeError(f"{len(wrong)} waiters woke without the answer, e.g. {wrong[0]}")
    burst = burst_end - burst_start
    lag = last_woken - burst_end
    total = last_woken - burst_start
    per_wake = [(woken_at[i] - sent_at[i]) * 1000 for i in range(count)]
    rows = [
        Row(NAME, f"server RSS, {count:,} parked", parked_rss / MB, "MB", Goal("<=", 600),
            "idle server RSS", idle_rss / MB,
            note=(f"{(parked_rss - asked_rss) / count / 1024:.1f} KB per parked waiter; "
                  f"peak RSS {peak_rss / MB:.0f} MB; parking all took {park_seconds:.1f} s")),
        Row(NAME, "wake lag after last answer", lag * 1000, "ms", Goal("<=", 2000),
            "3 s poll interval", ANCHOR_INTERVAL * 1000,
            note="last answer accepted (committed) -> last waiter holding its response; "
                 "negative when the last waiter had its response before the responder had "
                 "the answer's"),
        Row(NAME, "burst start -> all woken", total, "s", Goal("<=", 2), "3 s poll interval",
            ANCHOR_INTERVAL,
            note=(f"strict reading of the goal: includes writing all {count:,} answers "
                  f"({answerers} connections, {count / burst:,.0f} answers/s, server CPU "
                  f"{burst_cpu:.1f} s)")),
        Row(NAME, "answer burst", burst, "s", None, "3 s poll interval", ANCHOR_INTERVAL),
        Row(NAME, "per-waiter wake p50", percentile(per_wake, 50), "ms", None,
            "3 s poll p50", ANCHOR_INTERVAL / 2 * 1000,
            note="each waiter: its answer request sent -> its response held (p99 "
                 f"{percentile(per_wake, 99):.0f} ms)"),
    ]
    params = {"waiters": count, "answerers": answerers, "idle_rss_mb": idle_rss / MB,
              "asked_rss_mb": asked_rss / MB, "parked_rss_mb": parked_rss / MB,
              "peak_rss_mb": peak_rss / MB, "park_seconds": park_seconds,
              "burst_seconds": burst, "wake_lag_seconds": lag, "total_seconds": total,
              "burst_server_cpu_seconds": burst_cpu,
              "per_waiter_wake_ms": {"p50": percentile(per_wake, 50),
                                     "p99": percentile(per_wake, 99),
                                     "max": max(per_wake)}}
    return rows, params


if __name__ == "__main__":
    import sys

    main(sys.modules[__name__])
