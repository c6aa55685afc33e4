"""Request body size limits: one check, used by the app-wide middleware and by any door
with limits of its own (the Agent Protocol door's uploads)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tickethub.api.problems import problem_json, render
from tickethub.errors import PayloadTooLarge


def too_large(max_bytes: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"the request body is over the limit of {max_bytes} bytes",
                           field="body")


def limited(scope: Scope, receive: Receive, max_bytes: int) -> Receive:
    """``receive`` for a body of at most ``max_bytes``: raises ``PayloadTooLarge`` at once
    when ``Content-Length`` says more, else as soon as the streamed body passes it.

    ``receive`` itself when the body cannot pass the limit: a request without
    ``Transfer-Encoding`` has the body its ``Content-Length`` says (none without one),
    which the server's HTTP parser holds it to, so there is nothing to count."""
    framed = True
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            if not value.isdigit():
                framed = False  # let the count below decide; the server refuses it anyway
            elif int(value) > max_bytes:
                raise too_large(max_bytes)
        elif name == b"transfer-encoding":
            framed = False
    if framed:
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
    """Rejects bodies over ``max_bytes`` with 413 (see :func:`limited`), answered as
    ``application/problem+json`` (the limit is checked before any route is chosen) with
    ``Connection: close``. Paths under ``exempt`` (a door with limits of its own) are left
    alone."""

    def __init__(self, app: ASGIApp, max_bytes: int, exempt: tuple[str, ...] = ()) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.exempt = exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (self.exempt and scope["path"].startswith(self.exempt)):
            await self.app(scope, receive, send)
            return
        try:
            checked = limited(scope, receive, self.max_bytes)
        except PayloadTooLarge as exc:
            await self._reject(exc, scope, receive, send)
            return
        if checked is receive:  # a body within the limit by its length: nothing to watch
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
                await self._reject(exceeded, scope, receive, send)

        try:
            await self.app(scope, receive_checked, guarded_send)
        except PayloadTooLarge as exc:
            if not rejected:
                await self._reject(exc, scope, receive, send)

    @staticmethod
    async def _reject(exc: PayloadTooLarge, scope: Scope, receive: Receive, send: Send
                      ) -> None:
        response = render(exc.problem(), scope, wire=problem_json, headers={"Connection": "close"})
        await response(scope, receive, send)
