"""``tickethub serve --workers N`` as a test starts it: a real supervisor and its worker
processes on one port, and keep-alive connections to a chosen worker."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from bench.hub import child_pids

from tests.conftest import ADMIN_TOKEN, LIVE_TIMEOUT
from tickethub.sdk.testing import free_port, hub_command


@contextlib.contextmanager
def serving_workers(tmp_path: Path, database: str, extra_env: dict[str, str],
                    workers: int = 2) -> Iterator[tuple[str, int]]:
    """``serve --workers`` on ``database`` until the block exits (SIGINT): its URL and
    the supervisor's pid. Its output goes to ``tmp_path/serve.log``."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKETHUB_")}
    env.update(TICKETHUB_ADMIN_TOKEN=ADMIN_TOKEN, TICKETHUB_DATABASE_URL=database,
               TICKETHUB_LOG_LEVEL="warning", **extra_env)
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [*hub_command(), "serve", "--workers", str(workers), "--port", str(port),
         "--data-dir", str(tmp_path / "data")], env=env, stdout=log,
        stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # starts are slow on a loaded machine
        while len(child_pids(process.pid)) < workers or not healthy(url):
            assert process.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.2)
        yield url, process.pid
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


@contextlib.contextmanager
def connection_to(url: str, *, leader: bool) -> Iterator[httpx.Client]:
    """A keep-alive connection that the leading worker (or another one) accepted."""
    deadline = time.monotonic() + 60
    while True:
        client = httpx.Client(base_url=url, timeout=LIVE_TIMEOUT)
        if client.get("/healthz").json()["leader"] is leader:
            break
        client.close()
        assert time.monotonic() < deadline, f"no connection to a worker with leader={leader}"
    try:
        yield client
    finally:
        client.close()
