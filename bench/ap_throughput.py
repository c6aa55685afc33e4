"""Agent Protocol throughput: task-create and step-execute at concurrency 32, the hub
against the reference implementation, side by side in one run.

Reference: PyPI ``agent-protocol`` 1.0.2 (in-memory, nothing durable) on Hypercorn with
trivial handlers (``bench/ap_reference_server.py``), in a venv of its own under the cache
folder (made with pip on first use). The hub: a real ``tickethub serve`` on SQLite (WAL),
every task and step committed before it is acknowledged; for the step phase an agent
worker process (``bench/ap_worker.py``, the SDK's ``serve_tasks``) replies to each step at
once, standing in for the reference's trivial step handler, so a hub step is a full
round trip: the step is stored, the worker hears of it over the event stream, reads it,
replies, and the held request returns the completed step.

Each phase keeps ``--concurrency`` keep-alive connections busy for ``--seconds`` after a
short warm-up (in the step phase each connection drives its own task). Server CPU per
request is user+system time of the server process (for the hub's step phase: hub plus
worker) over the timed requests. Goals (issue 4): at least 2x the reference's
throughput, at most half its CPU per request.
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

from bench.hub import HubProcess
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
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

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


async def _measure(url: str, host: str, port: int, pids: Callable[[], list[int]],
                   concurrency: int, seconds: float) -> tuple[Phase, Phase, int, int]:
    create_body = {"input": "Write the word 'Washington' to a .txt file",
                   "additional_input": {"app_id": "bench"}}
    before = await _total_tasks(url)
    create, acked = await _load(host, port, pids(), concurrency, seconds,
                                lambda i: ("POST", AP, create_body))
    stored = await _total_tasks(url) - before
    tasks = await _tasks(url, concurrency)
    step, _ = await _load(host, port, pids(), concurrency, seconds,
                          lambda i: ("POST", f"{AP}/{tasks[i]}/steps", {"input": "next"}))
    return create, step, acked, stored


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    seconds = size(args, "ap_seconds", 10.0, 2.0)
    concurrency = size(args, "ap_concurrency", 32, 32)

    with ReferenceProcess() as ref:
        r_create, r_step, _, _ = await _measure(ref.url, ref.host, ref.port, lambda: ref.pids,
                                                concurrency, seconds)

    env = {"TICKETHUB_AP_ANONYMOUS": "on"}
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
            h_create, h_step, acked, stored = await _measure(
                hub.url, hub.host, hub.port, lambda: [hub.pid, worker.pid], concurrency,
                seconds)
        finally:
            worker.terminate()
            worker.wait(10)
    if stored != acked:
        raise RuntimeError(f"{acked} task creates acknowledged but {stored} tasks stored")

    rows: list[Row] = []
    for phase, ours, theirs, what in (("create", h_create, r_create, "task creates"),
                                      ("step", h_step, r_step, "step executes")):
        rows += [
            Row(NAME, f"{phase}: req/s at concurrency {concurrency}", ours.rps, "req/s",
                Goal(">=", 2 * theirs.rps), "agent-protocol 1.0.2 req/s", theirs.rps,
                note=f"{ours.count:,} {what} timed (reference {theirs.count:,})"),
            Row(NAME, f"{phase}: server CPU per request", ours.cpu_ms, "ms",
                Goal("<=", theirs.cpu_ms / 2), "agent-protocol 1.0.2 CPU ms/req",
                theirs.cpu_ms,
                note="hub + worker process" if phase == "step" else ""),
            Row(NAME, f"{phase}: latency p99", ours.p99, "ms", None,
                "agent-protocol 1.0.2 p99", theirs.p99),
        ]
    rows[0] = Row(**{**rows[0].__dict__, "note": rows[0].note + (
        f"; all {acked:,} acknowledged creates (warm-up included) are stored")})
    params = {"seconds": seconds, "concurrency": concurrency, "reference": REFERENCE,
              "hub": {"create_rps": h_create.rps, "create_cpu_ms": h_create.cpu_ms,
                      "create_p99_ms": h_create.p99, "step_rps": h_step.rps,
                      "step_cpu_ms": h_step.cpu_ms, "step_p99_ms": h_step.p99},
              "reference_server": {
                  "create_rps": r_create.rps, "create_cpu_ms": r_create.cpu_ms,
                  "create_p99_ms": r_create.p99, "step_rps": r_step.rps,
                  "step_cpu_ms": r_step.cpu_ms, "step_p99_ms": r_step.p99}}
    return rows, params


if __name__ == "__main__":
    main(sys.modules[__name__])
