"""The fast lane: the Agent Protocol door's two hot operations, create task and execute
step, served straight from ASGI.

An AP client's load is these two requests, again and again. Through FastAPI each costs
about 0.25 ms of CPU in routing, dependency solving and validation before the hub does
any work; the lane does the same work directly: it reads the body under the door's
limit, validates it with the same pydantic models (in one pass from JSON), acts as the
same actor, calls the same functions as the routes (``tasks.create``, ``tasks.execute``)
and answers errors through the same mapping (``errors``). Anything else, including
these paths with a body not declared JSON, goes on to FastAPI unchanged; the routes stay
the reference and document the operations in the OpenAPI schema.
"""

from __future__ import annotations

import contextlib
import logging
import re
from typing import Any

from pydantic import TypeAdapter, ValidationError
from starlette.types import Receive, Scope, Send

from tickethub.api.agent_protocol import tasks
from tickethub.api.agent_protocol.context import actor_for_token, services_of
from tickethub.api.agent_protocol.errors import (
    error_response,
    from_error,
    too_large,
    validation_error,
)
from tickethub.api.agent_protocol.schemas import StepRequestBody, TaskRequestBody
from tickethub.api.deps import bearer_of, client_address
from tickethub.api.responses import FastJSONResponse
from tickethub.errors import TickethubError

log = logging.getLogger(__name__)

TASKS_PATH = "/ap/v1/agent/tasks"
_STEPS_PATH = re.compile(r"^/ap/v1/agent/tasks/([^/]+)/steps$")
_TASK_BODY: TypeAdapter[TaskRequestBody | None] = TypeAdapter(TaskRequestBody | None)
_STEP_BODY: TypeAdapter[StepRequestBody | None] = TypeAdapter(StepRequestBody | None)
_WANTED = (b"content-type", b"content-length", b"authorization")


def _headers(scope: Scope) -> dict[bytes, bytes]:
    """The few request headers the lane reads (names are lower-case in ASGI)."""
    return {name: value for name, value in scope["headers"] if name in _WANTED}


class ClientGone(Exception):
    """The client went away before its body was read; nothing to answer."""


def _json_or_empty(headers: dict[bytes, bytes]) -> bool:
    """True when the body is declared JSON, or is empty (no body: the defaults). FastAPI
    does not read an undeclared body as JSON, so neither does the lane."""
    declared = headers.get(b"content-type")
    if declared is None:
        return headers.get(b"content-length") == b"0"
    media = declared.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or media.endswith(b"+json")


class FastLane:
    """Serves ``POST /ap/v1/agent/tasks`` and ``POST /ap/v1/agent/tasks/{task_id}/steps``
    for ``app`` (see the module doc); the app calls ``serve`` first with every request."""

    def __init__(self, app: Any) -> None:
        self.app = app  # the FastAPI app, with ``state.hub``

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Answer the request if it is the lane's; False (nothing done) if not."""
        if scope["type"] != "http" or scope["method"] != "POST":
            return False
        path = scope["path"]
        steps = None if path == TASKS_PATH else _STEPS_PATH.match(path)
        if path != TASKS_PATH and steps is None:
            return False
        headers = _headers(scope)
        if not _json_or_empty(headers):
            return False
        try:
            await self._serve(scope, receive, send, headers,
                              steps.group(1) if steps is not None else None)
        except Exception:
            # FastAPI's error middleware is not around the lane: answer 500 here (if
            # nothing was sent yet) and let the server log the error.
            log.exception("the Agent Protocol fast lane failed on %s", path)
            with contextlib.suppress(Exception):
                await error_response(500, "internal server error", "internal_error")(
                    scope, receive, send)
        return True

    async def _serve(self, scope: Scope, receive: Receive, send: Send,
                     headers: dict[bytes, bytes], task_id: str | None) -> None:
        app = self.app
        hub = app.state.hub
        adapter = _TASK_BODY if task_id is None else _STEP_BODY
        try:
            raw = await _read(receive, headers, hub.settings.max_body_bytes)
            # As FastAPI does: a body that is not JSON at all is refused before anything
            # else; one that does not fit the model only after the actor is known.
            invalid = None
            try:
                body = adapter.validate_json(raw or b"null")
            except ValidationError as exc:
                if any(e["type"] == "json_invalid" for e in exc.errors()):
                    raise
                invalid = exc
            svc = services_of(app)
            token = bearer_of(headers.get(b"authorization", b"").decode("latin-1"))
            me = await actor_for_token(hub, svc, token, client_address(scope))
            if invalid is not None:
                raise invalid
            out: dict[str, Any]
            if task_id is None:
                out = await tasks.create(svc, me, body)
            else:
                out = await tasks.execute(hub, svc, me, task_id, body)
            response = FastJSONResponse(out)
        except ClientGone:
            return
        except ValidationError as exc:
            response = validation_error(exc.errors(include_url=False))
        except TickethubError as exc:
            response = from_error(exc)
        await response(scope, receive, send)


async def _read(receive: Receive, headers: dict[bytes, bytes], max_bytes: int) -> bytes:
    """The whole body, or ``PayloadTooLarge`` as soon as it passes ``max_bytes``."""
    length = headers.get(b"content-length", b"")
    if length.isdigit() and int(length) > max_bytes:
        raise too_large(max_bytes)
    chunks = []
    seen = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        seen += len(chunk)
        if seen > max_bytes:
            raise too_large(max_bytes)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)

