"""The doors are a registry (``api/doors.py``): the built-ins, then plugins' doors from
the ``tickethub.doors`` entry points, mounted the same way; a plugin's door is served
like a built-in one (request ids, the body limit, the one error renderer, OpenAPI)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import APIRouter

from tickethub import plugins
from tickethub.api import doors
from tickethub.api.app import create_app
from tickethub.errors import NotFound
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings

LIMIT = 2048
plugin_router = APIRouter(prefix="/plugin")


@plugin_router.post("/echo", summary="A plugin's operation")
async def echo(body: dict[str, Any]) -> dict[str, Any]:
    if body.get("missing"):
        raise NotFound("no such thing", field="missing")
    return {"echo": body}


PLUGIN = doors.Door("plugin", doors.routers(plugin_router))


class _EntryPoint:
    def __init__(self, name: str, value: object) -> None:
        self.name, self.value, self._value = name, f"plugin:{name}", value

    def load(self) -> object:
        return self._value


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"max_body_bytes": LIMIT})


@pytest.fixture
def plugin_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "entry_points",
                        lambda group: [_EntryPoint("plugin", PLUGIN)]
                        if group == doors.ENTRY_POINTS else [])


@pytest.fixture
async def plugged(runtime: HubRuntime, plugin_installed: None
                  ) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(runtime)  # every registered door, the plugin's after the built-ins
    async with runtime.running(), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hub") as client:
        yield client


def test_the_built_ins_come_first_then_plugins(plugin_installed: None) -> None:
    names = [door.name for door in doors.registered()]
    assert names[: len(doors.BUILTINS)] == [door.name for door in doors.BUILTINS]
    assert names[len(doors.BUILTINS):] == ["plugin"]
    assert names.index("web") == len(doors.BUILTINS) - 1  # the inbox's pages last


def test_an_entry_point_that_is_not_a_door_is_refused(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    monkeypatch.setattr(plugins, "entry_points", lambda group: [_EntryPoint("bad", object())])
    with pytest.raises(TypeError, match=r"bad .* is not a Door"):
        doors.registered()


async def test_a_plugin_door_is_served_like_a_built_in_one(
        plugged: httpx.AsyncClient) -> None:
    ok = await plugged.post("/plugin/echo", json={"a": 1})
    assert ok.status_code == 200 and ok.json() == {"echo": {"a": 1}}
    assert ok.headers["x-request-id"]  # inside the middleware stack
    missing = await plugged.post("/plugin/echo", json={"missing": True})
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    assert missing.json()["field"] == "missing"  # the one renderer
    invalid = await plugged.post("/plugin/echo", content=b"[1",
                                 headers={"content-type": "application/json"})
    assert invalid.status_code == 400 and invalid.json()["code"] == "malformed_json"
    too_large = await plugged.post("/plugin/echo", json={"x": "y" * LIMIT})
    assert too_large.status_code == 413  # the hub's body limit
    assert too_large.json()["code"] == "payload_too_large"
    spec = (await plugged.get("/openapi.json")).json()
    assert spec["paths"]["/plugin/echo"]["post"]["summary"] == "A plugin's operation"
    # the built-in doors are all still there
    assert (await plugged.get("/healthz")).status_code == 200
    assert "/ap/v1/agent/tasks" in spec["paths"] and "/v1/chat/completions" in spec["paths"]


async def test_an_app_serves_only_the_doors_it_is_given(runtime: HubRuntime) -> None:
    app = create_app(runtime, [doors.BUILTINS[0], PLUGIN])
    async with runtime.running(), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hub") as client:
        assert (await client.post("/plugin/echo", json={})).status_code == 200
        assert (await client.get("/v1/models")).status_code == 404  # no OpenAI door
