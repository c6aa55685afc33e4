"""Ask throughput: durable asks per second at concurrency 32 (SQLite).

Against a real ``tickethub serve`` process with its default SQLite database (WAL,
``synchronous=NORMAL``): ``--concurrency`` keep-alive connections each send
``POST /api/v1/tickets`` back to back for ``--seconds``; every 201 is a ticket and its
event committed. Anchor: the same server's ``GET /healthz`` rate at the same concurrency,
measured just before and just after the asks (their mean), which is the ceiling of the
HTTP stack on this machine at this moment (``/healthz`` itself does one small database
read). The issue sets no number for this bench; the ratio says how much of the ceiling an
ask costs.
"""

from __future__ import annotations

import argparse
from typing import Any

import httpx

from bench.hub import HubProcess
from bench.load import Phase, load
from bench.report import Row, percentile
from bench.runner import main, size

NAME = "ask_throughput"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--seconds", type=float, help="length of each timed run [10; quick 2].")
    group.add_argument("--concurrency", type=int, help="parallel connections [32].")


async def _load(hub: HubProcess, concurrency: int, seconds: float, method: str, path: str,
                body: Any, expect: int) -> tuple[float, list[float], float, int]:
    """Keep ``concurrency`` connections busy for ``seconds`` (after a short warm-up);
    returns (requests per second, latencies in ms, server CPU seconds per request,
    requests sent including the warm-up)."""
    phase = Phase()
    await load(hub, hub.agent_token, concurrency, seconds, lambda: (method, path, body),
               expect, phase, warmup=1.0)
    return phase.rps, phase.latencies, phase.cpu_ms / 1000, phase.sent


async def _last_seq(hub: HubProcess) -> int:
    async with httpx.AsyncClient(base_url=hub.url) as client:
        return int((await client.get("/healthz")).json()["last_seq"])


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    seconds = size(args, "seconds", 10.0, 2.0)
    concurrency = size(args, "concurrency", 32, 32)
    ask = {"title": "Deploy to production?", "body": "The release is tagged; shall I ship?",
           "labels": ["deploy"]}
    with HubProcess() as hub:
        h1, _, h1_cpu, _ = await _load(hub, concurrency, seconds, "GET", "/healthz", None, 200)
        seq_before = await _last_seq(hub)
        rps, lat, ask_cpu, asked = await _load(hub, concurrency, seconds, "POST", "/api/v1/tickets",
                                        ask, 201)
        seq_after = await _last_seq(hub)
        h2, _, h2_cpu, _ = await _load(hub, concurrency, seconds, "GET", "/healthz", None, 200)
    healthz = (h1 + h2) / 2
    stored = seq_after - seq_before  # one ticket_created event per ask, warm-up included
    if stored != asked:
        raise RuntimeError(f"{asked} asks acknowledged but the event log grew by {stored}")
    rows = [
        Row(NAME, f"asks/s at concurrency {concurrency}", rps, "req/s", None,
            "GET /healthz req/s", healthz,
            note=(f"healthz {h1:,.0f} before, {h2:,.0f} after; server CPU per ask "
                  f"{ask_cpu * 1000:.1f} ms vs {(h1_cpu + h2_cpu) / 2 * 1000:.1f} ms per "
                  f"healthz; all {asked:,} acknowledged asks (warm-up included) are in "
                  f"the event log")),
        Row(NAME, "ask latency p50", percentile(lat, 50), "ms", None,
            "concurrency / healthz rate", concurrency / healthz * 1000),
        Row(NAME, "ask latency p99", percentile(lat, 99), "ms", None,
            "concurrency / healthz rate", concurrency / healthz * 1000),
    ]
    params = {"seconds": seconds, "concurrency": concurrency, "asks_per_s": rps,
              "healthz_per_s_before": h1, "healthz_per_s_after": h2,
              "server_cpu_ms_per_ask": ask_cpu * 1000,
              "server_cpu_ms_per_healthz": (h1_cpu + h2_cpu) / 2 * 1000,
              "events_committed": stored, "ask_latency_ms": {
                  "p50": percentile(lat, 50), "p99": percentile(lat, 99)}}
    return rows, params


if __name__ == "__main__":
    import sys

    main(sys.modules[__name__])
