"""The native ask (``POST /api/v1/tickets``) and answer (``POST .../{id}/answer``) are
direct routes (``api/direct_routes.py``): served without FastAPI's dependency solving,
they answer byte for byte as the FastAPI routes do. Each request here goes to two apps on
one hub: the app as built (direct routes on), and the same app without the
``DirectRoutes`` middleware (the plain routes); a probe innermost in the first shows that
its router never saw the request."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.middleware import Middleware

from tests.agent_protocol.test_route_table import _Probe
from tests.conftest import make_token
from tickethub.api.app import create_app
from tickethub.api.direct_routes import DirectRoutes
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings

LIMIT = 4096
TICKETS = "/api/v1/tickets"
QUESTION = {"title": "Deploy to prod?", "body": "The canary is green.", "labels": ["Ops"]}
_VOLATILE = re.compile(rb'("(?:id|created_at|updated_at|at|resolved_at|answered_at)":)'
                       rb'("[^"]*"|\d+)|/tickets/\d+|/t/\d+')


@dataclass
class Pair:
    direct: httpx.AsyncClient
    plain: httpx.AsyncClient
    routed: list[tuple[str, str, int]]  # what the direct app's router saw
    hub: HubRuntime


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"max_body_bytes": LIMIT})


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://hub")


@pytest.fixture
async def pair(runtime: HubRuntime) -> AsyncIterator[Pair]:
    direct_app = create_app(runtime)
    routed: list[tuple[str, str, int]] = []
    direct_app.user_middleware.append(Middleware(_Probe, seen=routed))  # the router's
    plain_app = create_app(runtime)
    plain_app.user_middleware = [m for m in plain_app.user_middleware
                                 if m.cls is not DirectRoutes]
    async with runtime.running(), _client(direct_app) as direct, _client(plain_app) as plain:
        yield Pair(direct, plain, routed, runtime)


def _wire(response: httpx.Response, volatile: bool = False) -> tuple[int, list[Any], bytes]:
    """Status, headers (but the request id) and body bytes; with ``volatile``, ids and
    times (which differ between two tickets) masked."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k != "x-request-id"]
    body = response.content
    if volatile:
        body = _VOLATILE.sub(lambda m: (m.group(1) or b"") + b"*", body)
        headers = [(k, re.sub(r"/tickets/\d+", "/tickets/*", v)) for k, v in headers
                   if k != "content-length"]
    return response.status_code, headers, body


async def _both(pair: Pair, method: str, url: str, volatile: bool = False, **kwargs: Any
                ) -> tuple[int, list[Any], bytes]:
    """The same request to both apps; asserts the answers are the same, returns it."""
    plain = await pair.plain.request(method, url, **kwargs)
    seen = len(pair.routed)
    direct = await pair.direct.request(method, url, **kwargs)
    assert _wire(direct, volatile) == _wire(plain, volatile)
    assert pair.routed[seen:] == [], "the direct route left the request to the router"
    return _wire(direct)


async def test_ask_answers_as_the_route(pair: Pair) -> None:
    agent = await make_token(pair.plain, "agent", "agent-1")
    status, headers, _ = await _both(pair, "POST", TICKETS, volatile=True, json=QUESTION,
                                     headers=agent)
    assert status == 201 and ("location", "/api/v1/tickets/2") in headers
    # JSON in UTF-8 with a BOM, or UTF-16, as the standard library reads it.
    for content in (b"\xef\xbb\xbf" + b'{"title": "x"}', '{"title": "x"}'.encode("utf-16")):
        status, _, _ = await _both(pair, "POST", TICKETS, volatile=True, content=content,
                                   headers={**agent, "content-type": "application/json"})
        assert status == 201


async def test_an_idempotent_replay_is_the_same_bytes(pair: Pair) -> None:
    agent = {**await make_token(pair.plain, "agent", "agent-1"), "Idempotency-Key": "k-1"}
    first = await pair.plain.post(TICKETS, json=QUESTION, headers=agent)
    assert first.status_code == 201
    status, headers, _ = await _both(pair, "POST", TICKETS, json=QUESTION, headers=agent)
    assert status == 200 and ("idempotent-replayed", "true") in headers
    reused = await _both(pair, "POST", TICKETS, json={"title": "Other"}, headers=agent)
    assert reused[0] == 409


