"""OpenAI's error shape, scoped to the ``/v1`` routes.

``{"error": {"message", "type", "param", "code"}}`` with the status OpenAI would use. The
native API keeps its ``application/problem+json`` mapping (``api/problems.py``); this
module never touches it: :class:`OpenAIRoute` catches errors of its own routes only.
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

from tickethub.errors import TickethubError

log = logging.getLogger(__name__)

_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
          404: "invalid_request_error", 409: "invalid_request_error",
          413: "invalid_request_error", 422: "invalid_request_error", 429: "rate_limit_error",
          502: "upstream_error", 504: "upstream_error"}


ERROR_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["error"],
    "properties": {"error": {
        "type": "object", "required": ["message", "type"],
        "properties": {"message": {"type": "string"}, "type": {"type": "string"},
                       "param": {"type": ["string", "null"]},
                       "code": {"type": ["string", "null"]}}}},
}
"""The body of :func:`error_body`, for the OpenAPI document."""
STATUSES = (400, 401, 403, 404, 409, 413, 429, 500, 502, 504)
UPSTREAM = {502: "The upstream model failed", 504: "The upstream model did not answer in time"}


def error_body(status: int, message: str, code: str | None, param: str | None = None
               ) -> dict[str, Any]:
    return {"error": {"message": message, "type": _TYPES.get(status, "api_error"),
                      "param": param, "code": code}}


def error_response(status: int, message: str, code: str | None, param: str | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, message, code, param), status_code=status,
                        headers=headers)


def _param(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts) or "body"


def response_for(exc: Exception) -> JSONResponse:
    """The OpenAI-shaped response for any error raised inside a ``/v1`` route."""
    if isinstance(exc, TickethubError):
        headers = exc.headers() or None
        message = exc.detail
        if exc.status == 401:
            message = f"Incorrect API key provided: {exc.detail}"
        return error_response(exc.status, message, exc.code, exc.field, headers)
    if isinstance(exc, RequestValidationError):
        errors = list(exc.errors())
        bad_json = next((e for e in errors if e.get("type") == "json_invalid"), None)
        if bad_json is not None:
            return error_response(400, "We could not parse the JSON body of your request: "
                                  f"{bad_json.get('ctx', {}).get('error', '')}",
                                  "malformed_json", "body")
        first = errors[0]
        param = _param(tuple(first["loc"]))
        return error_response(400, f"Invalid value for '{param}': {first['msg']}",
                              "invalid_value", param)
    if isinstance(exc, HTTPException):
        return error_response(exc.status_code, str(exc.detail), f"http_{exc.status_code}",
                              headers=dict(exc.headers) if exc.headers else None)
    log.exception("unhandled error in the OpenAI door", exc_info=exc)
    return error_response(500, "The hub hit an unexpected error.", "internal_error")


class OpenAIRoute(APIRoute):
    """A route whose errors come out in OpenAI's shape."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except Exception as exc:  # every error leaves this door in one shape
                return response_for(exc)

        return handle
