"""The hub under test: a real ``tickethub serve`` subprocess on a free loopback port with
a fresh SQLite data folder (or a given PostgreSQL database and ``--workers N``), plus an
agent and a responder token for the benches."""

from __future__ import annotations

import os
import resource
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from tickethub.sdk.testing import free_port, hub_command

if TYPE_CHECKING:
    from prometheus_client.samples import Sample


def raise_open_files_limit(wanted: int) -> int:
    """Raise this process's soft ``RLIMIT_NOFILE`` towards ``wanted`` (children inherit
    it); returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft



def stop_process(process: subprocess.Popen[bytes] | subprocess.Popen[str] | None,
                 grace: float = 15.0) -> None:
    """Stop a server the bench started: SIGTERM, then SIGKILL if it is still running after
    ``grace`` seconds (one that ignores SIGTERM must not hang the bench), and reap it."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def child_pids(parent: int) -> set[int]:
    """The live processes whose parent is ``parent`` (read from ``/proc``; Linux)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # it ended while we looked
            # the field after the ")" closing the command name is the state, then the ppid
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                found.add(int(entry.name))
    return found

class HubProcess:
    """``with HubProcess() as hub:`` starts the server and waits until ``/healthz`` answers;
    leaving the block stops it and deletes its data folder."""

    def __init__(self, *, env: dict[str, str] | None = None, start_timeout: float = 300,
                 database_url: str | None = None, workers: int = 1) -> None:
        self.host = "127.0.0.1"
        self.port = free_port()
        self.url = f"http://{self.host}:{self.port}"
        self.admin_token = "bench-admin-" + secrets.token_urlsafe(24)
        self.agent_token = ""
        self.responder_token = ""
        self._env = env or {}
        self._start_timeout = start_timeout
        self._database_url = database_url  # None: SQLite in the data folder
        self._workers = workers
        self._dir = Path(tempfile.mkdtemp(prefix="tickethub-bench-"))
        self._log = self._dir / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> HubProcess:
        env = {**os.environ, "TICKETHUB_ADMIN_TOKEN": self.admin_token,
               "TICKETHUB_LOG_LEVEL": "warning", **self._env}
        env.pop("TICKETHUB_DATABASE_URL", None)  # SQLite in the data folder, unless told
        if self._database_url:
            env["TICKETHUB_DATABASE_URL"] = self._database_url
        with self._log.open("wb") as log:
            self.proc = subprocess.Popen(
                [*hub_command(), "serve", "--port", str(self.port),
                 "--data-dir", str(self._dir / "data"), "--workers", str(self._workers)],
                env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self._dir,
            )
        try:
            self._wait_ready()
            self.agent_token = self._token("agent", "bench-agent")
            self.responder_token = self._token("responder", "bench-responder")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        stop_process(self.proc)
        shutil.rmtree(self._dir, ignore_errors=True)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self._start_timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"the hub exited with {self.proc.returncode}:\n"
                                   + self.log_tail())
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("the hub did not answer /healthz in time:\n" + self.log_tail())

    def _token(self, role: str, name: str) -> str:
        r = httpx.post(self.url + "/api/v1/tokens", json={"role": role, "name": name},
                       headers={"Authorization": f"Bearer {self.admin_token}"}, timeout=10)
        r.raise_for_status()
        return str(r.json()["token"])

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self._log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _status(self, field: str) -> int:
        """A ``/proc/<pid>/status`` memory field (``VmRSS``, ``VmHWM``) in bytes."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise RuntimeError(f"{field} not in /proc/{self.pid}/status")

    def rss(self) -> int:
        """Resident memory of the server process now, in bytes."""
        return self._status("VmRSS")

    def peak_rss(self) -> int:
        """Highest resident memory of the server process so far, in bytes."""
        return self._status("VmHWM")

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process used so far (with ``--workers``:
        the supervisor and its worker processes)."""
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0
        for pid in [self.pid, *self.worker_pids()]:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        return total / ticks

    def metric_samples(self) -> list[Sample]:
        """Every sample of the hub's ``GET /metrics`` (``TICKETHUB_METRICS=true`` in
        ``env``), as prometheus-client parses them (``name``, ``labels``, ``value``):
        what one process counted, so with several workers only the one that answered."""
        from prometheus_client.parser import text_string_to_metric_families

        r = httpx.get(self.url + "/metrics", timeout=30)
        r.raise_for_status()
        return [sample for family in text_string_to_metric_families(r.text)
                for sample in family.samples]

    def metric_sums(self) -> dict[str, float]:
        """``metric_samples`` summed over their labels, by sample name (``..._sum``,
        ``..._count``)."""
        sums: dict[str, float] = {}
        for sample in self.metric_samples():
            sums[sample.name] = sums.get(sample.name, 0.0) + sample.value
        return sums

    def worker_pids(self) -> list[int]:
        """The processes ``serve --workers N`` started (none with one worker)."""
        if self._workers == 1:
            return []
        return sorted(child_pids(self.pid))
