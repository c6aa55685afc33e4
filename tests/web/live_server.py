"""A real hub for browser and SSE tests: ``tickethub serve`` in a subprocess (uvicorn),
on a free loopback port, with people and tokens made before it starts."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tickethub.domain.actors import Role
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings

ADMIN = "th_admin_" + "w" * 40
PASSWORD = "correct horse battery"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class LiveHub:
    url: str
    admin: str
    agent_token: str

    def api(self, token: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30,
                            headers={"Authorization": f"Bearer {token or self.admin}"})


@contextmanager
def live_hub(data_dir: Path, people: dict[str, Role]) -> Iterator[LiveHub]:
    """Start a hub on SQLite in ``data_dir`` with ``people`` (all with ``PASSWORD``)."""
    port = free_port()
    settings = Settings(data_dir=data_dir, admin_token=ADMIN, port=port)
    hub = HubRuntime(settings)
    for name, role in people.items():
        hub.sessions.set_password(name, PASSWORD, role)
    hub.auth.bootstrap_admin(ADMIN)
    agent_token, _ = hub.auth.create_token(hub.auth.authenticate(ADMIN), "agent-7", Role.AGENT)
    hub.close()
    env = {**os.environ, "TICKETHUB_ADMIN_TOKEN": ADMIN, "TICKETHUB_LOG_LEVEL": "warning",
           "TICKETHUB_SSE_KEEPALIVE_SECONDS": "1"}
    env.pop("TICKETHUB_DATABASE_URL", None)
    log = (data_dir / "server.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "tickethub.cli.main", "serve", "--port", str(port),
         "--data-dir", str(data_dir)],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90  # a loaded machine starts slowly
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("hub did not start: "
                                   + (data_dir / "server.log").read_text()[-2000:])
            time.sleep(0.1)
        yield LiveHub(url, ADMIN, agent_token)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        log.close()
