"""The one place errors become HTTP.

Every error, whatever raised it (a :class:`TickethubError` from a service, FastAPI's
request validation, Starlette's 404/405, the body-size limit, a bug), becomes one
:class:`~tickethub.errors.Problem` (:func:`problem_of`), and :func:`render` turns that
into a response in the wire format of the door the request came through: a route names
its door's format in its ``wire`` attribute (the Agent Protocol and OpenAI route
classes do), every other path gets ``application/problem+json`` (RFC 9457) with a
stable ``code`` and, where one field is to blame, that ``field``. Doors never build
error bodies themselves.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tickethub import json_codec
from tickethub.api.problem_docs import PROBLEM
from tickethub.api.route_table import methods_at, route_table
from tickethub.errors import (
    DatabaseUnavailable,
    MalformedJSON,
    Problem,
    TickethubError,
    ValidationFailed,
)

log = logging.getLogger(__name__)

Wire = Callable[[Problem, str | None], tuple[int, dict[str, Any], str]]
"""A door's wire format: (problem, request path) → (status, body, media type)."""

INTERNAL = Problem(500, "internal_error", "Internal error",
                   "the hub hit an unexpected error; nothing was half-written")
_HTTP_CODES = {401: "unauthenticated", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 413: "payload_too_large"}


def problem_json(problem: Problem, instance: str | None) -> tuple[int, dict[str, Any], str]:
    """The hub's own wire format: RFC 9457 ``application/problem+json``."""
    return problem.status, problem.document(instance), PROBLEM


def _field_of(loc: Sequence[Any]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts) or "body"


def validation_problem(errors: Sequence[Any]) -> Problem:
    """The problem of a request that failed validation (pydantic's or FastAPI's error
    list): ``malformed_json`` when the body is not JSON at all, else ``validation_failed``
    naming each field."""
    bad_json = next((e for e in errors if e.get("type") == "json_invalid"), None)
    if bad_json is not None:
        reason = bad_json.get("ctx", {}).get("error", "")
        return MalformedJSON(f"the body is not valid JSON: {reason}", field="body").problem()
    described = [{"field": _field_of(e["loc"]), "message": e["msg"]} for e in errors]
    first = described[0]
    return ValidationFailed(f"{first['field']}: {first['message']}", field=first["field"],
                            errors=described).problem()


def problem_of(exc: BaseException) -> Problem:
    """The problem that ``exc`` stands for; anything unforeseen is ``internal_error``."""
    if isinstance(exc, TickethubError | DatabaseUnavailable):
        return exc.problem()
    if isinstance(exc, RequestValidationError):
        return validation_problem(list(exc.errors()))
    if isinstance(exc, ValidationError):
        return validation_problem(exc.errors(include_url=False))
    if isinstance(exc, HTTPException):
        cause = _cause(exc)
        if cause is not None:  # e.g. a body read that failed on the size limit
            return cause.problem()
        code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
        return Problem(exc.status_code, code, str(exc.detail), str(exc.detail),
                       headers=dict(exc.headers or {}))
    return INTERNAL


def _cause(exc: BaseException) -> TickethubError | None:
    seen = exc.__cause__ or exc.__context__
    while seen is not None:
        if isinstance(seen, TickethubError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def wire_for(scope: Scope) -> Wire:
    """The wire format of the route that took the request (``problem_json`` if none)."""
    wire: Wire = getattr(scope.get("route"), "wire", problem_json)
    return wire


def render(problem: Problem, scope: Scope | None = None, *, wire: Wire | None = None,
           headers: dict[str, str] | None = None) -> Response:
    """The response for ``problem``: in ``wire`` (default: the format of the request's
    route, see :func:`wire_for`), with the problem's headers plus ``headers``. The one
    error renderer; JSON is encoded as every route's (``json_codec``)."""
    if wire is None:
        wire = problem_json if scope is None else wire_for(scope)
    status, body, media_type = wire(problem, None if scope is None else scope.get("path"))
    return Response(json_codec.dumps_bytes(body), status_code=status, media_type=media_type,
                    headers={**problem.headers, **(headers or {})})


def allowed_methods(request: Request, routes: Sequence[BaseRoute] | None = None
                    ) -> list[str]:
    """Every method that ``routes`` (default: the app's, included routers' too) serve at
    the request's path, for a 405's ``Allow``. Starlette names only the first route that
    matched the path, though GET and POST of one path are often two routes."""
    return sorted(methods_at(request.scope, route_table(
        request.app.router.routes if routes is None else routes)))


def log_outage(exc: BaseException, scope: Scope) -> None:
    """A request failed on a database outage: one warning line, not a traceback each
    (the route's handler and the direct routes alike)."""
    if isinstance(exc, DatabaseUnavailable):
        log.warning("database unavailable on %s %s: %s", scope.get("method"),
                    scope.get("path"), exc)


async def _handle(request: Request, exc: Exception) -> Response:
    """The exception handler for every error class the app maps (see ``install``)."""
    log_outage(exc, request.scope)
    headers = None
    if isinstance(exc, HTTPException) and exc.status_code == 405:
        # Starlette's own Allow names only the first route that matched the path.
        methods = allowed_methods(request)
        if methods:
            headers = {"Allow": ", ".join(methods)}
    return render(problem_of(exc), request.scope, headers=headers)


class UnexpectedErrors:
    """Any other error, as the 500 ``internal_error`` problem in the route's format.

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
            log.exception("unhandled error on %s %s", scope["method"], scope["path"],
                          exc_info=exc)
            await render(problem_of(exc), scope)(scope, receive, send)


HANDLERS = {
    TickethubError: _handle,
    DatabaseUnavailable: _handle,
    RequestValidationError: _handle,
    HTTPException: _handle,
}


def install(app: FastAPI) -> None:
    for exc_class, handler in HANDLERS.items():
        app.add_exception_handler(exc_class, handler)
    app.add_middleware(UnexpectedErrors)
