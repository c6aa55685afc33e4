"""One route table: the Agent Protocol door's hot operations (create task, execute step)
are direct routes (``api/direct_routes.py``), derived from the FastAPI routes and served
inside the app's middleware stack, with the same body limit check, error renderer and
JSON encoder as the routes. There is no second router in front of the app.

For every body a client may send, each operation answers as the spec and the hub's error
shape say; a middleware added to the app sees the request; a probe innermost in the
stack shows which requests the direct route left to FastAPI's router."""

from __future__ import annotations

import ast
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

import tickethub.api
from tests.agent_protocol.conftest import AP
from tests.conftest import ADMIN_TOKEN, bearer
from tickethub.api.agent_protocol import tasks
from tickethub.api.app import create_app
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings

LIMIT = 2048
JSON = {"content-type": "application/json"}


class _Probe:
    """A middleware: notes every request it sees, and the status answered."""

    def __init__(self, app: ASGIApp, seen: list[tuple[str, str, int]]) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                self.seen.append((scope["method"], scope["path"], message["status"]))
            await send(message)

        await self.app(scope, receive, sending)


@dataclass
class Door:
    client: httpx.AsyncClient
    app: FastAPI
    seen: list[tuple[str, str, int]] = field(default_factory=list)
    routed: list[tuple[str, str, int]] = field(default_factory=list)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"max_body_bytes": LIMIT})


@pytest.fixture
async def door(runtime: HubRuntime) -> AsyncIterator[Door]:
    app = create_app(runtime)
    seen: list[tuple[str, str, int]] = []
    routed: list[tuple[str, str, int]] = []
    app.add_middleware(_Probe, seen=seen)  # as any later middleware would be: outermost
    app.user_middleware.append(Middleware(_Probe, seen=routed))  # innermost: the router's
    async with (
        runtime.running(),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app, raise_app_exceptions=False),
                          base_url="http://hub") as client,
    ):
        yield Door(client, app, seen, routed)


async def _path(door: Door, operation: str) -> str:
    """The URL of ``operation``: create task, or execute step on a new task."""
    if operation == "create_task":
        return AP
    task = await door.client.post(AP, json={"input": "a task for steps"})
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


async def _streamed(size: int) -> AsyncIterator[bytes]:
    """A body without Content-Length (chunked), ``size`` bytes in 500-byte chunks."""
    sent = 0
    while sent < size:
        yield b" " * min(500, size - sent)
        sent += 500


DIRECT, ROUTER = True, False
CASES: list[tuple[str, dict[str, Any], tuple[int, str | None, str | None], bool]] = [
    ("valid", {"json": {"input": "x", "additional_input": {"k": [1, 2]}}}, (200, None, None),
     DIRECT),
    ("empty body", {"content": b""}, (200, None, None), DIRECT),
    ("null body", {"content": b"null", "headers": JSON}, (200, None, None), DIRECT),
    ("+json media type", {"content": b'{"input": "x"}',
                          "headers": {"content-type": "application/vnd.x+json"}},
     (200, None, None), DIRECT),
    ("malformed JSON", {"content": b'{"input": ', "headers": JSON},
     (422, "malformed_json", "body"), DIRECT),
    ("input not a string", {"json": {"input": 5}}, (422, "validation_failed", "input"),
     DIRECT),
    ("additional_input not an object", {"json": {"additional_input": "x"}},
     (422, "validation_failed", "additional_input"), DIRECT),
    ("body not an object", {"json": [1]}, (422, "validation_failed", "body"), DIRECT),
    ("oversize with Content-Length", {"json": {"input": "x" * LIMIT}},
     (413, "payload_too_large", "body"), DIRECT),
    ("not declared JSON", {"content": b'{"input": "x"}', "headers": {"content-type":
                                                                      "text/plain"}},
     (422, "validation_failed", "body"), ROUTER),
    ("no content type", {"content": b'{"input": "x"}'}, (422, "validation_failed", "body"),
     ROUTER),
]


@pytest.mark.parametrize("operation", ["create_task", "execute_step"])
@pytest.mark.parametrize(("case", "request_args", "expected", "direct"), CASES,
                         ids=[c[0] for c in CASES])
