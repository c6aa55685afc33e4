"""The fast lane: the Agent Protocol door's two hot operations, create task and execute
step, served straight from ASGI.

An AP client's load is these two requests, again and again. Through FastAPI each costs
about 0.25 ms of CPU in routing, dependency solving and validation before the hub does
any work; the lane does the same work directly: it reads the body under the door's
limit, validates it with the same pydantic models (in one pass from JSON), acts as the
same actor, calls the same functions as the routes (``tasks.create``, ``tasks.execute``)
and answers errors through the same mapping (``errors``). Anything else, including
these paths with a body that is not JSON, goes on to FastAPI unchanged; the routes stay
the reference and document the operations in the OpenAPI schema.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from tickethub.api.agent_protocol import tasks
from tickethub.api.agent_protocol.context import actor_for_token, services_of
from tickethub.api.agent_protocol.errors import from_error, too_large, validation_error
from tickethub.api.agent_protocol.schemas import StepRequestBody, TaskRequestBody
from tickethub.api.deps import bearer_token
from tickethub.errors import TickethubError

TASKS_PATH = "/ap/v1/agent/tasks"
_STEPS_PATH = re.compile(r"^/ap/v1/agent/tasks/([^/]+)/steps$")
_TASK_BODY: TypeAdapter[TaskRequestBody | None] = TypeAdapter(TaskRequestBody | None)
_STEP_BODY: TypeAdapter[StepRequestBody | None] = TypeAdapter(StepRequestBody | None)


def _json_or_none(scope: Scope) -> bool:
    """True when the body is declared JSON, or not declared (FastAPI parses both)."""
    for name, value in scope["headers"]:
        if name == b"content-type":
            media = value.split(b";", 1)[0].strip().lower()
            return media == b"application/json" or media.endswith(b"+json")
    return True


class FastLane:
    """ASGI middleware: serves ``POST /ap/v1/agent/tasks`` and
    ``POST /ap/v1/agent/tasks/{task_id}/steps`` itself (see the module doc)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and _json_or_none(scope):
            path = scope["path"]
            if path == TASKS_PATH:
                await self._serve(scope, receive, send, None)
                return
            match = _STEPS_PATH.match(path)
            if match is not None:
                await self._serve(scope, receive, send, match.group(1))
                return
        await self.app(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send,
                     task_id: str | None) -> None:
        request = Request(scope, receive)
        hub = scope["app"].state.hub
        try:
            body = await _read(request, hub.settings.max_body_bytes)
            svc = services_of(scope["app"])
            me = await actor_for_token(hub, svc, bearer_token(request))
            out: dict[str, Any]
            if task_id is None:
                out = await tasks.create(svc, me, _TASK_BODY.validate_json(body or b"null"))
            else:
                out = await tasks.execute(hub, svc, me, task_id,
                                          _STEP_BODY.validate_json(body or b"null"))
            response = JSONResponse(out)
        except ValidationError as exc:
            response = validation_error(exc.errors(include_url=False))
        except TickethubError as exc:
            response = from_error(exc)
        await response(scope, receive, send)


async def _read(request: Request, max_bytes: int) -> bytes:
    """The whole body, or ``PayloadTooLarge`` as soon as it passes ``max_bytes``."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > max_bytes:
        raise too_large(max_bytes)
    chunks = []
    seen = 0
    async for chunk in request.stream():
        seen += len(chunk)
        if seen > max_bytes:
            raise too_large(max_bytes)
        chunks.append(chunk)
    return b"".join(chunks)
