"""Agent Protocol throughput: task-create and step-execute at concurrency 32, the hub
against the reference implementation, side by side in one run.

Reference: PyPI ``agent-protocol`` 1.0.2 (in-memory, nothing durable) on Hypercorn with
trivial handlers (``bench/ap_reference_server.py``), in a venv of its own under the cache
folder (made with pip on first use). The hub: a real ``tickethub serve`` on SQLite (WAL),
every task and step committed before it is acknowledged.

For the step phase an agent worker that replies at once (``bench/ap_worker.py``) stands
in for the reference's trivial step handler, run two ways:

* in-hub (``TICKETHUB_AP_WORKER=bench.ap_worker:reply``): the door hands the step to the
  handler in the hub process, and the reply is stored with the step in one write. This is
  the like-for-like comparison (the reference's handler runs in its server too), and the
  one the goals apply to;
* as an SDK worker process (``serve_tasks``), for scale: a full round trip per step (the
  step is stored, the worker hears of it over the event stream, replies over HTTP, and
  the held request returns the completed step). Its CPU is hub plus worker.

Each phase keeps ``--concurrency`` keep-alive connections busy for ``--seconds`` in all
(in the step phases each connection drives its own task). The reference and the hub run
side by side and take turns, ``--ap-rounds`` rounds each with a short warm-up, so that
drift in the machine's speed (2 shared cores) falls on both alike. Server CPU per request
is user+system time of the server process(es) over the timed requests. Goals (issue 4):
at least 2x the reference's throughput, at most half its CPU per request.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.hub import HubProcess, stop_process
from bench.rawhttp import Connection
from bench.report import Goal, Row, percentile
from bench.runner import main, size
from tickethub.sdk.testing import free_port

NAME = "ap_throughput"
AP = "/ap/v1/agent/tasks"
REFERENCE = "agent-protocol==1.0.2"
SERVER_SCRIPT = Path(__file__).with_name("ap_reference_server.py")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--ap-seconds", type=float,
                       help="length of each timed phase [10; quick 2].")
    group.add_argument("--ap-concurrency", type=int, help="parallel connections [32].")
    group.add_argument("--ap-rounds", type=int, help="turns each server takes per phase "
                       "[4; quick 1].")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def reference_python() -> Path:
    """The Python of a venv with the reference implementation, made on first use."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    venv = Path(base) / "tickethub-bench" / "agent-protocol-1.0.2"
    python = venv / "bin" / "python"
    marker = venv / ".installed"
    if not marker.exists():
        print(f"   installing {REFERENCE} into {venv} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", REFERENCE], check=True)
        marker.write_text(REFERENCE + "\n")
    return python


