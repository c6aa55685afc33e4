"""Server-Sent Events for pages: follow the hub's event log and push what a page shows.

A page opens ``EventSource`` on its stream; the stream starts at the log's end (or at
``Last-Event-ID`` after a reconnect, so nothing is missed), wakes on the hub's bus and
hands each batch of events to the page's ``render`` callback, which turns them into SSE
messages (already formatted, ``id:`` included).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi.responses import StreamingResponse
from starlette.requests import Request

from tickethub.api.deps import call
from tickethub.domain.events import Event
from tickethub.domain.ids import parse_id

_BATCH = 200
Render = Callable[[list[Event]], Awaitable[list[str]]]


def sse(name: str, data: dict[str, Any], seq: int | None = None) -> str:
    head = f"id: {seq}\n" if seq is not None else ""
    return f"{head}event: {name}\ndata: {json.dumps(data)}\n\n"


async def stream(request: Request, render: Render, *, ticket_id: int | None = None,
                 since: int | None = None) -> StreamingResponse:
    hub = request.app.state.hub
    resumed = parse_id(request.headers.get("last-event-id", ""), minimum=0)
    if resumed is not None:  # a garbled header just starts from now, as browsers expect
        since = resumed
    last = await call(hub.events.last_seq)
    cursor = last if since is None or since > last else since
    keepalive = hub.settings.sse_keepalive_seconds

    async def body() -> AsyncIterator[str]:
        nonlocal cursor
        with hub.bus.log_signal() as signal:
            yield f"retry: 1000\nid: {cursor}\n\n"
            while True:
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
                    yield ": keep-alive\n\n"
                if hub.bus.closing:
                    return  # shutdown: the page's EventSource reconnects and resumes

    return StreamingResponse(body(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
