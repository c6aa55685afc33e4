"""Errors on the Agent Protocol routes, in the shape that protocol's clients expect.

The spec's 404 is ``{"message": ...}`` and its 422 is "a generic JSON object", so every
error on ``/ap/v1`` is ``application/json`` with a ``message``, plus the hub's stable
``code`` and the ``field`` at fault. Invalid and malformed bodies are 422, as the spec
wants. The mapping lives in a route class, so it applies to these routes only; the rest
of the hub keeps its ``application/problem+json``.

The route class also enforces the request body limits of this door (the app-wide limit
exempts ``/ap/v1/``): the hub's ``max_body_bytes`` for JSON bodies, and
``ap_max_artifact_bytes`` plus room for the multipart envelope for uploads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.types import Message

from tickethub.errors import PayloadTooLarge, TickethubError

log = logging.getLogger(__name__)

UPLOAD_OPERATION = "uploadAgentTaskArtifacts"
MULTIPART_SLACK = 64 * 1024


ERROR_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["message", "code"], "additionalProperties": True,
    "properties": {"message": {"type": "string"}, "code": {"type": "string"},
                   "field": {"type": "string"}, "errors": {"type": "array"}},
}
"""The body of :func:`error_response`, for the OpenAPI document."""


def error_response(status: int, message: str, code: str, field: str | None = None,
                   headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    body: dict[str, Any] = {"message": message, "code": code}
    if field is not None:
        body["field"] = field
    body.update(extra)
    return JSONResponse(body, status_code=status, headers=headers)


def _field_of(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts) or "body"


def _from_validation(exc: RequestValidationError) -> JSONResponse:
    return validation_error(list(exc.errors()))


def validation_error(errors: list[Any]) -> JSONResponse:
    """The 422 for pydantic's (or FastAPI's) validation errors of a request."""
    bad_json = next((e for e in errors if e.get("type") == "json_invalid"), None)
    if bad_json is not None:
        reason = bad_json.get("ctx", {}).get("error", "")
        return error_response(422, f"the body is not valid JSON: {reason}", "malformed_json",
                              "body")
    described = [{"field": _field_of(tuple(e["loc"])), "message": e["msg"]} for e in errors]
    first = described[0]
    return error_response(422, f"{first['field']}: {first['message']}", "validation_failed",
                          first["field"], errors=described)


def from_error(exc: TickethubError) -> JSONResponse:
    return error_response(exc.status, exc.detail, exc.code, exc.field, exc.headers() or None,
                          **exc.extra)


def _cause(exc: BaseException) -> TickethubError | None:
    seen = exc.__cause__ or exc.__context__
    while seen is not None:
        if isinstance(seen, TickethubError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def too_large(max_bytes: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"the request body is over the limit of {max_bytes} bytes",
                           field="body")


def _limited(request: Request, max_bytes: int) -> Request:
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > max_bytes:
        raise too_large(max_bytes)
    receive = request.receive
    seen = 0

    async def limited() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > max_bytes:
                raise too_large(max_bytes)
        return message

    return Request(request.scope, limited)


class AgentProtocolRoute(APIRoute):
    """An ``APIRoute`` whose errors come out in the Agent Protocol's shape."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()
        upload = self.operation_id == UPLOAD_OPERATION

        async def handler(request: Request) -> Response:
            settings = request.app.state.hub.settings
            limit = (settings.ap_max_artifact_bytes + MULTIPART_SLACK if upload
                     else settings.max_body_bytes)
            try:
                if request.method in ("POST", "PUT", "PATCH"):
                    request = _limited(request, limit)
                return await handle(request)
            except RequestValidationError as exc:
                return _from_validation(exc)
            except TickethubError as exc:
                return from_error(exc)
            except HTTPException as exc:
                cause = _cause(exc)
                if cause is not None:
                    return from_error(cause)
                return error_response(exc.status_code, str(exc.detail),
                                      f"http_{exc.status_code}",
                                      headers=dict(exc.headers) if exc.headers else None)

        return handler
