"""Concurrent waiters: many agents parked on one server process, woken in one burst.

Against a real ``tickethub serve`` process (SQLite): ``--waiters`` tickets are asked,
each gets its own connection long-polling ``GET .../wait?timeout=60``; once ``/healthz``
counts them all parked and the server has gone quiet (their first reads done), the
server's resident memory (``VmRSS``) is read. Then ``--answerers`` parallel connections
answer every ticket as fast as the server takes it. Goals (issue 15): 5,000 waiters in
<= 600 MB, all holding their answers within 2 s of the first answer sent, and all woken
within 1 s of a shared deadline.

Reported: the RSS with everyone parked (anchor: the same server idle, before the
waiters); the burst (time to get all answers accepted); the wake lag from the last
accepted answer to the last waiter woken; and the total from the first answer sent to
the last waiter woken (the goal), bounded by how fast the hub durably writes answers and
answers their waiters: the server's CPU per answer (in the note), and how much of it the
write transactions took (the group commits' seconds, read from the hub's ``/metrics``).
Asking and parking them is reported too: the server's CPU for it and how long Python's
garbage collector stopped the hub meanwhile (``tickethub_gc_pause_seconds``; the heap
grows by every parked waiter, so its full passes grow with it: ``ops/collector.py``).
Beside the round's time stands the share of CPU the machine's host took meanwhile
(``bench/machine.py``: steal in ``/proc/stat``): on a shared virtual machine it moves the
round more than most changes to the code do.

A second round (skip with ``--no-deadline-burst``) lets the hub resolve them all at
once itself: a fresh set of tickets shares one ``due_at``, their waiters park, and the
deadline loop expires them (in batches of one transaction each) and wakes everyone;
reported is the time from ``due_at`` to the last waiter woken.

``--deadline-only`` runs just that round, ``--turns`` times, on a fresh hub each turn;
without it, ``--against SRC`` runs the answer round that way (alternating); with it,
``--against SRC`` (another checkout's ``src`` folder, e.g. the code before a change)
the turns alternate between a hub running that code and one running this checkout's,
and the rows compare them (medians; the anchor is the other code). ``--workers N`` with
``--pg-url`` (or ``SQLALCHEMY_URL``) runs ``serve --workers N`` on a fresh PostgreSQL
database: the waiters spread over the processes, each expires what it claims (``SKIP
LOCKED``) and wakes the others' waiters through LISTEN/NOTIFY; memory and CPU are
summed over the processes.

The time anchor is HumanLayer's 3 s poll interval: a polling client learns of an answer
up to one interval later, even if the server kept up with 5,000 pollers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench.http_floor import floor_round
from bench.hub import HubProcess, raise_open_files_limit
from bench.machine import cpu_ticks, steal_share, steal_words
from bench.multi_process import fresh_database
from bench.rawhttp import Connection
from bench.report import Goal, Row, median_of_turns, percentile
from bench.runner import main, size

NAME = "concurrent_waiters"
ANCHOR_INTERVAL = 3.0
ANSWER_GOAL = 2.0  # seconds from the first answer sent to the last waiter woken
MB = 1024 * 1024
WAIT_TIMEOUT = 60  # the longest long-poll the API allows; timed-out polls are repeated
PARK_LIMIT = 180
SETTLE_WINDOW = 0.5  # seconds of server CPU watched after parking ...
SETTLED_CPU = 0.1  # ... and the share of one core below which it counts as settled


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--waiters", type=int, help="parked long-polls [5000; quick 500].")
    group.add_argument("--answerers", type=int,
                       help="parallel answer connections in the burst [8].")
    group.add_argument("--no-deadline-burst", dest="deadline_burst", action="store_false",
                       help="skip the round where one shared deadline resolves them all.")
    group.add_argument("--no-floor", dest="floor", action="store_false",
                       help="skip the answer round's HTTP floor (bench/http_floor.py): the "
                            "same round on a server that does nothing but HTTP.")
    group.add_argument("--deadline-only", action="store_true",
                       help="only the shared-deadline round, --turns times.")
    group.add_argument("--turns", type=int,
                       help="rounds, each on a fresh hub: with --deadline-only or --against "
                            "[3]; else the answer round alone, N times, reported as its "
                            "median and how many turns met the 2 s goal [1: one full run].")
    group.add_argument("--against", metavar="SRC",
                       help="alternate turns (--turns) with a hub running the "
                            "code in SRC (a checkout's src folder), the anchor.")
    group.add_argument("--workers", type=int, default=1,
                       help="hub processes (serve --workers; needs PostgreSQL) [1].")
    group.add_argument("--against-workers", type=int, metavar="N",
                       help="with --deadline-only: alternate turns with a hub of N "
                            "processes (N > 1: on PostgreSQL), the anchor.")
    group.add_argument("--pg-url", help="PostgreSQL server for the hub [$SQLALCHEMY_URL "
                                        "when --workers > 1; else SQLite].")


async def _in_parallel(conns: list[Connection], jobs: list[Any], one: Any) -> list[Any]:
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


async def _ask_all(hub: HubProcess, count: int, extra: dict[str, Any] | None = None
                   ) -> list[int]:
    conns = [await Connection.open(hub.host, hub.port, hub.agent_token) for _ in range(16)]

    async def ask(conn: Connection, n: int) -> int:
        r = await conn.request("POST", "/api/v1/tickets", {"title": f"waiter {n}", **(extra or {})})
        if r.status != 201:
            raise RuntimeError(f"ask failed: {r.status} {r.body[:200]!r}")
        return int(r.json()["id"])

    try:
        return await _in_parallel(conns, list(range(count)), ask)
    finally:
        await asyncio.gather(*(c.close() for c in conns))


async def _parked(hub: HubProcess) -> int:
    """Waiters parked in all the hub's processes (``/healthz`` counts those of the
    process answering; new connections until every process answered)."""
    processes = max(1, len(hub.worker_pids()))
    counts: dict[int, int] = {}
    for _ in range(50 * processes):
        async with httpx.AsyncClient(base_url=hub.url, timeout=120) as client:
            health = (await client.get("/healthz")).json()
        counts[health["pid"]] = health["waiters"]
        if len(counts) >= processes:
            break
    return sum(counts.values())


def _processes(hub: HubProcess) -> list[int]:
    return [hub.pid, *hub.worker_pids()]


def _runnable(hub: HubProcess) -> bool:
    """Whether a thread of the hub is running or waiting for a CPU now (state ``R``)."""
    for pid in _processes(hub):
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                if (task / "stat").read_text().rsplit(")", 1)[1].split()[0] == "R":
                    return True
            except OSError:
                continue  # the thread ended
    return False


def _rss(hub: HubProcess) -> int:
    """Resident memory of the hub, summed over its processes, in bytes."""
    total = 0
    for pid in _processes(hub):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    return total


class Waiters:
    """One connection per ticket, each long-polling its ticket's ``/wait``."""

    def __init__(self, hub: HubProcess, ids: list[int]) -> None:
        self.hub = hub
        self.ids = ids
        self.woken_at = [0.0] * len(ids)
        self.statuses = [""] * len(ids)
        self.repolls = 0
        self._conns: list[Connection] = []
        self._tasks: list[asyncio.Task[None]] = []

    async def park(self) -> float:
        """Open the connections, send every wait, and return the seconds until
        ``/healthz`` counts them all parked."""
        started = time.perf_counter()
        gate = asyncio.Semaphore(200)

        async def connect() -> Connection:
            async with gate:
                return await Connection.open(self.hub.host, self.hub.port,
                                             self.hub.agent_token)

        self._conns = list(await asyncio.gather(*(connect() for _ in self.ids)))
        for conn, ticket_id in zip(self._conns, self.ids, strict=True):
            conn.send("GET", f"/api/v1/tickets/{ticket_id}/wait?timeout={WAIT_TIMEOUT}")
        self._tasks = [asyncio.create_task(self._wait(i, c)) for i, c in enumerate(self._conns)]
        while time.perf_counter() - started < PARK_LIMIT:
            if await _parked(self.hub) >= len(self.ids):
                break
            await asyncio.sleep(0.2)
        else:
            raise RuntimeError(f"not all {len(self.ids)} waiters parked in {PARK_LIMIT} s")
        # A waiter counts as parked once registered, before it reads its ticket; wait for
        # the server to finish those reads, so the timed round does not pay for them.
        # On a loaded machine a starved server uses little CPU while it still has reads
        # to do: settled also means none of its threads was runnable all window long.
        while time.perf_counter() - started < PARK_LIMIT:
            cpu = self.hub.cpu_seconds()
            runnable = False
            for _ in range(10):
                await asyncio.sleep(SETTLE_WINDOW / 10)
                runnable = runnable or _runnable(self.hub)
            if not runnable and self.hub.cpu_seconds() - cpu < SETTLE_WINDOW * SETTLED_CPU:
                return time.perf_counter() - started
        raise RuntimeError(f"the server did not settle after parking in {PARK_LIMIT} s")

    async def _wait(self, i: int, conn: Connection) -> None:
        while True:
            r = await conn.receive()
            if r.status == 200 and r.headers.get("x-tickethub-timed-out") == "true":
                # Like the SDK: a long-poll that timed out is simply made again.
                self.repolls += 1
                conn.send("GET", f"/api/v1/tickets/{self.ids[i]}/wait?timeout={WAIT_TIMEOUT}")
                continue
            break
        self.woken_at[i] = time.perf_counter()
        self.statuses[i] = r.json()["status"] if r.status == 200 else f"http {r.status}"

    @property
    def returned(self) -> int:
        return sum(1 for s in self.statuses if s)

    async def all_woken(self, expected_status: str) -> float:
        """Wait for every waiter; the time the last one held its response."""
        await asyncio.wait_for(asyncio.gather(*self._tasks), PARK_LIMIT)
        wrong = [s for s in self.statuses if s != expected_status]
        if wrong:
            raise RuntimeError(f"{len(wrong)} waiters woke without status {expected_status},"
                               f" e.g. {wrong[0]}")
        return max(self.woken_at)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.gather(*(c.close() for c in self._conns))


