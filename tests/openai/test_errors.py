"""Bad input on ``/v1``: every error in OpenAI's shape, with the status OpenAI uses, and
the native API's problem+json untouched."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from live import Hub

import openai
from tests.conftest import LIVE_TIMEOUT

USER = [{"role": "user", "content": "hi"}]


def sdk(hub: Hub, key: str | None = None) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=hub.url + "/v1", api_key=key or hub.agent,
                              max_retries=0)


def error_of(exc: openai.APIStatusError) -> dict[str, Any]:
    body = exc.response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) >= {"message", "type", "code", "param"}
    return dict(body["error"])


@pytest.mark.sqlite_only
async def test_a_wrong_api_key_is_401_in_openai_shape(hub: Hub) -> None:
    with pytest.raises(openai.AuthenticationError) as caught:
        await sdk(hub, "th_wrong").chat.completions.create(model="human", messages=USER)
    error = error_of(caught.value)
    assert caught.value.status_code == 401
    assert error["type"] == "authentication_error" and error["code"] == "unauthenticated"
    with pytest.raises(openai.AuthenticationError):
        await sdk(hub, "th_wrong").models.list()


@pytest.mark.sqlite_only
@pytest.mark.hub(upstream_models=["gpt-*"])
async def test_an_unknown_model_is_404_model_not_found(hub: Hub) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await sdk(hub).chat.completions.create(model="llama3", messages=USER)
    error = error_of(caught.value)
    assert error["code"] == "model_not_found" and error["param"] == "model"
    assert "llama3" in error["message"]


@pytest.mark.sqlite_only
async def test_a_model_the_upstream_lacks_is_its_own_404_relayed(hub: Hub) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await sdk(hub).chat.completions.create(model="no-such-model", messages=USER)
    assert error_of(caught.value)["code"] == "model_not_found"


@pytest.mark.sqlite_only
@pytest.mark.hub(upstream_base_url=None)
async def test_without_an_upstream_only_human_models_exist(hub: Hub) -> None:
    with pytest.raises(openai.NotFoundError):
        await sdk(hub).chat.completions.create(model="gpt-test", messages=USER)
    assert [m.id for m in (await sdk(hub).models.list()).data] == ["human"]
    with pytest.raises(openai.NotFoundError):
        await sdk(hub).models.retrieve("gpt-test")


BAD_MESSAGES: list[tuple[Any, str]] = [
    ([], "messages"),
    ([{"role": "robot", "content": "beep"}], "messages.0.role"),
    ([{"role": "user"}], "messages.0"),
    ([{"role": "tool", "content": "42"}], "messages.0"),
    ([{"role": "assistant"}], "messages.0"),
    ([{"content": "no role"}], "messages.0.role"),
    ("not a list", "messages"),
]


@pytest.mark.sqlite_only
async def test_malformed_messages_are_400_naming_the_param(hub: Hub) -> None:
    for messages, param in BAD_MESSAGES:
        with pytest.raises(openai.BadRequestError) as caught:
            await sdk(hub).chat.completions.create(model="human", messages=messages)
        error = error_of(caught.value)
        assert error["type"] == "invalid_request_error"
        assert error["param"] == param, (messages, error)


@pytest.mark.sqlite_only
async def test_malformed_tools_are_400(hub: Hub) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk(hub).chat.completions.create(
            model="human", messages=USER,
            tools=[{"type": "function", "function": {"name": "bad name!"}}])
    assert error_of(caught.value)["param"] == "tools.0.function.name"


@pytest.mark.sqlite_only
async def test_bad_bodies_and_headers_are_400(hub: Hub) -> None:
    async with hub.client(hub.agent) as c:
        r = await c.post("/v1/chat/completions", content=b"{not json",
                         headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "malformed_json"
        r = await c.post("/v1/chat/completions", json=[1, 2])
        assert r.status_code == 400 and r.json()["error"]["param"] == "body"
        r = await c.post("/v1/chat/completions", json={"messages": USER})
        assert r.status_code == 400 and r.json()["error"]["param"] == "model"
        r = await c.post("/v1/chat/completions", json={"model": "human", "messages": USER},
                         headers={"X-Tickethub-Mode": "sometimes"})
        assert r.status_code == 400 and r.json()["error"]["param"] == "X-Tickethub-Mode"
        for bad in ("soon", "0", "-1", "99999"):
            r = await c.post("/v1/chat/completions", json={"model": "human", "messages": USER},
                             headers={"X-Tickethub-Timeout": bad})
            assert r.status_code == 400, bad
            assert r.json()["error"]["param"] == "X-Tickethub-Timeout"


@pytest.mark.sqlite_only
async def test_unknown_v1_paths_are_404_in_openai_shape(hub: Hub) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        await sdk(hub).embeddings.create(model="human", input="x")
    assert error_of(caught.value)["type"] == "invalid_request_error"


@pytest.mark.sqlite_only
@pytest.mark.parametrize("path", ["/v1/models/a%0Ab", "/v1/no/such%0Athing"])
async def test_a_newline_in_a_v1_path_stays_in_openai_shape(hub: Hub, path: str) -> None:
    """A decoded newline inside the rest of the path (found by schemathesis) still reaches
    the OpenAI door's routes, so the 404 is OpenAI's, not the hub's problem+json."""
    async with hub.client(hub.agent) as c:
        r = await c.get(path)
    assert r.status_code == 404 and r.headers["content-type"] == "application/json"
    assert r.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.sqlite_only
