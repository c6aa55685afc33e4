"""A real hub in a child process (uvicorn, SQLite in a temp folder), shared by the SDK
tests, and clients for each role."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tickethub.sdk import Hub
from tickethub.sdk.testing import HubProcess

ADMIN_TOKEN = "th_admin_sdk_" + "s" * 36


@pytest.fixture(scope="package")
def hub_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubProcess]:
    process = HubProcess(tmp_path_factory.mktemp("sdk") / "hub", admin_token=ADMIN_TOKEN)
    with process:
        yield process


@pytest.fixture
def hub(hub_process: HubProcess) -> Iterator[Hub]:
    with Hub(hub_process.url, ADMIN_TOKEN) as client:
        yield client


@pytest.fixture(scope="package")
def agent_token(hub_process: HubProcess) -> str:
    with Hub(hub_process.url, ADMIN_TOKEN) as admin:
        return admin.create_token("agent", "sdk-agent")


@pytest.fixture(scope="package")
def responder_token(hub_process: HubProcess) -> str:
    with Hub(hub_process.url, ADMIN_TOKEN) as admin:
        return admin.create_token("responder", "sdk-alice")


@pytest.fixture
def agent(hub_process: HubProcess, agent_token: str) -> Iterator[Hub]:
    with Hub(hub_process.url, agent_token) as client:
        yield client


@pytest.fixture
def responder(hub_process: HubProcess, responder_token: str) -> Iterator[Hub]:
    with Hub(hub_process.url, responder_token, via="sdk-test") as client:
        yield client


@pytest.fixture
def unique(request: pytest.FixtureRequest) -> str:
    """A label unique to this test, to find its tickets on the shared hub."""
    return "t-" + request.node.name.replace("[", "-").replace("]", "")[:80]

