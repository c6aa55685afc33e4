"""Request body size limits: one check (:func:`limited`) in one place, the app-wide
:class:`BodySizeLimit` middleware, which holds every request to its route's limit and
answers one over it in that route's wire format."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tickethub.api.problems import Wire, problem_json, render
from tickethub.api.route_table import RouteTable, route_of, route_table
from tickethub.errors import PayloadTooLarge


def too_large(max_bytes: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"the request body is over the limit of {max_bytes} bytes",
                           field="body")


def declared_length(scope: Scope) -> int | None:
    """The body's length as ``Content-Length`` gives it (0 without one), or ``None`` when
    it is not framed by it (``Transfer-Encoding``, a malformed value): then only counting
    the body as it streams in tells."""
    length = 0
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            if not value.isdigit():
                return None  # let the count decide; the server refuses it anyway
            length = int(value)
        elif name == b"transfer-encoding":
            return None
    return length


def limited(scope: Scope, receive: Receive, max_bytes: int) -> Receive:
    """``receive`` for a body of at most ``max_bytes``: raises ``PayloadTooLarge`` at once
    when ``Content-Length`` says more, else as soon as the streamed body passes it.

    ``receive`` itself when the body cannot pass the limit: a request without
    ``Transfer-Encoding`` has the body its ``Content-Length`` says (none without one),
    which the server's HTTP parser holds it to, so there is nothing to count."""
    length = declared_length(scope)
    if length is not None:
        if length > max_bytes:
            raise too_large(max_bytes)
        return receive
    seen = 0

    async def receive_limited() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > max_bytes:
                raise too_large(max_bytes)
        return message

    return receive_limited


class BodySizeLimit:
    """Rejects a body over its route's limit with 413 (see :func:`limited`) and
    ``Connection: close``, in the route's wire format (``api/problems.py``), before the
    app reads it: the hub's ``max_bytes``, or more where the route says so with a
    ``body_limit(scope)`` method (the Agent Protocol door's uploads). A route can only
    raise the limit: a body within ``max_bytes`` by its ``Content-Length`` (nearly every
    request) goes on without looking the route up. ``routes``: the app's, read at the
    first request that needs them."""

    def __init__(self, app: ASGIApp, max_bytes: int,
                 routes: Callable[[], Sequence[BaseRoute]] = lambda: ()) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self._routes = routes
        self._table: RouteTable | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = declared_length(scope)
        if length is not None and length <= self.max_bytes:
            await self.app(scope, receive, send)
            return
        if self._table is None:
            self._table = route_table(self._routes())
        route = route_of(scope, self._table)
        route_limit = getattr(route, "body_limit", None)
        limit = max(self.max_bytes, route_limit(scope) if route_limit is not None else 0)
        wire: Wire = getattr(route, "wire", problem_json)
        try:
            checked = limited(scope, receive, limit)
        except PayloadTooLarge as exc:
            await _reject(exc, wire, scope, receive, send)
            return
        if checked is receive:  # a body within the route's limit by its length
            await self.app(scope, receive, send)
            return
        exceeded: PayloadTooLarge | None = None
        rejected = False

        async def receive_checked() -> Message:
            nonlocal exceeded
            try:
                return await checked()
            except PayloadTooLarge as exc:
                exceeded = exc
                raise

        async def guarded_send(message: Message) -> None:
            # Frameworks may turn a failed body read into their own 400; once the limit
            # was passed, whatever the app answers is replaced by our 413.
            nonlocal rejected
            if exceeded is None:
                await send(message)
            elif message["type"] == "http.response.start" and not rejected:
                rejected = True
                await _reject(exceeded, wire, scope, receive, send)

        try:
            await self.app(scope, receive_checked, guarded_send)
        except PayloadTooLarge as exc:
            if not rejected:
                await _reject(exc, wire, scope, receive, send)


async def _reject(exc: PayloadTooLarge, wire: Wire, scope: Scope, receive: Receive,
                  send: Send) -> None:
    response = render(exc.problem(), scope, wire=wire, headers={"Connection": "close"})
    await response(scope, receive, send)