class ReferenceProcess:
    """The reference server on a free loopback port, in a scratch working folder (it
    writes uploads under ./workspace)."""

    def __init__(self) -> None:
        self.host = "127.0.0.1"
        self.port = free_port()
        self.url = f"http://{self.host}:{self.port}"
        self._dir = tempfile.mkdtemp(prefix="ap-reference-")
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ReferenceProcess:
        self.proc = subprocess.Popen(
            [str(reference_python()), str(SERVER_SCRIPT), str(self.port)],
            cwd=self._dir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("the reference server exited: "
                                   + (self.proc.stderr.read().decode()[-2000:]
                                      if self.proc.stderr else ""))
            try:
                if httpx.get(self.url + AP, timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.__exit__()
        raise RuntimeError("the reference server did not start in time")

    def __exit__(self, *exc: object) -> None:
        stop_process(self.proc, 10)

    @property
    def pids(self) -> list[int]:
        assert self.proc is not None
        return [self.proc.pid]


class Phase:
    """One measured phase: requests per second, latencies, server CPU per request."""

    def __init__(self, rps: float, latencies: list[float], cpu: float, count: int) -> None:
        self.rps = rps
        self.latencies = latencies
        self.cpu_ms = cpu * 1000
        self.count = count

    @property
    def p99(self) -> float:
        return percentile(self.latencies, 99)

    @classmethod
    def merged(cls, parts: list[Phase]) -> Phase:
        """The rounds of one phase as one: requests over the summed timed seconds."""
        count = sum(p.count for p in parts)
        elapsed = sum(p.count / p.rps for p in parts if p.rps)
        cpu = sum(p.cpu_ms * p.count for p in parts) / 1000
        return cls(count / elapsed if elapsed else 0.0,
                   [x for p in parts for x in p.latencies], cpu / max(1, count), count)


async def _load(host: str, port: int, pids: list[int], concurrency: int, seconds: float,
                request: Callable[[int], tuple[str, str, Any]]) -> tuple[Phase, int]:
    """Keep ``concurrency`` connections busy for ``seconds`` after a warm-up; connection
    ``i`` sends ``request(i)`` again and again. Returns the phase and how many requests
    were acknowledged in all (warm-up included)."""
    conns = [await Connection.open(host, port) for _ in range(concurrency)]
    latencies: list[float] = []
    acked = 0
    counting = False
    stop_at = 0.0

    async def client(i: int, conn: Connection) -> None:
        nonlocal acked
        method, path, body = request(i)
        while time.perf_counter() < stop_at:
            start = time.perf_counter()
            r = await conn.request(method, path, body)
            if r.status != 200:
                raise RuntimeError(f"{method} {path}: {r.status} {r.body[:300]!r}")
            acked += 1
            if counting:
                latencies.append((time.perf_counter() - start) * 1000)

    def cpu() -> float:
        return sum(_cpu_seconds(pid) for pid in pids)

    try:
        stop_at = time.perf_counter() + min(1.0, seconds / 4)
        await asyncio.gather(*(client(i, c) for i, c in enumerate(conns)))  # warm-up
        counting = True
        cpu_before = cpu()
        started = time.perf_counter()
        stop_at = started + seconds
        await asyncio.gather(*(client(i, c) for i, c in enumerate(conns)))
        elapsed = time.perf_counter() - started
        used = cpu() - cpu_before
    finally:
        await asyncio.gather(*(c.close() for c in conns))
    n = len(latencies)
    return Phase(n / elapsed, latencies, used / max(1, n), n), acked


async def _tasks(url: str, count: int) -> list[str]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        return [(await client.post(AP, json={"input": f"bench task {i}"})).json()["task_id"]
                for i in range(count)]


async def _total_tasks(url: str) -> int:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        return int((await client.get(AP, params={"page_size": 1})).json()
                   ["pagination"]["total_items"])


CREATE_BODY = {"input": "Write the word 'Washington' to a .txt file",
               "additional_input": {"app_id": "bench"}}


class Server:
    """One server under load in a phase: where it is, whose CPU counts, its tasks."""

    def __init__(self, url: str, host: str, port: int, pids: list[int]) -> None:
        self.url, self.host, self.port, self.pids = url, host, port, pids
        self.tasks: list[str] = []
        self.acked = 0

    async def creates(self, concurrency: int, seconds: float) -> Phase:
        phase, acked = await _load(self.host, self.port, self.pids, concurrency, seconds,
                                   lambda i: ("POST", AP, CREATE_BODY))
        self.acked += acked
        return phase

    async def steps(self, concurrency: int, seconds: float) -> Phase:
        if not self.tasks:
            self.tasks = await _tasks(self.url, concurrency)
        phase, _ = await _load(
            self.host, self.port, self.pids, concurrency, seconds,
            lambda i: ("POST", f"{AP}/{self.tasks[i]}/steps", {"input": "next"}))
        return phase


async def _turns(servers: list[Server], measure: Callable[[Server], Any], rounds: int
                 ) -> list[Phase]:
    """``rounds`` turns of ``measure`` on each server in order; each server's merged."""
    parts: list[list[Phase]] = [[] for _ in servers]
    for _ in range(rounds):
        for i, server in enumerate(servers):
            parts[i].append(await measure(server))
    return [Phase.merged(p) for p in parts]


def _in_hub_worker_env() -> dict[str, str]:
    """The hub's environment for the in-hub worker: it imports ``bench.ap_worker``."""
    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    return {"TICKETHUB_AP_WORKER": "bench.ap_worker:reply", "PYTHONPATH": path}


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    seconds = size(args, "ap_seconds", 10.0, 2.0)
    concurrency = size(args, "ap_concurrency", 32, 32)
    rounds = max(1, size(args, "ap_rounds", 4, 1))
    turn = seconds / rounds

    env = {"TICKETHUB_AP_ANONYMOUS": "on"}
    with ReferenceProcess() as ref, HubProcess(env={**env, **_in_hub_worker_env()}) as hub:
        theirs = Server(ref.url, ref.host, ref.port, ref.pids)
        ours = Server(hub.url, hub.host, hub.port, [hub.pid])
        before = await _total_tasks(hub.url)
        h_create, r_create = await _turns(
            [ours, theirs], lambda s: s.creates(concurrency, turn), rounds)
        stored = await _total_tasks(hub.url) - before
        acked = ours.acked
        h_step, r_step = await _turns(
            [ours, theirs], lambda s: s.steps(concurrency, turn), rounds)
    with HubProcess(env=env) as hub:
        worker = subprocess.Popen(
            [sys.executable, "-m", "bench.ap_worker", hub.url, hub.responder_token],
            cwd=Path(__file__).resolve().parents[1], stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        try:
            await asyncio.sleep(1.5)  # the worker connects to the event stream
            if worker.poll() is not None:
                raise RuntimeError("the worker exited: " + (
                    worker.stderr.read().decode()[-2000:] if worker.stderr else ""))
            remote = Server(hub.url, hub.host, hub.port, [hub.pid, worker.pid])
            h_remote = await remote.steps(concurrency, seconds)
        finally:
            stop_process(worker, 10)
    if stored != acked:
        raise RuntimeError(f"{acked} task creates acknowledged but {stored} tasks stored")

    rows: list[Row] = []
    for phase, hub_side, ref_side, what, goals in (
            ("create", h_create, r_create, "task creates", True),
            ("step, in-hub worker", h_step, r_step, "step executes", True),
            ("step, SDK worker process", h_remote, r_step, "step executes", False)):
        rows += [
            Row(NAME, f"{phase}: req/s at concurrency {concurrency}", hub_side.rps, "req/s",
                Goal(">=", 2 * ref_side.rps) if goals else None, "agent-protocol 1.0.2 req/s",
                ref_side.rps,
                note=f"{hub_side.count:,} {what} timed (reference {ref_side.count:,})"),
            Row(NAME, f"{phase}: server CPU per request", hub_side.cpu_ms, "ms",
                Goal("<=", ref_side.cpu_ms / 2) if goals else None,
                "agent-protocol 1.0.2 CPU ms/req", ref_side.cpu_ms,
                note="" if goals else "hub + worker process; no goal (see module doc)"),
            Row(NAME, f"{phase}: latency p99", hub_side.p99, "ms", None,
                "agent-protocol 1.0.2 p99", ref_side.p99),
        ]
    rows[0] = Row(**{**rows[0].__dict__, "note": rows[0].note + (
        f"; all {acked:,} acknowledged creates (warm-up included) are stored")})
    params = {"seconds": seconds, "concurrency": concurrency, "rounds": rounds,
              "reference": REFERENCE,
              "hub": {"create_rps": h_create.rps, "create_cpu_ms": h_create.cpu_ms,
                      "create_p99_ms": h_create.p99, "step_rps": h_step.rps,
                      "step_cpu_ms": h_step.cpu_ms, "step_p99_ms": h_step.p99,
                      "sdk_worker_step_rps": h_remote.rps,
                      "sdk_worker_step_cpu_ms": h_remote.cpu_ms,
                      "sdk_worker_step_p99_ms": h_remote.p99},
              "reference_server": {
                  "create_rps": r_create.rps, "create_cpu_ms": r_create.cpu_ms,
                  "create_p99_ms": r_create.p99, "step_rps": r_step.rps,
                  "step_cpu_ms": r_step.cpu_ms, "step_p99_ms": r_step.p99}}
    return rows, params


if __name__ == "__main__":
    main(sys.modules[__name__])
