"""A live hub (uvicorn, real sockets) with an upstream that speaks OpenAI's wire format.

``@pytest.mark.hub(name=value, ...)`` overrides hub settings for one test."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from live import UPSTREAM_KEY, FakeUpstream, Hub, LiveServer, free_port

from tests.conftest import LIVE_TIMEOUT
from tickethub.api.app import create_app
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings

ADMIN = "th_admin_" + "x" * 40


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hub(**settings): hub settings for this test")
    config.addinivalue_line("markers", "sqlite_only: the test does not depend on the "
                            "database (input checks, pass-through, doc examples)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that do not depend on the database (input checks, pass-through, the docs'
    examples) run on SQLite only: the machine is small, and every path that stores
    something of this door's own runs on both databases."""
    skip = pytest.mark.skip(reason="sqlite_only: does not depend on the database")
    for item in items:
        if item.get_closest_marker("sqlite_only") and "[postgresql" in item.nodeid:
            item.add_marker(skip)


def _token(url: str, role: str, name: str) -> str:
    response = httpx.post(f"{url}/api/v1/tokens", json={"role": role, "name": name},
                          headers={"Authorization": f"Bearer {ADMIN}"},
                          timeout=LIVE_TIMEOUT)
    assert response.status_code == 201, response.text
    return str(response.json()["token"])


@pytest.fixture(scope="session")
def _upstream_server() -> Iterator[tuple[FakeUpstream, str]]:
    fake = FakeUpstream()
    with LiveServer(fake.app) as server:
        yield fake, server.url + "/v1"


@pytest.fixture
def upstream(_upstream_server: tuple[FakeUpstream, str]) -> tuple[FakeUpstream, str]:
    """The upstream (one server for the session), its script and records cleared."""
    fake, url = _upstream_server
    fake.replies.clear()
    fake.requests.clear()
    return fake, url


@pytest.fixture
def hub(request: pytest.FixtureRequest, settings: Settings,
        upstream: tuple[FakeUpstream, str]) -> Iterator[Hub]:
    marker = request.node.get_closest_marker("hub")
    port = free_port()
    update = {
        "public_url": f"http://127.0.0.1:{port}",
        "upstream_base_url": upstream[1], "upstream_api_key": UPSTREAM_KEY,
        # The fake upstream is a thread of this process: on a loaded machine a connect to
        # it once took past 5 s. Tests of the timeout set their own (``hub`` marker).
        "openai_keepalive_seconds": 0.05, "upstream_timeout_seconds": 30.0,
        **(marker.kwargs if marker else {}),
    }
    live_settings = Settings(**{**settings.model_dump(), **update})
    runtime = HubRuntime(live_settings)
    with LiveServer(create_app(runtime), port) as server:
        yield Hub(server.url, runtime, _token(server.url, "agent", "agent-1"),
                  _token(server.url, "responder", "alice"))
    runtime.close()


@pytest.fixture
def fake(upstream: tuple[FakeUpstream, str]) -> FakeUpstream:
    return upstream[0]