async def test_the_native_api_keeps_problem_json(hub: Hub) -> None:
    async with hub.client(hub.agent) as c:
        r = await c.get("/api/v1/tickets/999999")
        assert r.status_code == 404
        assert r.headers["content-type"].startswith("application/problem+json")
        assert r.json()["code"] == "not_found"
        r = await c.post("/api/v1/tickets", content=b"{oops",
                         headers={"content-type": "application/json"})
        assert r.json()["code"] == "malformed_json" and "error" not in r.json()


@pytest.mark.sqlite_only
async def test_models_lists_human_and_the_upstreams_models(hub: Hub) -> None:
    client = sdk(hub)
    ids = [m.id for m in (await client.models.list()).data]
    assert ids == ["human", "gpt-test", "other-model"]
    assert (await client.models.retrieve("human:ops")).id == "human:ops"
    assert (await client.models.retrieve("gpt-test")).owned_by == "test"


@pytest.mark.sqlite_only
@pytest.mark.hub(upstream_models=["gpt-*"])
async def test_only_configured_models_go_upstream(hub: Hub) -> None:
    client = sdk(hub)
    assert [m.id for m in (await client.models.list()).data] == ["human", "gpt-test"]
    with pytest.raises(openai.NotFoundError):
        await client.chat.completions.create(model="other-model", messages=USER)


async def _revoke(hub: Hub, token: str) -> None:
    admin = {"Authorization": "Bearer th_admin_" + "x" * 40}
    async with httpx.AsyncClient(base_url=hub.url, headers=admin, timeout=LIVE_TIMEOUT) as c:
        [record] = [t for t in (await c.get("/api/v1/tokens")).json()
                    if token.startswith(t["prefix"]) and t["name"] == "agent-1"]
        assert (await c.delete(f"/api/v1/tokens/{record['id']}")).status_code == 204


@pytest.mark.hub(auth_cache_seconds=0)
async def test_a_revoked_key_is_refused_at_once_without_the_cache(hub: Hub) -> None:
    assert (await sdk(hub).models.list()).data[0].id == "human"
    await _revoke(hub, hub.agent)
    with pytest.raises(openai.AuthenticationError):
        await sdk(hub).models.list()


@pytest.mark.hub(auth_cache_seconds=0.5)
async def test_a_revoked_key_stops_working_within_the_cache_time(hub: Hub) -> None:
    await sdk(hub).models.list()
    await _revoke(hub, hub.agent)
    await asyncio.sleep(0.6)
    with pytest.raises(openai.AuthenticationError):
        await sdk(hub).models.list()