async def _answer_burst(hub: HubProcess, count: int, answerers: int) -> dict[str, Any]:
    gc_before, cpu_before = _gc_pauses(hub), hub.cpu_seconds()
    asked_at = time.perf_counter()
    ids = await _ask_all(hub, count)
    ask_seconds = time.perf_counter() - asked_at
    asked_rss = _rss(hub)
    waiters = Waiters(hub, ids)
    park_seconds = await waiters.park()
    park_cpu = hub.cpu_seconds() - cpu_before
    gc_park = _gc_grew(gc_before, _gc_pauses(hub))
    await asyncio.sleep(1)  # let the allocator settle before reading memory
    parked_rss = _rss(hub)
    if waiters.returned:
        raise RuntimeError(f"{waiters.returned} waiters returned before any answer")

    conns = [await Connection.open(hub.host, hub.port, hub.responder_token)
             for _ in range(answerers)]
    sent_at = [0.0] * count
    body_bytes = [0]  # an answer's response: the HTTP floor's responses are as long

    async def answer(conn: Connection, i: int) -> None:
        sent_at[i] = time.perf_counter()
        r = await conn.request("POST", f"/api/v1/tickets/{ids[i]}/answer", {"text": "go"})
        if r.status != 200:
            raise RuntimeError(f"answer failed: {r.status} {r.body[:200]!r}")
        body_bytes[0] = len(r.body)

    # For a profiler to attach first (py-spy record --pid ...), as for the deadline round.
    print(f"   answer burst next; hub pids {' '.join(str(p) for p in _processes(hub))}",
          flush=True)
    await asyncio.sleep(float(os.environ.get("BENCH_PROFILE_PAUSE", "0")))
    load = os.getloadavg()[0]
    commits_before = hub.metric_sums()
    cpu_before, client_before = hub.cpu_seconds(), time.process_time()
    ticks_before = cpu_ticks()
    burst_start = time.perf_counter()
    await _in_parallel(conns, list(range(count)), answer)
    burst_end = time.perf_counter()
    last_woken = await waiters.all_woken("answered")
    steal = steal_share(ticks_before, cpu_ticks())
    burst_cpu = hub.cpu_seconds() - cpu_before
    client_cpu = time.process_time() - client_before
    commits = _commits(commits_before, hub.metric_sums())
    await waiters.close()
    await asyncio.gather(*(c.close() for c in conns))
    per_wake = [(waiters.woken_at[i] - sent_at[i]) * 1000 for i in range(count)]
    return {"ask_seconds": ask_seconds, "asked_rss": asked_rss, "parked_rss": parked_rss,
            "park_seconds": park_seconds, "burst": burst_end - burst_start,
            "lag": last_woken - burst_end, "total": last_woken - min(sent_at),
            "burst_cpu": burst_cpu, "client_cpu": client_cpu, "load": load, "steal": steal,
            "per_wake": per_wake, "repolls": waiters.repolls, "body_bytes": body_bytes[0],
            "park_cpu": park_cpu, **gc_park, **commits}


