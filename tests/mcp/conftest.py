"""A live hub (uvicorn, real sockets) for the MCP tests; the servers come from
``tests/openai/live.py``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "openai"))

from live import Hub, LiveServer, free_port

from tickethub.api.app import create_app
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings

ADMIN = "th_admin_" + "x" * 40


def _token(url: str, role: str, name: str) -> str:
    response = httpx.post(f"{url}/api/v1/tokens", json={"role": role, "name": name},
                          headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30)
    assert response.status_code == 201, response.text
    return str(response.json()["token"])


@pytest.fixture
def hub(settings: Settings) -> Iterator[Hub]:
    port = free_port()
    live_settings = Settings(**{**settings.model_dump(),
                                "public_url": f"http://127.0.0.1:{port}"})
    runtime = HubRuntime(live_settings)
    with LiveServer(create_app(runtime), port) as server:
        yield Hub(server.url, runtime, _token(server.url, "agent", "agent-1"),
                  _token(server.url, "responder", "alice"))
    runtime.close()
