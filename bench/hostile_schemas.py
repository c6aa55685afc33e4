"""Hostile schemas: the hub stays responsive while agents send the worst JSON Schemas.

Against a real ``tickethub serve`` process (SQLite), a probe client measures ``GET
/healthz`` round trips, first with the hub idle (the anchor), then while ``--attackers``
agent connections send, back to back, the costliest schemas and values that can be
built within the limits and the ones beyond them:

* a catastrophic regular expression (``^(a+)+$``) with a proposal of 30 ``a`` and a
  ``!`` (minutes of backtracking on Python's ``re``), and the same answered by a person;
* ``$ref`` fan-out that doubles per level of the value, run to the step budget;
* a schema nested to the depth limit, one beyond it, a huge enum just under the size
  limit with a proposal that matches none of it, 20,000 objects under ``uniqueItems``;
* ``$ref``\\ s to a loopback server (which counts fetches: the goal is none), a
  ``$ref`` that fans out exponentially, and a ``$ref`` cycle.

Goal (issue 12): ``/healthz`` p99 under attack within 10x its idle p99; no 5xx; no fetch.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import httpx

from bench.bait_server import BaitServer
from bench.hub import HubProcess
from bench.report import Goal, Row, percentile
from bench.runner import main, size

NAME = "hostile_schemas"
RATIO_GOAL = 10.0
PROBE_GAP = 0.005  # seconds between two probes, so the probe itself is no load


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--probes", type=int, help="/healthz probes per phase [1000; quick 200].")
    group.add_argument("--attackers", type=int, help="concurrent hostile agents [8; quick 4].")


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def _fan_out() -> tuple[dict[str, Any], dict[str, Any]]:
    """A schema under every static limit whose check doubles per level of the value."""
    schema = {"$defs": {"t": {"properties": {"a": {"allOf": [{"$ref": "#/$defs/t"}] * 2}}}},
              "$ref": "#/$defs/t"}
    value: dict[str, Any] = {}
    for _ in range(40):
        value = {"a": value}
    return schema, value


def _bomb() -> dict[str, Any]:
    bomb: dict[str, Any] = {"$defs": {"d40": {"type": "string"}}, "$ref": "#/$defs/d0"}
    for i in range(40):
        bomb["$defs"][f"d{i}"] = {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2}
    return bomb


def payloads(bait_url: str) -> list[dict[str, Any]]:
    """Ask bodies, each hostile in its own way (see the module doc)."""
    fan_schema, fan_value = _fan_out()
    enum = [f"choice-{n:06d}-" + "x" * 30 for n in range(5_500)]  # just under 256 KiB
    return [
        {"title": "regex", "kind": "approval", "proposal": "a" * 30 + "!",
         "response_schema": {"type": "string", "pattern": "^(a+)+$"}},
        {"title": "fan-out", "kind": "approval", "proposal": fan_value,
         "response_schema": fan_schema},
        {"title": "deep", "response_schema": _nested(31)},
        {"title": "too deep", "response_schema": _nested(40)},
        {"title": "enum", "kind": "approval", "proposal": "none of them",
         "response_schema": {"enum": enum}},
        {"title": "unique", "kind": "approval", "proposal": [{"n": n} for n in range(20_000)],
         "response_schema": {"type": "array", "uniqueItems": True}},
        {"title": "remote", "response_schema": {"properties": {"x": {"$ref": bait_url}}}},
        {"title": "remote id", "response_schema": {"$id": bait_url, "$ref": "other.json"}},
        {"title": "bomb", "response_schema": _bomb()},
        {"title": "cycle", "response_schema": {"$ref": "#"}},
    ]


async def _probe(client: httpx.AsyncClient, count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        (await client.get("/healthz")).raise_for_status()
        times.append((time.perf_counter() - start) * 1000)
        await asyncio.sleep(PROBE_GAP)
    return times


async def _attack(agent: httpx.AsyncClient, responder: httpx.AsyncClient,
                  bodies: list[dict[str, Any]], statuses: Counter[int],
                  stop: asyncio.Event, offset: int) -> None:
    """Send hostile asks round-robin until ``stop``; a regex question that got through
    is answered by the responder with the catastrophic value."""
    n = offset
    while not stop.is_set():
        body = bodies[n % len(bodies)]
        n += 1
        r = await agent.post("/api/v1/tickets", json=body)
        statuses[r.status_code] += 1
        if body["title"] == "regex" and n % 2 == 0:
            asked = await agent.post("/api/v1/tickets", json={
                "title": "regex q", "response_schema": body["response_schema"]})
            statuses[asked.status_code] += 1
            if asked.status_code == 201:
                answered = await responder.post(
                    f"/api/v1/tickets/{asked.json()['id']}/answer",
                    json={"data": "a" * 30 + "!"})
                statuses[answered.status_code] += 1


async def _during(work: Callable[[], Awaitable[list[float]]], attackers: int,
                  attack: Callable[[asyncio.Event, int], Coroutine[Any, Any, None]]) -> list[float]:
    stop = asyncio.Event()
    tasks = [asyncio.create_task(attack(stop, i)) for i in range(attackers)]
    await asyncio.sleep(0.5)  # let the attack get going
    try:
        return await work()
    finally:
        stop.set()
        await asyncio.gather(*tasks)


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    probes = size(args, "probes", 1000, 200)
    attackers = size(args, "attackers", 8, 4)
    statuses: Counter[int] = Counter()
    with BaitServer() as bait, HubProcess() as hub:
        bodies = payloads(bait.url("/schema.json"))
        auth = {"agent": hub.agent_token, "responder": hub.responder_token}
        clients = {
            role: httpx.AsyncClient(base_url=hub.url, timeout=120,
                                    headers={"Authorization": f"Bearer {token}"},
                                    limits=httpx.Limits(max_connections=attackers))
            for role, token in auth.items()}
        async with (httpx.AsyncClient(base_url=hub.url, timeout=120) as probe,
                    clients["agent"] as agent, clients["responder"] as responder):
            await _probe(probe, 50)  # warm up
            idle = await _probe(probe, probes)
            started = time.perf_counter()
            attacked = await _during(
                lambda: _probe(probe, probes), attackers,
                lambda stop, i: _attack(agent, responder, bodies, statuses, stop, i))
            elapsed = time.perf_counter() - started
        fetches = len(bait.requests)

    idle_p99, attacked_p99 = percentile(idle, 99), percentile(attacked, 99)
    hostile = sum(statuses.values())
    server_errors = sum(v for k, v in statuses.items() if k >= 500)
    rows = [
        Row(NAME, "/healthz p99 under attack", attacked_p99, "ms",
            Goal("<=", RATIO_GOAL * idle_p99), "idle /healthz p99", idle_p99,
            note=f"{attackers} agents sending hostile schemas back to back; goal: within "
                 f"{RATIO_GOAL:g}x the idle p99 of the same run"),
        Row(NAME, "/healthz p50 under attack", percentile(attacked, 50), "ms", None,
            "idle /healthz p50", percentile(idle, 50)),
        Row(NAME, "hostile requests", hostile / elapsed, "req/s", None,
            note=f"statuses: {dict(sorted(statuses.items()))}"),
        Row(NAME, "5xx responses", server_errors, "", Goal("<=", 0)),
        Row(NAME, "fetches of remote $refs", fetches, "", Goal("<=", 0)),
    ]
    params = {"probes": probes, "attackers": attackers, "seconds": round(elapsed, 2),
              "statuses": {str(k): v for k, v in statuses.items()},
              "idle_ms": {"p50": percentile(idle, 50), "p99": idle_p99, "max": max(idle)},
              "attacked_ms": {"p50": percentile(attacked, 50), "p99": attacked_p99,
                              "max": max(attacked)}}
    return rows, params


if __name__ == "__main__":
    import sys

    main(sys.modules[__name__])
