"""Failed sign-ins, sign-in links and API tokens are throttled per account and per
client address (429 with Retry-After), on a fake clock: no test sleeps."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import httpx
import pytest
from fastapi import FastAPI

from tests.conftest import ADMIN_TOKEN, bearer
from tests.web.conftest import PASSWORD, sign_in
from tickethub.server.runtime import HubRuntime
from tickethub.testing import FakeClock

Hub = tuple[FastAPI, FakeClock, HubRuntime]
Connect = Callable[[str], AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def connect(clocked_app: Hub) -> Connect:
    """A client of the hub that comes from the given address."""
    app = clocked_app[0]

    @asynccontextmanager
    async def from_address(address: str) -> AsyncIterator[httpx.AsyncClient]:
        transport = httpx.ASGITransport(app=app, client=(address, 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://hub") as c:
            yield c

    return from_address


def _error_of(page: httpx.Response) -> str:
    found = re.search(r'id="login-error">([^<]*)<', page.text)
    assert found, page.text
    return found.group(1)


async def _five_wrong(client: httpx.AsyncClient, name: str) -> list[httpx.Response]:
    return [await sign_in(client, name, "wrong password") for _ in range(5)]


async def test_wrong_passwords_lock_the_account_then_it_unlocks(
        clocked_app: Hub, connect: Connect, caplog: pytest.LogCaptureFixture) -> None:
    _, clock, _ = clocked_app
    async with connect("10.0.0.1") as client:
        with caplog.at_level(logging.WARNING, logger="tickethub.audit"):
            wrong = await _five_wrong(client, "pat")
        assert [r.status_code for r in wrong] == [401] * 5
        # Locked now: even the right password is refused, before it is checked.
        locked = await sign_in(client, "pat", PASSWORD)
        assert locked.status_code == 429
        assert locked.headers["retry-after"] == "1"
        assert "too many failed sign-ins; try again in 1 s" in _error_of(locked)
        assert "th_session=" not in locked.headers.get("set-cookie", "")
        assert (await client.get("/")).status_code == 303
        # Another address does not get past the account's lock.
        async with connect("10.0.0.2") as elsewhere:
            assert (await sign_in(elsewhere, "pat", PASSWORD)).status_code == 429
        clock.advance(seconds=1)
        assert (await sign_in(client, "pat", PASSWORD)).status_code == 303
    audit = [r.getMessage() for r in caplog.records if r.name == "tickethub.audit"]
    assert audit == ["sign-in per account throttled: account 'pat' locked for 1s after 5 "
                     "failed attempts"]


async def test_the_wait_doubles_with_each_failure_and_success_resets_it(
        clocked_app: Hub, connect: Connect) -> None:
    _, clock, _ = clocked_app
    async with connect("10.0.0.1") as client:
        await _five_wrong(client, "pat")
        for expected in (2, 4, 8):
            clock.advance(seconds=expected / 2)  # the previous wait has passed
            assert (await sign_in(client, "pat", "wrong again")).status_code == 401
            refused = await sign_in(client, "pat", PASSWORD)
            assert refused.headers["retry-after"] == str(expected)
        clock.advance(seconds=8)
        assert (await sign_in(client, "pat", PASSWORD)).status_code == 303
    async with connect("10.0.0.1") as client:  # signed out
        # After a success the account starts over with its free attempts.
        assert [r.status_code for r in await _five_wrong(client, "pat")] == [401] * 5


async def test_an_unknown_name_is_throttled_exactly_like_a_known_one(
        clocked_app: Hub, connect: Connect) -> None:
    _, clock, _ = clocked_app

    async def story(name: str) -> list[tuple[int, str | None, str]]:
        async with connect("10.0.0.1") as client:
            responses = await _five_wrong(client, name)
            responses.append(await sign_in(client, name, PASSWORD))
            clock.advance(seconds=1)
            responses.append(await sign_in(client, name, "wrong password"))
        return [(r.status_code, r.headers.get("retry-after"), _error_of(r))
                for r in responses]

    known, unknown = await story("pat"), await story("nobody")
    assert known[:6] == unknown[:6]
    assert [status for status, _, _ in unknown] == [401] * 5 + [429, 401]


async def test_many_names_from_one_address_lock_that_address(
        clocked_app: Hub, connect: Connect) -> None:
    _, clock, _ = clocked_app
    async with connect("10.0.0.9") as sprayer:
        for n in range(20):  # each name only fails once: no account is locked
            assert (await sign_in(sprayer, f"user{n}", "guess")).status_code == 401
        refused = await sign_in(sprayer, "pat", PASSWORD)
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        async with connect("10.0.0.1") as other:
            assert (await sign_in(other, "pat", PASSWORD)).status_code == 303
        clock.advance(seconds=1)
        assert (await sign_in(sprayer, "pat", PASSWORD)).status_code == 303


async def _use_link(client: httpx.AsyncClient, token: str) -> httpx.Response:
    page = await client.get(f"/login/link?token={token}")
    fields = dict(re.findall(r'name="(csrf|token|next)" value="([^"]*)"', page.text))
    return await client.post("/login/link", data=fields)


async def test_unknown_sign_in_links_lock_the_address(clocked_app: Hub,
                                                      connect: Connect) -> None:
    _, clock, hub = clocked_app
    token = hub.sessions.login_link("pat", 600)
    async with connect("10.0.0.9") as client:
        for n in range(20):
            assert (await _use_link(client, f"th_guess_{n}")).status_code == 401
        refused = await _use_link(client, token)  # a real link waits too, and is kept
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        assert "too many failed sign-in links" in _error_of(refused)
        clock.advance(seconds=1)
        assert (await _use_link(client, token)).status_code == 303


DOORS = [("/api/v1/me", "problem"), ("/ap/v1/agent/tasks", "ap"), ("/v1/models", "openai")]


@pytest.mark.parametrize(("path", "shape"), DOORS)
async def test_unknown_api_tokens_lock_the_address_on_every_door(
        clocked_app: Hub, connect: Connect, path: str, shape: str) -> None:
    _, clock, _ = clocked_app
    async with connect("10.0.0.9") as client:
        for n in range(20):
            response = await client.get(path, headers=bearer(f"th_guess_{n}"))
            assert response.status_code == 401, response.text
        refused = await client.get(path, headers=bearer(ADMIN_TOKEN))
        assert refused.status_code == 429, refused.text
        assert refused.headers["retry-after"] == "1"
        body = refused.json()
        if shape == "problem":
            assert refused.headers["content-type"] == "application/problem+json"
            assert body["code"] == "too_many_attempts" and body["field"] == "Authorization"
            assert body["retry_after"] == 1
        elif shape == "ap":
            assert body["code"] == "too_many_attempts"
        else:
            assert body["error"]["type"] == "rate_limit_error"
        async with connect("10.0.0.1") as other:
            assert (await other.get(path, headers=bearer(ADMIN_TOKEN))).status_code == 200
        clock.advance(seconds=1)
        assert (await client.get(path, headers=bearer(ADMIN_TOKEN))).status_code == 200


async def test_mcp_refuses_a_throttled_address(clocked_app: Hub, connect: Connect) -> None:
    async with connect("10.0.0.9") as client:
        for n in range(20):
            await client.post("/mcp", headers=bearer(f"th_guess_{n}"), json={})
        refused = await client.post("/mcp", headers=bearer("th_guess_x"), json={})
    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
    assert refused.json()["code"] == "too_many_attempts"


async def test_requests_without_a_token_do_not_count(clocked_app: Hub,
                                                     connect: Connect) -> None:
    async with connect("10.0.0.9") as client:
        for _ in range(30):
            assert (await client.get("/api/v1/me")).status_code == 401
        assert (await client.get("/api/v1/me", headers=bearer(ADMIN_TOKEN))).status_code == 200