@pytest.mark.parametrize(("content", "extra", "field"), [
    (b'{"title": ""}', {}, b'"field":"title"'),
    (b'{"title": "x", "labels": 3}', {}, b'"field":"labels"'),
    (b'{"title": "x", "nope": 1}', {}, b'"field":"nope"'),
    (b'[]', {}, b'"field":"body"'),
    (b'null', {}, b'"field":"body"'),
    (b'', {}, b'"field":"body"'),
    (b'{"title": ', {}, b'"code":"malformed_json"'),
    (b'{"title": NaN}', {}, b'"field":"title"'),
    (b'\xed\xa0\x80', {}, b'"code":"malformed_json"'),
    (b'{"title": "\xff"}', {}, b'"code":"http_400"'),  # not UTF-8
    (b"[" * 2000 + b"]" * 2000, {}, b'"code":"http_400"'),  # nested too deep
    (b'{"title": "x"}', {"Idempotency-Key": "k" * 201}, b'"field":"idempotency-key"'),
    (b'{"title": 1}', {"Idempotency-Key": "k" * 201}, b'"field":"idempotency-key"'),
])
async def test_a_bad_ask_is_refused_as_the_route_does(pair: Pair, content: bytes,
                                                      extra: dict[str, str],
                                                      field: bytes) -> None:
    agent = await make_token(pair.plain, "agent", "agent-1")
    headers = {**agent, **extra, "content-type": "application/json"}
    status, _, body = await _both(pair, "POST", TICKETS, content=content, headers=headers)
    assert status == (400 if b"malformed_json" in field or b"400" in field else 422)
    assert field in body


@pytest.mark.parametrize("auth", [None, "Bearer nope", "Basic abc"])
async def test_unauthenticated_asks_and_answers_are_401_before_the_body(
        pair: Pair, auth: str | None) -> None:
    headers = {"content-type": "application/json"} | ({"Authorization": auth} if auth else {})
    for url in (TICKETS, f"{TICKETS}/1/answer", f"{TICKETS}/abc/answer"):
        for content in (b'{"title": "x"}', b'{"title": 5}', b""):
            status, _, _ = await _both(pair, "POST", url, content=content, headers=headers)
            assert status == 401
    # A body that is not JSON at all is refused first, as FastAPI does.
    status, _, _ = await _both(pair, "POST", TICKETS, content=b"{", headers=headers)
    assert status == 400


async def test_answer_answers_as_the_route(pair: Pair) -> None:
    agent = await make_token(pair.plain, "agent", "agent-1")
    alice = {**await make_token(pair.plain, "responder", "alice"), "X-Tickethub-Via": "cli"}
    one = (await pair.plain.post(TICKETS, json=QUESTION, headers=agent)).json()["id"]
    two = (await pair.plain.post(TICKETS, json=QUESTION, headers=agent)).json()["id"]
    plain = await pair.plain.post(f"{TICKETS}/{one}/answer", json={"text": "Ship it"},
                                  headers=alice)
    direct = await pair.direct.post(f"{TICKETS}/{two}/answer", json={"text": "Ship it"},
                                    headers=alice)
    assert direct.status_code == 200 and direct.json()["answer"]["via"] == "cli"
    assert _wire(direct, volatile=True) == _wire(plain, volatile=True)
    assert [r for r in pair.routed if r[0] == "POST" and "answer" in r[1]] == []


async def test_answer_refusals_are_the_routes(pair: Pair) -> None:
    agent = await make_token(pair.plain, "agent", "agent-1")
    alice = await make_token(pair.plain, "responder", "alice")
    ticket = (await pair.plain.post(TICKETS, json=QUESTION, headers=agent)).json()["id"]
    cases: list[tuple[str, Any, dict[str, str], int]] = [
        (f"{TICKETS}/{ticket}/answer", {"text": "ok"}, agent, 403),  # wrong role
        (f"{TICKETS}/999999/answer", {"text": "ok"}, alice, 404),  # unknown id
        (f"{TICKETS}/0/answer", {"text": "ok"}, alice, 422),  # not an id
        (f"{TICKETS}/abc/answer", {"version": "x"}, alice, 422),  # path and body
        (f"{TICKETS}/{ticket}/answer", {"text": 5}, alice, 422),  # bad body
        (f"{TICKETS}/{ticket}/answer", {"text": "ok", "version": 7}, alice, 409),  # stale
        (f"{TICKETS}/{ticket}/answer", [1], alice, 422),
    ]
    for url, body, headers, expected in cases:
        status, _, _ = await _both(pair, "POST", url, json=body, headers=headers)
        assert status == expected, url


