"""The one place errors become HTTP: ``application/problem+json`` (RFC 9457) with a
stable ``code`` and, where one field is to blame, that ``field``."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tickethub.errors import TickethubError

log = logging.getLogger(__name__)

PROBLEM = "application/problem+json"


class Problem(BaseModel):
    """An error as every door but ``/ap/v1`` and ``/v1`` sends it (RFC 9457), for the
    OpenAPI document. Some codes add members (``stale_version``: ``expected``/``actual``)."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    code: str = Field(description="Stable and machine-readable, e.g. 'not_found'.")
    field: str | None = Field(None, description="The field or parameter at fault.")
    instance: str | None = None
    errors: list[dict[str, str]] | None = Field(None, description="validation_failed: "
                                                "each field and what is wrong with it.")


_MEANING = {
    400: "Bad request, or a body that is not JSON (`malformed_json`)",
    401: "No valid token (`WWW-Authenticate: Bearer`)",
    403: "The token's role may not do this",
    404: "No such resource",
    409: "Conflict: a stale `version`, an illegal status change, an event cursor ahead of "
         "the log, a reused idempotency key",
    413: "The body is larger than `max_body_bytes`",
    422: "A field or parameter is invalid; `field` names it",
    429: "Too many failed credentials from this client or for this account; `Retry-After` "
         "says when to try again",
    500: "The hub hit an unexpected error",
    503: "A channel this needs is off",
}


def error_responses(schema: dict[str, Any], media_type: str = "application/json",
                    statuses: tuple[int, ...] = tuple(_MEANING),
                    meaning: dict[int, str] | None = None) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of a door's errors: each status with the door's error
    ``schema`` under ``media_type``. Given to a router (``APIRouter(responses=...)``), so
    every route of the door documents what it really returns."""
    meanings = {**_MEANING, **(meaning or {})}
    return {status: {"description": meanings[status],
                     "content": {media_type: {"schema": schema}}} for status in statuses}


PROBLEM_RESPONSES = error_responses(Problem.model_json_schema(), PROBLEM)
"""The errors of the hub's own routes (``/api/v1``, ``/hooks``, ``/healthz``)."""


def problem_response(problem: dict[str, Any], headers: dict[str, str] | None = None
                     ) -> JSONResponse:
    return JSONResponse(problem, status_code=problem["status"], media_type=PROBLEM,
                        headers=headers)


def _field_of(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts) or "body"


async def _tickethub_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, TickethubError)
    problem = exc.to_problem()
    problem["instance"] = request.url.path
    return problem_response(problem, exc.headers() or None)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        first = next(e for e in errors if e.get("type") == "json_invalid")
        return problem_response({
            "type": "https://tickethub.dev/problems/malformed_json", "title": "Malformed JSON",
            "status": 400, "code": "malformed_json", "field": "body",
            "detail": f"the body is not valid JSON: {first.get('ctx', {}).get('error', '')}",
            "instance": request.url.path,
        })
    described = [{"field": _field_of(tuple(e["loc"])), "message": e["msg"]} for e in errors]
    first_error = described[0]
    return problem_response({
        "type": "https://tickethub.dev/problems/validation_failed", "title": "Validation failed",
        "status": 422, "code": "validation_failed", "field": first_error["field"],
        "detail": f"{first_error['field']}: {first_error['message']}", "errors": described,
        "instance": request.url.path,
    })


def allowed_methods(request: Request, routes: Sequence[BaseRoute] | None = None
                    ) -> list[str]:
    """Every method that ``routes`` (default: the app's) serve at the request's path, for
    a 405's ``Allow``. Starlette names only the first route that matched the path, though
    GET and POST of one path are often two routes."""
    methods: set[str] = set()
    for route in request.app.router.routes if routes is None else routes:
        served = getattr(route, "methods", None)
        if served and route.matches(request.scope)[0] is not Match.NONE:
            methods |= served
    return sorted(methods)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        exc.headers = {**(exc.headers or {}), "Allow": ", ".join(allowed_methods(request))}
    codes = {404: "not_found", 405: "method_not_allowed", 401: "unauthenticated",
             403: "forbidden", 413: "payload_too_large"}
    code = codes.get(exc.status_code, f"http_{exc.status_code}")
    return problem_response({
        "type": f"https://tickethub.dev/problems/{code}", "title": str(exc.detail),
        "status": exc.status_code, "code": code, "detail": str(exc.detail),
        "instance": request.url.path,
    }, headers=dict(exc.headers) if exc.headers else None)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response({
        "type": "https://tickethub.dev/problems/internal_error", "title": "Internal error",
        "status": 500, "code": "internal_error",
        "detail": "the hub hit an unexpected error; nothing was half-written",
        "instance": request.url.path,
    })


class UnexpectedErrors:
    """Any other error, as the problem+json 500 of :func:`_unexpected`.

    Not an exception handler: Starlette re-raises after a handler for ``Exception`` has
    answered, and the server then drops the keep-alive connection without a
    ``Connection: close``, so the client's next request on it fails. Here the error ends
    with the response. Once a response has started (a stream) it cannot be replaced, so
    the error goes on to the server, which closes that connection."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            if started:
                raise
            response = await _unexpected(Request(scope), exc)
            await response(scope, receive, send)


HANDLERS = {
    TickethubError: _tickethub_error,
    RequestValidationError: _validation_error,
    HTTPException: _http_error,
}


def install(app: FastAPI) -> None:
    for exc_class, handler in HANDLERS.items():
        app.add_exception_handler(exc_class, handler)
    app.add_middleware(UnexpectedErrors)
