"""``/``: the inbox, filtered and paged, with new tickets pushed live."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.datastructures import QueryParams

from tickethub.api.deps import call, hub_of
from tickethub.domain.events import Event, EventType
from tickethub.domain.ids import parse_id
from tickethub.domain.status import Kind, Status
from tickethub.domain.text import first_with_nul
from tickethub.domain.visibility import reader
from tickethub.errors import NotFound, ValidationFailed
from tickethub.services.inbox import SORTS, VIEWS, Cursor, InboxQuery
from tickethub.web import search_scope
from tickethub.web.live import sse, stream
from tickethub.web.page_route import PageRoute
from tickethub.web.render import fragment, page
from tickethub.web.session import Viewer, still_signed_in, viewer

router = APIRouter(include_in_schema=False, route_class=PageRoute)
Me = Annotated[Viewer, Depends(viewer)]
FILTERS = ("view", "status", "kind", "label", "assignee", "agent", "q", "sort")


def _text(params: QueryParams, name: str) -> str | None:
    value = (params.get(name) or "").strip()
    if first_with_nul({name: value}):
        raise ValidationFailed("must not contain NUL characters", field=name)
    return value[:200] or None


def inbox_query(params: QueryParams, me: str, readable_by: str | None = None
                ) -> InboxQuery:
    """Read the inbox filters from a query string; a bad value names its field.
    ``readable_by``: only what that name reads (``domain.visibility.reader``)."""
    view = params.get("view") or "team"
    if view not in VIEWS:
        raise ValidationFailed(f"view must be one of {', '.join(VIEWS)}", field="view")
    sort = params.get("sort") or "newest"
    if sort not in SORTS:
        raise ValidationFailed(f"sort must be one of {', '.join(SORTS)}", field="sort")
    statuses = []
    for value in params.getlist("status"):
        if value:
            try:
                statuses.append(Status(value))
            except ValueError:
                raise ValidationFailed(f"unknown status {value!r}", field="status") from None
    kind = params.get("kind") or None
    if kind is not None and kind not in {k.value for k in Kind}:
        raise ValidationFailed(f"unknown kind {kind!r}", field="kind")
    cursor = params.get("cursor")
    return InboxQuery(
        me=me, view=view, status=tuple(statuses),
        kind=Kind(kind) if kind else None, label=_text(params, "label"),
        assignee=_text(params, "assignee"), agent=_text(params, "agent"),
        q=_text(params, "q"), sort=sort,
        cursor=Cursor.decode(cursor, sort) if cursor else None, readable_by=readable_by,
    )


def _filters(params: QueryParams) -> list[tuple[str, str]]:
    return [(k, v) for k, v in params.multi_items() if k in FILTERS and v]


@router.get("/")
async def inbox(request: Request, me: Me) -> Response:
    hub = hub_of(request)
    params = request.query_params
    error = None
    # Read first: the page's live stream resumes from here, so a ticket committed while
    # the page is read comes through the stream (read after, it would be in neither).
    last_seq = await call(hub.events.last_seq)
    try:
        query = inbox_query(params, me.name, reader(me.actor))
        result = await call(hub.inbox.page, query)
    except ValidationFailed as exc:
        error, query = exc, InboxQuery(me=me.name, readable_by=reader(me.actor))
        result = await call(hub.inbox.page, query)
    filters = _filters(params)
    context = {
        "viewer": me, "result": result, "query": query, "error": error,
        "kinds": [k.value for k in Kind], "statuses": [s.value for s in Status],
        "next_url": ("/?" + urlencode([*filters, ("cursor", result.next_cursor)])
                     if result.next_cursor else None),
        "first_url": "/?" + urlencode(filters) if query.cursor else None,
        "stream_url": "/inbox/stream?" + urlencode(filters),
        "last_seq": last_seq,
        "search_scope": None if error else await call(search_scope.scope, hub, query,
                                                      filters),
    }
    return page(request, "inbox.html", context, 422 if error else 200)


@router.get("/inbox/stream")
async def inbox_stream(request: Request, me: Me) -> Response:
    """``row`` events carry the HTML of a new matching ticket; ``status`` events the new
    status of any ticket that changed (the page updates the rows it shows); ``activity``
    events name a ticket someone else wrote to (message, answer, status), which the
    triage page shows unread again."""
    hub = hub_of(request)
    query = inbox_query(request.query_params, me.name, reader(me.actor))
    since = request.query_params.get("since")

    async def render(events: list[Event]) -> list[str]:
        out = []
        for event in events:
            if event.type is EventType.MESSAGE_POSTED and event.actor == me.name:
                continue
            try:
                ticket = await call(hub.tickets.get, event.ticket_id, me.actor)
            except NotFound:  # unknown, or not the viewer's to read
                continue
            if event.type is EventType.TICKET_CREATED:
                if query.matches(ticket):
                    html = fragment("_row.html", "row", ticket, hub.clock.now())
                    # due_at: the page inserts the row where its sort puts it.
                    due = ticket.due_at.isoformat() if ticket.due_at else None
                    out.append(sse("row", {"id": ticket.id, "html": html, "due_at": due},
                                   event.seq))
            else:
                if event.type is not EventType.MESSAGE_POSTED:
                    out.append(sse("status", {"id": ticket.id, "status": ticket.status.value,
                                              "waiting": ticket.waiting}, event.seq))
                if event.actor != me.name:
                    out.append(sse("activity", {"id": ticket.id}, event.seq))
        return out

    return await stream(request, render,
                        since=parse_id(since, minimum=0) if since else None,
                        signed_in=still_signed_in(request))