async def test_too_large_bodies_are_413_as_on_the_route(pair: Pair) -> None:
    agent = await make_token(pair.plain, "agent", "agent-1")
    big = b'{"title": "x", "body": "' + b"a" * LIMIT + b'"}'
    for url in (TICKETS, f"{TICKETS}/1/answer"):
        status, _, _ = await _both(pair, "POST", url, content=big,
                                   headers={**agent, "content-type": "application/json"})
        assert status == 413

        async def streamed() -> AsyncIterator[bytes]:  # no Content-Length: chunked
            yield big[:LIMIT // 2]
            yield big[LIMIT // 2:]

        json_ = {**agent, "content-type": "application/json"}
        plain = await pair.plain.post(url, content=streamed(), headers=json_)
        direct = await pair.direct.post(url, content=streamed(), headers=json_)
        assert _wire(direct) == _wire(plain) and direct.status_code == 413


async def test_wait_answers_as_the_route(pair: Pair) -> None:
    """The long-poll is direct too (thousands of them wake at once): a resolved ticket,
    a timed-out poll and one woken by an answer are the route's bytes."""
    agent = await make_token(pair.plain, "agent", "agent-1")
    alice = await make_token(pair.plain, "responder", "alice")
    ticket = (await pair.plain.post(TICKETS, json=QUESTION, headers=agent)).json()["id"]
    status, headers, _ = await _both(pair, "GET", f"{TICKETS}/{ticket}/wait?timeout=0",
                                     headers=agent)
    assert status == 200 and ("x-tickethub-timed-out", "true") in headers
    # Repeated parameters: the last one counts, as in Starlette's query parameters.
    await _both(pair, "GET", f"{TICKETS}/{ticket}/wait?timeout=50&timeout=0", headers=agent)
    waiting = asyncio.create_task(pair.direct.get(f"{TICKETS}/{ticket}/wait?timeout=30",
                                                  headers=agent))
    while not pair.hub.bus.waiter_count:
        await asyncio.sleep(0.01)
    await pair.plain.post(f"{TICKETS}/{ticket}/answer", json={"text": "go"}, headers=alice)
    woken = await waiting
    plain = await pair.plain.get(f"{TICKETS}/{ticket}/wait", headers=agent)
    assert woken.headers["x-tickethub-timed-out"] == "false"
    assert _wire(woken) == _wire(plain)
    assert [r for r in pair.routed if r[0] == "GET"] == []


async def test_wait_refusals_are_the_routes(pair: Pair) -> None:
    agent = await make_token(pair.plain, "agent", "agent-1")
    ticket = (await pair.plain.post(TICKETS, json=QUESTION, headers=agent)).json()["id"]
    cases = [
        (f"{TICKETS}/{ticket}/wait?timeout=61", agent, 422),
        (f"{TICKETS}/{ticket}/wait?timeout=-1", agent, 422),
        (f"{TICKETS}/{ticket}/wait?timeout=soon", agent, 422),
        (f"{TICKETS}/{ticket}/wait?timeout=", agent, 422),
        (f"{TICKETS}/abc/wait?timeout=soon", agent, 422),  # path and query, in one
        (f"{TICKETS}/0/wait", agent, 422),
        (f"{TICKETS}/999999/wait?timeout=0", agent, 404),
        (f"{TICKETS}/{ticket}/wait?timeout=soon", {}, 401),  # the token first
        (f"{TICKETS}/{ticket}/wait?timeout=0", {"Authorization": "Bearer nope"}, 401),
    ]
    for url, headers, expected in cases:
        status, _, _ = await _both(pair, "GET", url, headers=headers)
        assert status == expected, url


async def test_a_wait_with_a_body_is_left_to_the_router(pair: Pair) -> None:
    agent = await make_token(pair.plain, "agent", "agent-1")
    ticket = (await pair.plain.post(TICKETS, json=QUESTION, headers=agent)).json()["id"]
    response = await pair.direct.request("GET", f"{TICKETS}/{ticket}/wait?timeout=0",
                                         content=b"{}", headers=agent)
    assert response.status_code == 200
    assert [r[:2] for r in pair.routed] == [("GET", f"{TICKETS}/{ticket}/wait")]
