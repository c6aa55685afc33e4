"""Direct routes: a route's JSON operation served without FastAPI's per-request layers
(router scan, dependency solving), for the few operations whose cost is mostly those
layers (the Agent Protocol door's create task and execute step, the native ask, answer and
long-poll wait).

Nothing here names a path. A route opts in by decorating its endpoint with
:func:`direct`, giving a handler that does the same work from the raw request; the
:class:`DirectRoutes` middleware builds its table from ``app.routes`` (each such route's
``path_regex``, ``methods`` and endpoint), so the route table stays the only one. It sits
in the app's middleware stack like any other middleware (anything added with
``app.add_middleware`` runs around it; the error guard ``UnexpectedErrors`` and the body
limit ``api/limits.BodySizeLimit`` too, which holds its body to the route's), renders errors
with the one renderer in the route's wire format (``api/problems.py``) and encodes JSON
as the routes do (``json_codec``). A request it does not take (another path or method,
a ``POST`` body not declared JSON, a ``GET`` with a body) goes on to FastAPI unchanged;
the route stays the reference and documents the operation in the OpenAPI schema.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from tickethub.api.problems import INTERNAL, log_outage, problem_of, render
from tickethub.api.responses import FastJSONResponse
from tickethub.api.route_table import route_path, route_table


class ClientGone(Exception):
    """The client went away before its body was read; nothing to answer."""


@dataclass(frozen=True)
class DirectRequest:
    """What a direct handler gets: the app, the ASGI scope, the matched path parameters,
    the request headers it may read, and the whole body (already under the limit)."""

    app: Any
    scope: Scope
    path_params: dict[str, str]
    headers: dict[bytes, bytes]
    body: bytes


DirectHandler = Callable[[DirectRequest], Awaitable[Any]]
F = TypeVar("F", bound=Callable[..., Any])


def direct(handler: DirectHandler) -> Callable[[F], F]:
    """Decorate a route's endpoint (below ``@router.post(...)``) with ``handler``: the
    same operation from a :class:`DirectRequest`, returning the JSON body of the 200, or
    a ready :class:`~starlette.responses.Response` (another status, headers, a body the
    route encodes itself), which is sent as it is."""

    def mark(endpoint: F) -> F:
        endpoint.__direct__ = handler  # type: ignore[attr-defined]
        return endpoint

    return mark


def _json_or_empty(headers: dict[bytes, bytes]) -> bool:
    """True when the body is declared JSON, or is empty (no body: the defaults). FastAPI
    does not read an undeclared body as JSON, so neither does a direct route."""
    declared = headers.get(b"content-type")
    if declared is None:
        return headers.get(b"content-length") == b"0"
    media = declared.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or media.endswith(b"+json")


def _no_body(headers: dict[bytes, bytes]) -> bool:
    """True when a request (a ``GET``) declares no body; one with a body goes on to
    FastAPI, which decides what it means."""
    return (b"transfer-encoding" not in headers
            and headers.get(b"content-length", b"0") == b"0")


_METHODS = frozenset(("GET", "POST"))


@dataclass(frozen=True)
class _Direct:
    path_regex: re.Pattern[str]  # the route's, with the prefixes of including routers
    methods: frozenset[str]
    route: BaseRoute  # the route as declared: ``scope["route"]``, its wire and limit
    handler: DirectHandler


def _direct_routes(routes: list[BaseRoute]) -> list[_Direct]:
    """Each route of ``routes`` (included routers' too: ``route_table``) with a direct
    handler, in the router's order."""
    return [_Direct(path_regex, methods, route, handler)
            for path_regex, methods, route in route_table(routes)
            if (handler := getattr(getattr(route, "endpoint", None), "__direct__", None))
            is not None]


class DirectRoutes:
    """The middleware serving the app's direct routes (see the module doc). Add it
    before the other middleware, so it is the innermost one."""

    _WANTED = frozenset((b"content-type", b"content-length", b"transfer-encoding",
                         b"authorization", b"idempotency-key", b"x-tickethub-via"))

    def __init__(self, app: ASGIApp, routes: Callable[[], list[BaseRoute]]) -> None:
        self.app = app
        self._routes = routes  # the app's routes, read once at the first request
        self._table: list[_Direct] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in _METHODS:
            if self._table is None:
                self._table = _direct_routes(self._routes())
            path = route_path(scope)
            method = scope["method"]
            for entry in self._table:
                match = entry.path_regex.match(path)
                if match is not None and method in entry.methods:
                    headers: dict[bytes, bytes] = {}
                    for name, value in scope["headers"]:  # the first of each, as Starlette
                        if name in self._WANTED:
                            headers.setdefault(name, value)
                    if (_json_or_empty(headers) if method == "POST"
                            else _no_body(headers)):
                        await self._serve(entry.route, entry.handler, match.groupdict(),
                                          headers, scope, receive, send)
                        return
                    break
        await self.app(scope, receive, send)

    async def _serve(self, route: Any, handler: DirectHandler, params: dict[str, str],
                     headers: dict[bytes, bytes], scope: Scope, receive: Receive,
                     send: Send) -> None:
        scope["route"] = route  # as the router would: the route's wire format applies
        scope["path_params"] = params
        try:
            body = await _read(receive)  # held to the route's limit by ``BodySizeLimit``
            out = await handler(DirectRequest(scope.get("app"), scope, params, headers, body))
            response = out if isinstance(out, Response) else FastJSONResponse(out)
        except ClientGone:
            return
        except Exception as exc:
            problem = problem_of(exc)
            if problem is INTERNAL:
                raise  # a bug: the app's guard (UnexpectedErrors) logs and answers it
            log_outage(exc, scope)
            response = render(problem, scope)
        await response(scope, receive, send)


async def _read(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)
