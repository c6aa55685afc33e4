"""Server-Sent Events for pages: follow the hub's event log and push what a page shows.

A page opens ``EventSource`` on its stream; the stream starts at the log's end (or at
``Last-Event-ID`` after a reconnect, so nothing is missed), wakes on the hub's bus and
hands each batch of events to the page's ``render`` callback, which turns them into SSE
messages (already formatted, ``id:`` included).

A stream belongs to a signed-in session: with ``signed_in``, it checks the session again
on every keep-alive (and after a batch, at most every ``_SESSION_CHECK`` seconds); once
the session has ended (signed out in another tab, expired) it sends one ``signed-out``
event and ends, so the page says "session ended — sign in again" instead of going quiet.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi.responses import StreamingResponse
from starlette.requests import Request

from tickethub.api.deps import call, hub_of
from tickethub.domain.events import Event
from tickethub.domain.ids import parse_id

_BATCH = 200
_SESSION_CHECK = 5.0
Render = Callable[[list[Event]], Awaitable[list[str]]]
SignedIn = Callable[[], Awaitable[bool]]


def sse(name: str, data: dict[str, Any], seq: int | None = None) -> str:
    head = f"id: {seq}\n" if seq is not None else ""
    return f"{head}event: {name}\ndata: {json.dumps(data)}\n\n"


async def stream(request: Request, render: Render, *, ticket_id: int | None = None,
                 since: int | None = None, signed_in: SignedIn | None = None
                 ) -> StreamingResponse:
    hub = hub_of(request)
    resumed = parse_id(request.headers.get("last-event-id", ""), minimum=0)
    if resumed is not None:  # a garbled header just starts from now, as browsers expect
        since = resumed
    last = await call(hub.events.last_seq)
    cursor = last if since is None or since > last else since
    keepalive = hub.settings.sse_keepalive_seconds

    async def ended(checked: list[float], force: bool) -> bool:
        if signed_in is None or (not force and time.monotonic() - checked[0] < _SESSION_CHECK):
            return False
        checked[0] = time.monotonic()
        return not await signed_in()

    async def body() -> AsyncIterator[str]:
        nonlocal cursor
        checked = [time.monotonic()]
        with hub.bus.log_signal() as signal:
            yield f"retry: 1000\nid: {cursor}\n\n"
            while True:
                if await ended(checked, False):
                    yield sse("signed-out", {"sign_in": "/login"})
                    return
                batch = await call(hub.events.since, cursor, limit=_BATCH,
                                   ticket_id=ticket_id)
                if batch:
                    for chunk in await render(batch):
                        yield chunk
                    cursor = batch[-1].seq
                    yield f"id: {cursor}\n\n"
                if len(batch) < _BATCH and not await signal.wait(keepalive):
                    if await request.is_disconnected():
                        return
                    if await ended(checked, True):
                        yield sse("signed-out", {"sign_in": "/login"})
                        return
                    yield ": keep-alive\n\n"
                if hub.bus.closing:
                    return  # shutdown: the page's EventSource reconnects and resumes

    return StreamingResponse(body(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