GC_SERIES = "tickethub_gc_pause_seconds"


def _gc_pauses(hub: HubProcess) -> dict[str, float]:
    """The hub's garbage collector pauses so far (``tickethub_gc_pause_seconds``:
    ``count``, ``sum`` and each bucket's cumulative count by its bound; all 0 for a hub
    whose code has no such series, e.g. an older ``--against``)."""
    found: dict[str, float] = {}
    for sample in hub.metric_samples():
        if sample.name == GC_SERIES + "_bucket":
            found[sample.labels["le"]] = sample.value
        elif sample.name in (GC_SERIES + "_count", GC_SERIES + "_sum"):
            found[sample.name.rpartition("_")[2]] = sample.value
    return found


def _gc_grew(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """The pauses between two ``_gc_pauses``: how many, their seconds, and the bound
    of the smallest bucket holding them all (the longest pause is at most that)."""
    count = after.get("count", 0.0) - before.get("count", 0.0)
    bounds = sorted((float(le), n - before.get(le, 0.0)) for le, n in after.items()
                    if le not in ("count", "sum"))
    longest = next((bound for bound, n in bounds if n >= count), 0.0) if count else 0.0
    return {"gc_count": count, "gc_seconds": after.get("sum", 0.0) - before.get("sum", 0.0),
            "gc_longest": longest}


def _commits(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """What the round's group commits took, from two scrapes of the hub's metrics: how
    many transactions, their mean batch and their seconds (on SQLite they run on the
    event loop's thread, so those are seconds of the hub's one busy core)."""
    def grew(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    count = grew("tickethub_group_commit_seconds_count")
    return {"commits": count, "commit_seconds": grew("tickethub_group_commit_seconds_sum"),
            "commit_batch": grew("tickethub_group_commit_batch_size_sum") / count
            if count else 0.0}


async def _deadline_burst(hub: HubProcess, count: int, lead: float | None
                          ) -> dict[str, Any]:
    """Tickets sharing one ``due_at`` ``lead`` seconds from now (time to ask them all
    and park their waiters before it; ``None``: estimated from 200 asks first)."""
    if lead is None:
        probe = time.perf_counter()
        await _ask_all(hub, 200)
        ask_estimate = (time.perf_counter() - probe) * count / 200
        lead = _lead(ask_estimate, ask_estimate * 3 + 10)
    due_wall = time.time() + lead
    due_perf = time.perf_counter() + lead
    due_at = datetime.fromtimestamp(due_wall, UTC).isoformat()
    # For a profiler to attach in time (py-spy record --pid ... at due_at).
    print(f"   shared due_at {due_wall:.3f} (unix time); hub pids "
          f"{' '.join(str(p) for p in _processes(hub))}", flush=True)
    asked_at = time.perf_counter()
    ids = await _ask_all(hub, count, {"due_at": due_at})
    ask_seconds = time.perf_counter() - asked_at
    waiters = Waiters(hub, ids)
    park_seconds = await waiters.park()
    if waiters.returned or time.perf_counter() >= due_perf:
        await waiters.close()
        raise RuntimeError("the machine was too slow to park every waiter before the shared"
                           " deadline; rerun with fewer --waiters")
    parked_rss = _rss(hub)
    idle_before = due_perf - time.perf_counter()
    load = os.getloadavg()[0]
    cpu_before, client_before = hub.cpu_seconds(), time.process_time()
    last_woken = await waiters.all_woken("expired")
    cpu = hub.cpu_seconds() - cpu_before  # the round's, not closing the connections after
    client_cpu = time.process_time() - client_before
    first_woken = min(waiters.woken_at)
    await waiters.close()
    return {"first": first_woken - due_perf, "last": last_woken - due_perf,
            "cpu": cpu, "client_cpu": client_cpu, "slack": idle_before,
            "repolls": waiters.repolls, "parked_rss_mb": parked_rss / MB, "load": load,
            "ask_seconds": ask_seconds, "park_seconds": park_seconds}


def _lead(ask_seconds: float, park_seconds: float) -> float:
    """Seconds from asking to the shared ``due_at``: room to ask and park everyone, but
    not so much that the first parked long-polls time out (60 s) and poll again."""
    return min(ask_seconds * 1.5 + 2 + park_seconds * 1.5 + 5, ask_seconds * 1.2 + 50)


def _turns(args: argparse.Namespace) -> int:
    """``--turns``, or 3 when not given (a run with several turns: ``--deadline-only``,
    ``--against``)."""
    return args.turns or 3


@contextmanager
def _hub(args: argparse.Namespace, src: str | None = None, workers: int | None = None
         ) -> Iterator[HubProcess]:
    """A fresh hub as the flags say (SQLite, or PostgreSQL with ``--workers``), running
    the code in ``src`` if given, with ``workers`` processes (else ``--workers``)."""
    # Metrics on: the answer round reads how long the group commits took.
    env = {"TICKETHUB_METRICS": "true", **({"PYTHONPATH": src} if src else {})}
    workers = workers or args.workers
    pg = args.pg_url or (os.environ.get("SQLALCHEMY_URL") if workers > 1 else None)
    if workers > 1 and not pg:
        raise RuntimeError("--workers needs PostgreSQL: --pg-url or SQLALCHEMY_URL")
    if pg:
        with fresh_database(pg) as url, HubProcess(env=env, database_url=url,
                                                   workers=workers) as hub:
            yield hub
    else:
        with HubProcess(env=env) as hub:
            yield hub


async def _deadline_turns(args: argparse.Namespace, count: int
                          ) -> tuple[list[Row], dict[str, Any]]:
    sides: list[tuple[str, str | None, int | None]] = [("this code", None, None)]
    if args.against:
        sides = [("against", str(Path(args.against).resolve()), None), *sides]
    elif args.against_workers:
        sides = [("against", None, args.against_workers), *sides]
    rounds: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in sides}
    leads: dict[str, float] = {}  # each side's, once a turn measured it
    for turn in range(_turns(args)):
        for label, src, workers in sides:
            with _hub(args, src, workers) as hub:
                d = await _deadline_burst(hub, count, leads.get(label))
            leads[label] = _lead(d["ask_seconds"], d["park_seconds"])
            rounds[label].append(d)
            print(f"   turn {turn + 1} {label}: due -> first {d['first'] * 1000:.0f} ms, "
                  f"all {d['last'] * 1000:.0f} ms; server CPU {d['cpu']:.2f} s; "
                  f"RSS {d['parked_rss_mb']:.0f} MB; load {d['load']:.1f}; "
                  f"{d['repolls']} long-polls repeated", flush=True)
    rows = []
    anchor = rounds.get("against")
    where = (f"{args.workers} processes on PostgreSQL" if args.workers > 1
             else "PostgreSQL" if args.pg_url else "SQLite")

    def med(side: list[dict[str, Any]], key: str) -> float:
        return median_of_turns([d[key] for d in side])

    mine = rounds["this code"]
    note = (f"{count:,} waiters, {where}, median of {len(mine)} turns; first waiter "
            f"{med(mine, 'first') * 1000:.0f} ms; server CPU {med(mine, 'cpu'):.2f} s; "
            f"RSS {max(d['parked_rss_mb'] for d in mine):.0f} MB; load "
            f"{min(d['load'] for d in mine):.1f}-{max(d['load'] for d in mine):.1f} on "
            f"{os.cpu_count()} cores")
    if anchor:
        note += (f"; against: all {med(anchor, 'last'):.2f} s, first "
                 f"{med(anchor, 'first') * 1000:.0f} ms, CPU {med(anchor, 'cpu'):.2f} s")
    rows.append(Row(NAME, "shared deadline -> all woken", med(mine, "last"), "s",
                    Goal("<=", 1), "against" if anchor else "3 s poll interval",
                    med(anchor, "last") if anchor else ANCHOR_INTERVAL, note=note))
    rows.append(Row(NAME, "shared deadline, server CPU", med(mine, "cpu"), "s", None,
                    "against" if anchor else None, med(anchor, "cpu") if anchor else None))
    rows.append(Row(NAME, f"server RSS, {count:,} parked",
                    max(d["parked_rss_mb"] for d in mine), "MB", Goal("<=", 600)))
    return rows, {"waiters": count, "workers": args.workers, "where": where,
                  "against": args.against or args.against_workers, "rounds": rounds}


async def _answer_turns(args: argparse.Namespace, count: int, answerers: int
                        ) -> tuple[list[Row], dict[str, Any]]:
    """The answer round, ``--turns`` times on a fresh hub each, alternating with a hub on
    ``--against``'s code when given; medians reported (compared), and how many of this
    code's turns met the goal: on a shared, noisy machine one run says little."""
    sides: list[tuple[str, str | None]] = [("this code", None)]
    if args.against:
        sides = [("against", str(Path(args.against).resolve())), *sides]
    rounds: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in sides}
    floors: list[dict[str, float]] = []
    for turn in range(_turns(args)):
        for label, src in sides:
            with _hub(args, src) as hub:
                a = await _answer_burst(hub, count, answerers)
            a = {k: v for k, v in a.items() if k != "per_wake"}
            rounds[label].append(a)
            print(f"   turn {turn + 1} {label}: first answer -> all woken {a['total']:.2f} s;"
                  f" burst {a['burst']:.2f} s; server CPU {a['burst_cpu']:.2f} s, write "
                  f"transactions {a['commit_seconds']:.2f} s; RSS "
                  f"{a['parked_rss'] / MB:.0f} MB; load {a['load']:.1f}, "
                  f"{steal_words(a['steal'])}; asking and "
                  f"parking {a['ask_seconds'] + a['park_seconds']:.1f} s, server CPU "
                  f"{a['park_cpu']:.1f} s, {_gc_words(a)}", flush=True)
        if args.floor:
            floors.append(await floor_round(count, answerers, a["body_bytes"]))
            print(f"   turn {turn + 1} HTTP floor: first answer -> all woken "
                  f"{floors[-1]['total']:.2f} s; server CPU {floors[-1]['cpu']:.2f} s",
                  flush=True)

    def med(side: str, key: str) -> float:
        return median_of_turns([d[key] for d in rounds[side]])

    anchor = "against" if args.against else None

    def against(key: str) -> float | None:
        return med("against", key) if anchor else None

    mine = rounds["this code"]
    totals = [d["total"] for d in mine]
    met = _within(mine)
    note = (f"{count:,} waiters, {answerers} answerers, SQLite, median of {len(mine)} "
            f"turns (each: {', '.join(f'{t:.2f}' for t in totals)} s); write transactions "
            f"{med('this code', 'commit_seconds'):.2f} s of the server CPU"
            + (f" (against: {against('commit_seconds'):.2f} s)" if anchor else "")
            + f"; load {min(d['load'] for d in mine):.1f}-"
            f"{max(d['load'] for d in mine):.1f} on {os.cpu_count()} cores")
    rows = [Row(NAME, "first answer sent -> all woken", med("this code", "total"), "s",
                Goal("<=", ANSWER_GOAL), anchor or "3 s poll interval",
                against("total") if anchor else ANCHOR_INTERVAL, note=note),
            Row(NAME, f"answer rounds within {ANSWER_GOAL:g} s", met, "turns", None,
                note=_within_words(mine, rounds.get("against"), floors)),
            Row(NAME, "answer burst, server CPU", med("this code", "burst_cpu"), "s", None,
                anchor, against("burst_cpu")),
            Row(NAME, f"server RSS, {count:,} parked",
                max(d["parked_rss"] for d in mine) / MB, "MB", Goal("<=", 600)),
            Row(NAME, f"asking {count:,} and parking them, server CPU",
                med("this code", "park_cpu"), "s", None, anchor, against("park_cpu"),
                note=f"this code: {_gc_words(mine[-1])} (last turn)"),
            *_floor_rows(med("this code", "total"), med("this code", "burst_cpu"),
                         {key: median_of_turns([f[key] for f in floors])
                          for key in ("total", "cpu")} if floors else None)]
    return rows, {"waiters": count, "answerers": answerers, "against": args.against,
                  "rounds": rounds, "http_floor": floors}


def _within(turns: list[dict[str, Any]]) -> int:
    """How many answer rounds met the goal."""
    return sum(turn["total"] <= ANSWER_GOAL for turn in turns)


def _within_words(mine: list[dict[str, Any]], against: list[dict[str, Any]] | None,
                  floors: list[dict[str, float]]) -> str:
    """The note of the turns-within-the-goal row: of how many, the slowest (and the CPU
    time the machine's host took meanwhile), the anchor's count and the HTTP floor's
    range (how fast the machine was from turn to turn)."""
    slowest = max(mine, key=lambda turn: turn["total"])
    words = f"of {len(mine)}; the slowest {slowest['total']:.2f} s"
    if slowest.get("steal") is not None:
        words += f" ({steal_words(slowest['steal'])})"
    if against:
        words += f"; against: {_within(against)} of {len(against)}"
    if floors:
        words += (f"; HTTP floor {min(f['total'] for f in floors):.2f}-"
                  f"{max(f['total'] for f in floors):.2f} s")
    return words


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    count = size(args, "waiters", 5000, 500)
    answerers = size(args, "answerers", 8, 8)
    raise_open_files_limit(2 * count + 1000)  # the server (a child) inherits it
    if args.deadline_only:
        return await _deadline_turns(args, count)
    if args.against or (args.turns or 1) > 1:
        return await _answer_turns(args, count, answerers)
    with _hub(args) as hub:
        idle_rss = _rss(hub)
        a = await _answer_burst(hub, count, answerers)
        peak_rss = hub.peak_rss()
        d = None
        if args.deadline_burst:
            d = await _deadline_burst(hub, count, _lead(a["ask_seconds"], a["park_seconds"]))
    floor = await floor_round(count, answerers, a["body_bytes"]) if args.floor else None

    per_wake = a["per_wake"]
    rows = [
        Row(NAME, f"server RSS, {count:,} parked", a["parked_rss"] / MB, "MB", Goal("<=", 600),
            "idle server RSS", idle_rss / MB,
            note=(f"{(a['parked_rss'] - a['asked_rss']) / count / 1024:.1f} KB per parked "
                  f"waiter; peak RSS {peak_rss / MB:.0f} MB; parking all took "
                  f"{a['park_seconds']:.1f} s; asking and parking took the server "
                  f"{a['park_cpu']:.1f} s of CPU, {_gc_words(a)}")),
        Row(NAME, "wake lag after last answer", a["lag"] * 1000, "ms", Goal("<=", 2000),
            "3 s poll interval", ANCHOR_INTERVAL * 1000,
            note="last answer accepted (committed) -> last waiter holding its response; "
                 "negative when the last waiter had its response before the responder had "
                 "the answer's"),
        Row(NAME, "first answer sent -> all woken", a["total"], "s", Goal("<=", ANSWER_GOAL),
            "3 s poll interval", ANCHOR_INTERVAL,
            note=(f"strict reading of the goal: includes writing all {count:,} answers "
                  f"({answerers} connections, {count / a['burst']:,.0f} answers/s, server "
                  f"CPU {a['burst_cpu']:.1f} s = {a['burst_cpu'] / count * 1000:.1f} ms per "
                  f"answer, of which write transactions {a['commit_seconds']:.1f} s: "
                  f"{a['commits']:,.0f} commits of {a['commit_batch']:.1f} answers on "
                  f"average; bench client CPU {a['client_cpu']:.1f} s; load average "
                  f"{a['load']:.1f} on {os.cpu_count()} cores, {steal_words(a['steal'])}; "
                  f"{a['repolls']} long-polls "
                  f"timed out after 60 s and were made again)")),
        Row(NAME, "answer burst", a["burst"], "s", None, "3 s poll interval", ANCHOR_INTERVAL),
        *_floor_rows(a["total"], a["burst_cpu"], floor),
        Row(NAME, "per-waiter wake p50", percentile(per_wake, 50), "ms", None,
            "3 s poll p50", ANCHOR_INTERVAL / 2 * 1000,
            note="each waiter: its answer request sent -> its response held (p99 "
                 f"{percentile(per_wake, 99):.0f} ms)"),
    ]
    if d is not None:
        rows.append(Row(
            NAME, "shared deadline -> all woken", d["last"], "s", Goal("<=", 1),
            "3 s poll interval", ANCHOR_INTERVAL,
            note=(f"{count:,} tickets with one due_at, expired by the hub's deadline loop; "
                  f"first waiter woke {d['first'] * 1000:.0f} ms after due_at; server CPU "
                  f"{d['cpu']:.1f} s; bench client CPU {d['client_cpu']:.1f} s; "
                  f"{d['repolls']} long-polls repeated after 60 s")))
    params = {"waiters": count, "answerers": answerers, "idle_rss_mb": idle_rss / MB,
              "asked_rss_mb": a["asked_rss"] / MB, "parked_rss_mb": a["parked_rss"] / MB,
              "peak_rss_mb": peak_rss / MB, "park_seconds": a["park_seconds"],
              "park_server_cpu_seconds": a["park_cpu"], "park_gc": {
                  "count": a["gc_count"], "seconds": a["gc_seconds"],
                  "longest_at_most": None if a["gc_longest"] == float("inf")
                  else a["gc_longest"]},
              "burst_seconds": a["burst"], "wake_lag_seconds": a["lag"],
              "total_seconds": a["total"], "burst_server_cpu_seconds": a["burst_cpu"],
              "burst_commits": a["commits"], "burst_commit_seconds": a["commit_seconds"],
              "burst_commit_batch": a["commit_batch"], "burst_cpu_steal": a["steal"],
              "per_waiter_wake_ms": {"p50": percentile(per_wake, 50),
                                     "p99": percentile(per_wake, 99), "max": max(per_wake)},
              "deadline_burst": d, "http_floor": floor}
    return rows, params


def _gc_words(a: dict[str, Any]) -> str:
    longest = a["gc_longest"]  # a bucket's bound: +Inf past the last one (1 s)
    return (f"garbage collector {a['gc_seconds']:.2f} s in {a['gc_count']:,.0f} pauses, the "
            + (f"longest <= {longest * 1000:.0f} ms" if longest != float("inf") else
               "longest over 1 s"))


def _floor_rows(total: float, cpu: float, floor: dict[str, float] | None) -> list[Row]:
    """The round against its HTTP floor (``bench/http_floor.py``), if it was run: how
    many times the floor's time and server CPU the hub's took."""
    if floor is None:
        return []
    return [Row(NAME, "answer round, against its HTTP floor", total, "s", None,
                "HTTP floor", floor["total"],
                note="the same round on uvicorn with an app that only parks and answers "
                     "(no token, validation, write or rendering): what HTTP alone takes "
                     "on this machine"),
            Row(NAME, "answer round server CPU, against its HTTP floor", cpu, "s", None,
                "HTTP floor", floor["cpu"])]


if __name__ == "__main__":
    import sys

    main(sys.modules[__name__])
