"""``HubProcess``: a real hub in a child process, for integration tests of code that
uses the SDK (ours and yours).

    with HubProcess(tmp_path / "hub", admin_token="th_admin_...") as hub:
        client = Hub(hub.url, hub.admin_token)
        ...
        hub.kill()      # SIGKILL, like a crash or a power cut
        hub.start()     # same port, same data folder

It runs ``tickethub serve`` (the console script next to the running interpreter, else
``python -m tickethub.cli.main``), so the ``tickethub`` package must be installed; the SDK
itself does not import it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import httpx


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def hub_command() -> list[str]:
    """How to start the ``tickethub`` command from this Python environment."""
    script = Path(sys.executable).with_name("tickethub")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "tickethub.cli.main"]


class HubProcess:
    """A hub on ``127.0.0.1:<port>`` with its SQLite database in ``data_dir`` (or
    ``database_url``). Output goes to ``data_dir/../<name>.log``."""

    def __init__(self, data_dir: Path, *, admin_token: str, port: int | None = None,
                 database_url: str | None = None, env: dict[str, str] | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.admin_token = admin_token
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.data_dir.with_name(self.data_dir.name + ".log")
        self._env = {k: v for k, v in os.environ.items()
                     if not k.startswith("TICKETHUB_")}  # no stray settings from the caller
        self._env.update(TICKETHUB_ADMIN_TOKEN=admin_token, TICKETHUB_LOG_LEVEL="warning")
        if database_url:
            self._env["TICKETHUB_DATABASE_URL"] = database_url
        self._env.update(env or {})
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def returncode(self) -> int | None:
        """The hub's exit status once it has ended (``-15``: stopped by SIGTERM), else
        None."""
        return self._process.poll() if self._process else None

    def start(self, timeout: float = 60.0) -> HubProcess:
        """Start the hub and return once ``/healthz`` answers."""
        if self._process is not None and self._process.poll() is None:
            raise RuntimeError("the hub is already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in _reap
        self._process = subprocess.Popen(
            [*hub_command(), "serve", "--host", "127.0.0.1", "--port", str(self.port),
             "--data-dir", str(self.data_dir)],
            env=self._env, cwd=self.data_dir, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"the hub exited with {self._process.returncode}:\n"
                                   f"{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"the hub did not answer /healthz in {timeout}s:\n"
                           f"{self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a crash."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGKILL)
        self._reap()

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the hub to shut down (SIGTERM); SIGKILL if it takes longer than timeout."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self._reap()

    def _reap(self) -> None:
        if self._process is not None:
            self._process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> HubProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
