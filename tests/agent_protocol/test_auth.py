"""Authentication: hub bearer tokens always; anonymous only when allowed (by default
exactly when the hub listens on loopback only)."""

from __future__ import annotations

import httpx
import pytest

from tests.agent_protocol.conftest import AP
from tests.conftest import make_token
from tickethub.api.agent_protocol.context import anonymous_allowed, is_loopback
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings


@pytest.mark.parametrize(("host", "expected"), [
    ("127.0.0.1", True), ("localhost", True), ("::1", True), ("127.0.0.2", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.5", False), ("hub.example", False),
])
def test_anonymous_defaults_to_on_only_on_loopback(host: str, expected: bool) -> None:
    assert is_loopback(host) is expected
    assert anonymous_allowed(Settings(host=host)) is expected
    assert anonymous_allowed(Settings(host=host, ap_anonymous=True)) is True
    assert anonymous_allowed(Settings(host=host, ap_anonymous=False)) is False


def test_the_env_switch_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TICKETHUB_AP_ANONYMOUS", "off")
    assert anonymous_allowed(Settings(host="127.0.0.1")) is False
    monkeypatch.setenv("TICKETHUB_AP_ANONYMOUS", "on")
    assert anonymous_allowed(Settings(host="0.0.0.0")) is True


async def test_a_token_acts_as_its_actor(client: httpx.AsyncClient,
                                         responder: dict[str, str]) -> None:
    agent = await make_token(client, "agent", "autogpt")
    task = (await client.post(AP, json={"input": "t"}, headers=agent)).json()
    tickets = (await client.get("/api/v1/tickets", params={
        "ref": f"ap_task_id={task['task_id']}"}, headers=responder)).json()["items"]
    assert tickets[0]["created_by"] == "autogpt"


async def test_a_bad_token_is_401_even_when_anonymous_is_on(client: httpx.AsyncClient) -> None:
    response = await client.get(AP, headers={"Authorization": "Bearer wrong"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["field"] == "Authorization"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"ap_anonymous": False})


async def test_without_anonymous_access_a_token_is_needed(
    client: httpx.AsyncClient, runtime: HubRuntime, admin: dict[str, str]
) -> None:
    assert runtime.settings.ap_anonymous is False
    response = await client.post(AP, json={"input": "t"})
    assert response.status_code == 401
    assert "anonymous" in response.json()["message"]
    assert (await client.get(AP)).status_code == 401
    assert (await client.post(AP, json={"input": "t"}, headers=admin)).status_code == 200
