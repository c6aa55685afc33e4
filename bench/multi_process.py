"""Many processes: asks/s, answers/s and wake p50 with 1 and 2 hub processes on PostgreSQL.

Three hubs in turn, each a real ``tickethub serve`` on a fresh database: SQLite with one
process (the anchor: what a hub gives without PostgreSQL), then PostgreSQL with
``--workers 1`` and ``--workers 2`` (one port, the kernel spreads connections). For each:
``--concurrency`` keep-alive connections send asks for ``--seconds``, then answers to
those tickets for ``--seconds`` (each 2xx is committed); then ``--pairs`` sequential
wake rounds: an agent long-polls its new ticket, and once it is parked a responder
answers on another connection — with two processes, always one on the *other* process
(chosen by the ``pid`` that ``/healthz`` reports per connection), so the wake crosses
LISTEN/NOTIFY. Wake latency: sending the answer → the waiter holding its response.

PostgreSQL comes from ``SQLALCHEMY_URL`` (``../shared/recipes/postgresql.sh`` prints it)
or ``--pg-url``; each run creates its own database and drops it after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from bench.hub import HubProcess
from bench.load import Phase, load
from bench.rawhttp import Connection
from bench.report import Row, percentile
from bench.runner import main, size

NAME = "multi_process"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--seconds", type=float, help="length of each timed load [8; quick 2].")
    group.add_argument("--concurrency", type=int, help="parallel connections [16].")
    group.add_argument("--pairs", type=int, help="wake rounds per hub [200; quick 30].")
    group.add_argument("--pg-url", help="PostgreSQL server [$SQLALCHEMY_URL].")


@contextmanager
def fresh_database(server_url: str) -> Iterator[str]:
    """A fresh, empty database on that server, dropped afterwards; its URL."""
    name = "bench_mp_" + secrets.token_hex(4)
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT", poolclass=None)
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


async def _pid(conn: Connection) -> int:
    return int((await conn.request("GET", "/healthz")).json()["pid"])


async def _connection_on(hub: HubProcess, token: str, *, on: int | None = None,
                         not_on: int | None = None) -> tuple[Connection, int]:
    """A keep-alive connection served by process ``on`` (or any but ``not_on``)."""
    for _ in range(200):
        conn = await Connection.open(hub.host, hub.port, token)
        pid = await _pid(conn)
        if (on is None or pid == on) and (not_on is None or pid != not_on):
            return conn, pid
        await conn.close()
    raise RuntimeError("no connection reached the wanted hub process")


async def _all_workers_serve(hub: HubProcess, workers: int) -> None:
    seen: set[int] = set()
    deadline = time.monotonic() + 300
    while len(seen) < workers:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(seen)} of {workers} hub processes answered")
        conn = await Connection.open(hub.host, hub.port)
        seen.add(await _pid(conn))
        await conn.close()
        await asyncio.sleep(0.05)


async def _wake_rounds(hub: HubProcess, pairs: int, cross: bool) -> list[float]:
    agent, pid = await _connection_on(hub, hub.agent_token)
    probe, _ = await _connection_on(hub, hub.agent_token, on=pid)
    responder, _ = await _connection_on(hub, hub.responder_token,
                                        not_on=pid if cross else None)
    wakes = []
    try:
        for n in range(pairs + 10):  # the first 10 warm up
            ticket = (await agent.request("POST", "/api/v1/tickets",
                                          {"title": f"wake {n}"})).json()["id"]
            agent.send("GET", f"/api/v1/tickets/{ticket}/wait?timeout=30")
            while (await probe.request("GET", "/healthz")).json()["waiters"] < 1:
                await asyncio.sleep(0.0005)
            sent = time.perf_counter()
            answered = await responder.request("POST", f"/api/v1/tickets/{ticket}/answer",
                                               {"text": "yes"})
            woke = await agent.receive()
            at = time.perf_counter()
            if answered.status != 200 or woke.json()["status"] != "answered":
                raise RuntimeError(f"round {n}: {answered.status} {woke.body[:200]!r}")
            if n >= 10:
                wakes.append((at - sent) * 1000)
    finally:
        for conn in (agent, probe, responder):
            await conn.close()
    return wakes


async def _measure(hub: HubProcess, workers: int, concurrency: int, seconds: float,
                   pairs: int) -> dict[str, Any]:
    await _all_workers_serve(hub, workers)
    asks, answers = Phase(), Phase()
    ids: list[int] = []
    ask = ("POST", "/api/v1/tickets", {"title": "Deploy to production?",
                                       "body": "The release is tagged; shall I ship?"})
    await load(hub, hub.agent_token, concurrency, seconds, lambda: ask, 201, asks,
               on_body=lambda body: ids.append(body["id"]), warmup=1.0)
    queue = iter(ids)

    def answer() -> tuple[str, str, Any] | None:
        ticket = next(queue, None)
        if ticket is None:
            return None
        return "POST", f"/api/v1/tickets/{ticket}/answer", {"text": "yes, ship it"}

    await load(hub, hub.responder_token, concurrency, seconds, answer, 200, answers,
               warmup=1.0)
    wakes = await _wake_rounds(hub, pairs, cross=workers > 1)
    return {"asks": asks.rps, "answers": answers.rps, "ask_cpu_ms": asks.cpu_ms,
            "answer_cpu_ms": answers.cpu_ms, "wake_p50": percentile(wakes, 50),
            "wake_p99": percentile(wakes, 99), "asked": len(ids)}


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    seconds = size(args, "seconds", 8.0, 2.0)
    concurrency = size(args, "concurrency", 16, 16)
    pairs = size(args, "pairs", 200, 30)
    pg = args.pg_url or os.environ.get("SQLALCHEMY_URL")
    if not pg:
        raise RuntimeError("needs PostgreSQL: set SQLALCHEMY_URL or pass --pg-url")
    load_avg = os.getloadavg()[0]
    results: dict[str, dict[str, Any]] = {}
    with HubProcess() as hub:
        results["sqlite-1"] = await _measure(hub, 1, concurrency, seconds, pairs)
    for workers in (1, 2):
        with fresh_database(pg) as url, HubProcess(database_url=url, workers=workers) as hub:
            results[f"pg-{workers}"] = await _measure(hub, workers, concurrency, seconds,
                                                      pairs)
    anchor = results["sqlite-1"]
    rows = []
    for key, label in (("pg-1", "PostgreSQL, 1 process"), ("pg-2", "PostgreSQL, 2 processes")):
        got = results[key]
        rows += [
            Row(NAME, f"asks/s, {label}", got["asks"], "req/s", None, "SQLite, 1 process",
                anchor["asks"], note=f"server CPU per ask {got['ask_cpu_ms']:.2f} ms "
                                     f"(SQLite {anchor['ask_cpu_ms']:.2f} ms)"),
            Row(NAME, f"answers/s, {label}", got["answers"], "req/s", None,
                "SQLite, 1 process", anchor["answers"],
                note=f"server CPU per answer {got['answer_cpu_ms']:.2f} ms "
                     f"(SQLite {anchor['answer_cpu_ms']:.2f} ms)"),
            Row(NAME, f"wake p50, {label}", got["wake_p50"], "ms", None,
                "SQLite, 1 process", anchor["wake_p50"],
                note="answer sent on the other process: LISTEN/NOTIFY" if key == "pg-2"
                else ""),
        ]
    params = {"seconds": seconds, "concurrency": concurrency, "pairs": pairs,
              "load_average_1m": load_avg, "cpus": os.cpu_count(), "results": results}
    return rows, params


if __name__ == "__main__":
    import sys

    main(sys.modules[__name__])
