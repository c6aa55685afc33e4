"""The fast lane serves create task and execute step straight from ASGI; for every body a
client may send it answers exactly as the FastAPI routes do, and anything that is not
JSON goes on to those routes.

Each case is sent twice on the same hub: to the app as shipped (``lane``), and to the
same app called as plain FastAPI, without the lane (``route``), the reference. A probe
innermost in each app's middleware stack shows whether FastAPI saw the request."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.agent_protocol.conftest import AP
from tests.conftest import ADMIN_TOKEN, bearer
from tickethub.api.agent_protocol import FastLane
from tickethub.api.app import create_app
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings

LIMIT = 2048
JSON = {"content-type": "application/json"}


class _Probe:
    """Innermost middleware: notes every request that got past the lane to FastAPI."""

    def __init__(self, app: ASGIApp, seen: list[tuple[str, str]]) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append((scope["method"], scope["path"]))
        await self.app(scope, receive, send)


@dataclass
class Doors:
    lane: httpx.AsyncClient
    route: httpx.AsyncClient
    reached_fastapi: list[tuple[str, str]] = field(default_factory=list)
    route_reached_fastapi: list[tuple[str, str]] = field(default_factory=list)

    async def both(self, path: str, body: Callable[[], Any] | None = None,
                   **request: Any) -> tuple[httpx.Response, httpx.Response]:
        """The same POST through the lane and through the route (``body()`` makes a
        fresh streamed body for each); checks that the lane answered it alone and that
        the reference really went through FastAPI."""
        self.reached_fastapi.clear()
        self.route_reached_fastapi.clear()
        if body is not None:
            request["content"] = body()
        by_lane = await self.lane.post(path, **request)
        assert self.reached_fastapi == []  # the lane answered; FastAPI never saw it
        if body is not None:
            request["content"] = body()
        by_route = await self.route.post(path, **request)
        assert self.route_reached_fastapi == [("POST", path)]
        return by_lane, by_route


def _plain_fastapi(app: FastAPI) -> ASGIApp:
    """``app`` as FastAPI alone serves it: the lane neither in front of the app nor in
    its middleware stack."""
    app.user_middleware = [m for m in app.user_middleware if m.cls is not FastLane]
    return functools.partial(FastAPI.__call__, app)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"max_body_bytes": LIMIT})


@pytest.fixture
async def doors(runtime: HubRuntime) -> AsyncIterator[Doors]:
    seen: list[tuple[str, str]] = []
    route_seen: list[tuple[str, str]] = []
    lane_app = create_app(runtime)
    lane_app.user_middleware.append(Middleware(_Probe, seen=seen))
    route_app = create_app(runtime)
    route_app.user_middleware.append(Middleware(_Probe, seen=route_seen))
    async with (
        runtime.running(),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=lane_app),
                          base_url="http://hub") as lane,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=_plain_fastapi(route_app)),
                          base_url="http://hub") as route,
    ):
        yield Doors(lane, route, seen, route_seen)


async def _path(doors: Doors, operation: str) -> str:
    """The URL of ``operation``: create task, or execute step on a new task."""
    if operation == "create_task":
        return AP
    task = await doors.lane.post(AP, json={"input": "a task for steps"})
    assert task.status_code == 200, task.text
    return f"{AP}/{task.json()['task_id']}/steps"


async def _stored(client: httpx.AsyncClient, path: str, headers: dict[str, str] | None = None
                  ) -> int:
    """How many tasks (for the create path) or steps (for a steps path) exist."""
    listed = await client.get(path, headers=headers)
    assert listed.status_code == 200, listed.text
    return int(listed.json()["pagination"]["total_items"])


def _outcome(response: httpx.Response) -> tuple[int, str | None, str | None]:
    """(status, code, field) of an answer; errors are JSON in the AP shape."""
    assert response.headers["content-type"] == "application/json", response.text
    body = response.json()
    if response.status_code >= 400:
        assert isinstance(body["message"], str) and body["message"]
        return response.status_code, body["code"], body.get("field")
    return response.status_code, None, None


def _without_ids(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("task_id", "step_id")}


async def _streamed(size: int) -> AsyncIterator[bytes]:
    """A body without Content-Length (chunked), ``size`` bytes in 500-byte chunks."""
    sent = 0
    while sent < size:
        yield b" " * min(500, size - sent)
        sent += 500


CASES: list[tuple[str, dict[str, Any], tuple[int, str | None, str | None]]] = [
    ("valid", {"json": {"input": "x", "additional_input": {"k": [1, 2]}}}, (200, None, None)),
    ("empty body", {"content": b""}, (200, None, None)),
    ("null body", {"content": b"null", "headers": JSON}, (200, None, None)),
    ("+json media type", {"content": b'{"input": "x"}',
                          "headers": {"content-type": "application/vnd.x+json"}},
     (200, None, None)),
    ("malformed JSON", {"content": b'{"input": ', "headers": JSON},
     (422, "malformed_json", "body")),
    ("input not a string", {"json": {"input": 5}}, (422, "validation_failed", "input")),
    ("additional_input not an object", {"json": {"additional_input": "x"}},
     (422, "validation_failed", "additional_input")),
    ("body not an object", {"json": [1]}, (422, "validation_failed", "body")),
    ("oversize with Content-Length", {"json": {"input": "x" * LIMIT}},
     (413, "payload_too_large", "body")),
]


@pytest.mark.parametrize("operation", ["create_task", "execute_step"])
@pytest.mark.parametrize(("case", "request_args", "expected"), CASES,
                         ids=[c[0] for c in CASES])
async def test_the_lane_answers_as_the_route_does(
    doors: Doors, operation: str, case: str, request_args: dict[str, Any],
    expected: tuple[int, str | None, str | None]
) -> None:
    path = await _path(doors, operation)
    before = await _stored(doors.lane, path)
    by_lane, by_route = await doors.both(path, **request_args)
    assert _outcome(by_lane) == _outcome(by_route) == expected, (by_lane.text, by_route.text)
    if expected[0] == 200:
        assert _without_ids(by_lane.json()) == _without_ids(by_route.json())
        assert await _stored(doors.lane, path) == before + 2
    else:
        assert await _stored(doors.lane, path) == before  # a refused body stores nothing


@pytest.mark.parametrize("operation", ["create_task", "execute_step"])
async def test_an_oversize_streamed_body_is_413_on_both(doors: Doors, operation: str) -> None:
    """Without Content-Length the limit is enforced while the body is read."""
    path = await _path(doors, operation)
    before = await _stored(doors.lane, path)
    by_lane, by_route = await doors.both(path, lambda: _streamed(LIMIT + 600), headers=JSON)
    assert by_lane.request.headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in by_lane.request.headers
    assert _outcome(by_lane) == _outcome(by_route) == (413, "payload_too_large", "body")
    assert by_lane.json() == by_route.json()
    assert await _stored(doors.lane, path) == before


@pytest.mark.parametrize("operation", ["create_task", "execute_step"])
async def test_a_streamed_body_under_the_limit_is_accepted_on_both(
    doors: Doors, operation: str
) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"input": "in '
        yield b'two chunks"}'

    path = await _path(doors, operation)
    by_lane, by_route = await doors.both(path, chunks, headers=JSON)
    assert by_lane.status_code == by_route.status_code == 200
    assert by_lane.json()["input"] == by_route.json()["input"] == "in two chunks"


@pytest.mark.parametrize("body", [b'{"input": "no content type"}', b"null"])
@pytest.mark.parametrize("operation", ["create_task", "execute_step"])
async def test_a_body_without_a_content_type_is_not_read_as_json_on_either(
    doors: Doors, operation: str, body: bytes
) -> None:
    """FastAPI does not read an undeclared body as JSON; the lane leaves such a body to
    the route, so the same request gets the same 422 on both and stores nothing."""
    path = await _path(doors, operation)
    before = await _stored(doors.lane, path)
    by_lane = await doors.lane.post(path, content=body)
    by_route = await doors.route.post(path, content=body)
    assert "content-type" not in by_lane.request.headers
    assert _outcome(by_lane) == _outcome(by_route) == (422, "validation_failed", "body"), (
        by_lane.text, by_route.text)
    assert by_lane.json() == by_route.json()
    assert await _stored(doors.lane, path) == before


async def test_a_step_to_an_unknown_task_is_404_on_both(doors: Doors) -> None:
    expected = {"message": "task no-such-task does not exist", "code": "not_found",
                "field": "task_id"}
    for request in ({"json": {"input": "x"}}, {"content": b""}):
        by_lane, by_route = await doors.both(f"{AP}/no-such-task/steps", **request)
        assert by_lane.status_code == by_route.status_code == 404
        assert by_lane.json() == by_route.json() == expected


@pytest.mark.parametrize("operation", ["create_task", "execute_step"])
async def test_without_a_token_and_anonymous_off_both_are_401(
    doors: Doors, runtime: HubRuntime, operation: str
) -> None:
    runtime.settings.ap_anonymous = False
    admin = bearer(ADMIN_TOKEN)
    path = AP
    if operation == "execute_step":
        task = await doors.lane.post(AP, json={"input": "t"}, headers=admin)
        assert task.status_code == 200, task.text
        path = f"{AP}/{task.json()['task_id']}/steps"
    before = await _stored(doors.lane, path, admin)
    for headers in ({}, bearer("th_not_a_token")):
        for request in ({"json": {"input": "x"}}, {"json": {"input": 5}}, {"content": b""}):
            by_lane, by_route = await doors.both(path, headers=headers, **request)
            assert _outcome(by_lane) == _outcome(by_route) == (
                401, "unauthenticated", "Authorization"), (headers, request)
            assert by_lane.json() == by_route.json()
            assert by_lane.headers["www-authenticate"] == "Bearer"
            assert by_route.headers["www-authenticate"] == "Bearer"
    assert await _stored(doors.lane, path, admin) == before
    accepted = await doors.lane.post(path, json={"input": "x"}, headers=admin)
    assert accepted.status_code == 200


@pytest.mark.parametrize("operation", ["create_task", "execute_step"])
async def test_a_malformed_body_without_a_token_gets_the_routes_answer(
    doors: Doors, runtime: HubRuntime, operation: str
) -> None:
    """The route reads the body's JSON before it checks the token; the lane gives the
    same answer to a request that is wrong in both ways."""
    runtime.settings.ap_anonymous = False
    path = AP
    if operation == "execute_step":
        task = await doors.lane.post(AP, json={"input": "t"}, headers=bearer(ADMIN_TOKEN))
        path = f"{AP}/{task.json()['task_id']}/steps"
    by_lane, by_route = await doors.both(path, content=b"{bad", headers=JSON)
    assert _outcome(by_lane) == _outcome(by_route) == (422, "malformed_json", "body"), (
        by_lane.text)


@pytest.mark.parametrize("operation", ["create_task", "execute_step"])
async def test_a_body_that_is_not_json_goes_on_to_the_route(doors: Doors, operation: str
                                                            ) -> None:
    """``text/plain`` is not the lane's: FastAPI's route answers it, with a 4xx in the
    Agent Protocol's error shape, and nothing is stored."""
    path = await _path(doors, operation)
    before = await _stored(doors.lane, path)
    doors.reached_fastapi.clear()
    by_lane = await doors.lane.post(path, content=b'{"input": "x"}',
                                    headers={"content-type": "text/plain"})
    assert doors.reached_fastapi == [("POST", path)]
    by_route = await doors.route.post(path, content=b'{"input": "x"}',
                                      headers={"content-type": "text/plain"})
    assert _outcome(by_lane) == _outcome(by_route) == (422, "validation_failed", "body")
    assert by_lane.json() == by_route.json()
    assert await _stored(doors.lane, path) == before


async def test_other_requests_on_the_door_go_on_to_fastapi(doors: Doors) -> None:
    task = (await doors.lane.post(AP, json={"input": "t"})).json()
    doors.reached_fastapi.clear()
    listed = await doors.lane.get(AP)
    steps = await doors.lane.get(f"{AP}/{task['task_id']}/steps")
    assert listed.status_code == steps.status_code == 200
    assert doors.reached_fastapi == [("GET", AP), ("GET", f"{AP}/{task['task_id']}/steps")]
