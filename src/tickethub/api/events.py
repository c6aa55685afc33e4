"""``/api/v1/events``: the event log as pages and as a resumable Server-Sent Events stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import StreamingResponse

from tickethub.api.deps import call, current_actor, runtime
from tickethub.api.problem_docs import PROBLEM_RESPONSES
from tickethub.api.schemas import EventOut, EventPage
from tickethub.api.wire_types import Id, Seq
from tickethub.domain.actors import Actor
from tickethub.domain.events import Event
from tickethub.domain.ids import MAX_ID, parse_id
from tickethub.errors import DatabaseUnavailable, ValidationFailed
from tickethub.ops.series import parked
from tickethub.services.doors import EventsDoor

router = APIRouter(prefix="/api/v1", tags=["events"], responses=PROBLEM_RESPONSES)

Hub = Annotated[EventsDoor, Depends(runtime)]
Me = Annotated[Actor, Depends(current_actor)]
_STREAM_BATCH = 500


@router.get("/events", response_model=EventPage, summary="Events after a sequence number")
async def list_events(
    hub: Hub, me: Me,
    since: Annotated[Seq, Query(description="Last seq you saw; 0 for all.")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ticket_id: Id | None = None,
    subtree: Annotated[Id | None, Query(description="Only this ticket and its "
                                        "descendants.")] = None,
) -> EventPage:
    events, cursor = await call(hub.events.page, since, limit=limit, ticket_id=ticket_id,
                                subtree_of=subtree, viewer=me)
    return EventPage(items=[EventOut.of(e) for e in events], last_seq=cursor)


def _sse(event: Event) -> str:
    payload = EventOut.of(event).model_dump(mode="json")
    return f"id: {event.seq}\nevent: {event.type.value}\ndata: {json.dumps(payload)}\n\n"


@router.get("/events/stream", summary="Live events as Server-Sent Events",
            response_class=StreamingResponse)
async def stream_events(
    hub: Hub, me: Me,
    since: Annotated[Seq | None, Query(description="Default: from now.")] = None,
    ticket_id: Id | None = None,
    subtree: Id | None = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """Each event is sent with ``id: <seq>``, so a reconnecting client's
    ``Last-Event-ID`` resumes right after the last event it got. A cursor ahead of the
    log is refused with 409 before the stream starts. The stream ends when the hub shuts
    down."""
    field = "since"
    if last_event_id is not None:
        since = parse_id(last_event_id, minimum=0)
        if since is None:
            raise ValidationFailed(f"Last-Event-ID must be an event seq (0 .. {MAX_ID})",
                                   field="Last-Event-ID")
        field = "Last-Event-ID"
    if since is None:
        since = await call(hub.events.last_seq)
    first, first_cursor = await call(hub.events.page, since, limit=_STREAM_BATCH,
                                     ticket_id=ticket_id, subtree_of=subtree, field=field,
                                     viewer=me)
    keepalive = hub.settings.sse_keepalive_seconds

    async def body() -> AsyncIterator[str]:
        cursor = first_cursor
        batch = first
        with hub.bus.log_signal() as signal, parked("sse"):
            yield "retry: 1000\n\n"
            # `first` was read before the signal existed: read once more before the
            # first sleep, or an event committed in between waits for a keep-alive.
            reread = False
            while True:
                for event in batch:
                    yield _sse(event)
                if (reread and len(batch) < _STREAM_BATCH
                        and not await signal.wait(keepalive)):
                    yield ": keep-alive\n\n"
                if hub.bus.closing:
                    return  # shutdown: the client resumes with Last-Event-ID elsewhere
                reread = True
                try:
                    batch, cursor = await call(hub.events.page, cursor, limit=_STREAM_BATCH,
                                               ticket_id=ticket_id, subtree_of=subtree,
                                               viewer=me)
                except DatabaseUnavailable:
                    # End the stream cleanly; the client resumes with Last-Event-ID and
                    # meets 503 + Retry-After until the database is back.
                    return

    return StreamingResponse(body(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
