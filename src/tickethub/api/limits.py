"""A body size limit for every request, checked before the body reaches a handler."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tickethub.errors import PayloadTooLarge


class BodySizeLimit:
    """Rejects bodies over ``max_bytes`` with 413: at once when ``Content-Length`` says so,
    else as soon as the streamed body passes the limit. Paths under ``exempt`` (e.g.
    uploads with their own limit) are left alone."""

    def __init__(self, app: ASGIApp, max_bytes: int, exempt: tuple[str, ...] = ()) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.exempt = exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (self.exempt and scope["path"].startswith(self.exempt)):
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await self._reject(scope, send)
                return
        seen = 0
        exceeded = False
        rejected = False

        async def limited() -> Message:
            nonlocal seen, exceeded
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    exceeded = True
                    raise PayloadTooLarge(self._detail(), field="body")
            return message

        async def guarded_send(message: Message) -> None:
            # Frameworks may turn a failed body read into their own 400; once the limit
            # was passed, whatever the app answers is replaced by our 413.
            nonlocal rejected
            if not exceeded:
                await send(message)
            elif message["type"] == "http.response.start" and not rejected:
                rejected = True
                await self._reject(scope, send)

        try:
            await self.app(scope, limited, guarded_send)
        except PayloadTooLarge:
            if not rejected:
                await self._reject(scope, send)

    def _detail(self) -> str:
        return f"the request body is over the limit of {self.max_bytes} bytes"

    async def _reject(self, scope: Scope, send: Send) -> None:
        problem = PayloadTooLarge(self._detail(), field="body").to_problem()
        problem["instance"] = scope["path"]
        body = json.dumps(problem).encode()
        await send({"type": "http.response.start", "status": 413, "headers": [
            (b"content-type", b"application/problem+json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]})
        await send({"type": "http.response.body", "body": body})