async def test_each_body_gets_its_answer_and_the_middleware_sees_it(
    door: Door, operation: str, case: str, request_args: dict[str, Any],
    expected: tuple[int, str | None, str | None], direct: bool
) -> None:
    path = await _path(door, operation)
    before = await _stored(door.client, path)
    door.seen.clear()
    door.routed.clear()
    response = await door.client.post(path, **request_args)
    assert _outcome(response) == expected, response.text
    assert door.seen == [("POST", path, expected[0])]
    assert door.routed == ([] if direct else [("POST", path, expected[0])])
    assert await _stored(door.client, path) == before + (expected[0] == 200)


@pytest.mark.parametrize("operation", ["create_task", "execute_step"])
async def test_an_oversize_streamed_body_is_413(door: Door, operation: str) -> None:
    """Without Content-Length the limit is enforced while the body is read."""
    path = await _path(door, operation)
    before = await _stored(door.client, path)
    response = await door.client.post(path, content=_streamed(LIMIT + 600), headers=JSON)
    assert response.request.headers.get("transfer-encoding") == "chunked"
    assert _outcome(response) == (413, "payload_too_large", "body")
    assert await _stored(door.client, path) == before


@pytest.mark.parametrize("operation", ["create_task", "execute_step"])
async def test_without_a_token_and_anonymous_off_it_is_401(
    door: Door, runtime: HubRuntime, operation: str
) -> None:
    runtime.settings.ap_anonymous = False
    admin = bearer(ADMIN_TOKEN)
    path = AP
    if operation == "execute_step":
        task = await door.client.post(AP, json={"input": "t"}, headers=admin)
        assert task.status_code == 200, task.text
        path = f"{AP}/{task.json()['task_id']}/steps"
    before = await _stored(door.client, path, admin)
    for headers in ({}, bearer("th_not_a_token")):
        for request in ({"json": {"input": "x"}}, {"json": {"input": 5}}, {"content": b""}):
            response = await door.client.post(path, headers=headers, **request)
            assert _outcome(response) == (401, "unauthenticated", "Authorization")
            assert response.headers["www-authenticate"] == "Bearer"
    assert await _stored(door.client, path, admin) == before


async def test_an_unexpected_error_is_a_500_in_the_doors_shape_from_the_one_guard(
    door: Door, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in the hot operation is caught by the app's ``UnexpectedErrors`` (the
    problem renderer, in the door's shape), and the middleware sees the 500."""

    async def broken(*args: object) -> dict[str, Any]:
        raise RuntimeError("a bug")

    monkeypatch.setattr(tasks, "create", broken)
    door.seen.clear()
    response = await door.client.post(AP, json={"input": "x"})
    assert _outcome(response) == (500, "internal_error", None)
    assert door.seen == [("POST", AP, 500)]


async def test_other_requests_on_the_door_go_on_to_the_router(door: Door) -> None:
    task = (await door.client.post(AP, json={"input": "t"})).json()
    door.routed.clear()
    listed = await door.client.get(AP)
    steps = await door.client.get(f"{AP}/{task['task_id']}/steps")
    assert listed.status_code == steps.status_code == 200
    assert door.routed == [("GET", AP, 200), ("GET", f"{AP}/{task['task_id']}/steps", 200)]


def test_no_module_restates_the_doors_paths() -> None:
    """The operation paths appear only as arguments of a route decorator: whatever
    serves them is derived from the route table."""
    api = Path(tickethub.api.__file__).parent
    restated = []
    for path in sorted(api.rglob("*.py")):
        tree = ast.parse(path.read_text())
        decorator_args = {id(arg) for node in ast.walk(tree)
                          if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef)
                          for dec in node.decorator_list if isinstance(dec, ast.Call)
                          for arg in dec.args}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and "/agent/tasks" in node.value and " " not in node.value
                    and id(node) not in decorator_args):  # a path or a regex, not prose
                restated.append(f"{path.relative_to(api)}:{node.lineno} {node.value!r}")
    assert restated == []


async def test_nothing_answers_in_front_of_the_middleware_stack(runtime: HubRuntime) -> None:
    """The app is FastAPI's own ``__call__``: no lane in front of the stack."""
    app = create_app(runtime)
    assert type(app).__call__ is FastAPI.__call__
