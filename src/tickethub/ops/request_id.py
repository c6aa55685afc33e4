"""The request id: one per HTTP request, taken from a sane incoming ``X-Request-ID`` or
made up, returned in the response's ``X-Request-ID`` header, attached to every log record
written while the request runs and stored on the events it writes (``events.request_id``).

Contracts:

* An incoming id is kept when it is 1..128 characters of letters, digits and ``._:-``
  (what proxies and tracing tools send); anything else is replaced by a new id, so a log
  line can never be forged or broken by a header.
* The id lives in a context variable: it follows the request into worker threads
  (``anyio.to_thread``, ``asyncio.to_thread`` copy the context). Writes that several
  requests share (group commits) run outside any one request and carry no id.
* A made-up id is 32 hex digits, unique: a random prefix per process (new after a
  fork) and a counter. Cheaper than a random UUID per request (no system call), which
  matters when thousands of long-polls answer at once.
* The middleware is pure ASGI (no body buffering): streams and long-polls are untouched.
"""

from __future__ import annotations

import itertools
import os
import re
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "x-request-id"
_SANE = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_current: ContextVar[str | None] = ContextVar("tickethub_request_id", default=None)


def current() -> str | None:
    """The id of the request being served here, if any."""
    return _current.get()


def accept(incoming: str | None) -> str:
    """``incoming`` when it is a sane id, else a new one."""
    if incoming is not None and _SANE.fullmatch(incoming):
        return incoming
    return new_id()


def _numbering() -> tuple[str, itertools.count[int]]:
    return os.urandom(8).hex(), itertools.count()


_prefix, _counter = _numbering()


def _renumber() -> None:  # a forked worker gets its own prefix
    global _prefix, _counter
    _prefix, _counter = _numbering()


os.register_at_fork(after_in_child=_renumber)


def new_id() -> str:
    """A new request id: this process's random prefix and the next number."""
    return f"{_prefix}{next(_counter):016x}"


async def serve(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Run ``app`` for one HTTP request under its request id."""
    incoming = None
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            incoming = value.decode("latin-1")
            break
    request_id = accept(incoming)
    encoded = request_id.encode()

    async def send_with_id(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", ()) if k != b"x-request-id"]
            headers.append((b"x-request-id", encoded))
            message["headers"] = headers
        await send(message)

    token = _current.set(request_id)
    try:
        await app(scope, receive, send_with_id)
    finally:
        _current.reset(token)


class RequestIds:
    """ASGI middleware: every HTTP request runs under its request id (``serve``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await serve(self.app, scope, receive, send)
