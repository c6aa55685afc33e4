"""``/triage``: the split-pane triage view (list left, open ticket right) and its actions.

Every action is a plain form that works without JavaScript (it answers with a redirect
to the next ticket, or the page again with the error next to its field). ``triage.js``
sends the same forms with ``Accept: application/json`` after its undo delay and reads a
JSON answer instead: the outcome, or the error as the native API's
``application/problem+json`` naming its ``field`` (rendered by ``page_route``). See
``triage_actions`` for what each action calls.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import parse_qsl, urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.datastructures import QueryParams

from tickethub.api.deps import call, hub_of
from tickethub.domain.ids import parse_id
from tickethub.domain.status import Kind, Status
from tickethub.domain.visibility import reader
from tickethub.errors import NotFound, TickethubError, ValidationFailed
from tickethub.services.inbox import InboxQuery
from tickethub.web import triage_actions, triage_view
from tickethub.web.inbox_routes import FILTERS, inbox_query
from tickethub.web.page_route import PageRoute, wants_json
from tickethub.web.render import SECURITY_HEADERS, fragment, page
from tickethub.web.session import Viewer, check_csrf, viewer
from tickethub.web.ticket_view import NoSuchTicket, page_ticket_id

router = APIRouter(include_in_schema=False, route_class=PageRoute)
Me = Annotated[Viewer, Depends(viewer)]
TicketId = Annotated[int, Depends(page_ticket_id)]
KEEP = (*FILTERS, "cursor")
_DONE = {"approve": "Approved", "deny": "Denied", "reply": "Answered",
         "comment": "Commented on", "done": "Marked done:", "cancel": "Cancelled",
         "reopen": "Reopened", "snooze": "Snoozed", "assign": "Assigned",
         "label": "Relabelled"}


def _kept(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in pairs if k in KEEP and v]


def _back(form: dict[str, str]) -> list[tuple[str, str]]:
    """The filters of the page a form came from (its ``back`` field), and nothing else."""
    return _kept(parse_qsl(form.get("back", ""), keep_blank_values=False))


def _done_notice(params: Any) -> str | None:
    verb = _DONE.get(params.get("done") or "")
    count = parse_id(params.get("n") or "")
    ident = parse_id(params.get("did") or "")
    if verb is None:
        return None
    if count is not None:
        return f"{verb} {count} ticket{'' if count == 1 else 's'}."
    return f"{verb} #{ident}." if ident is not None else f"{verb}."


def _after(ids: list[int], current: int | None) -> int | None:
    """The ticket to open once ``current`` is dealt with: the next row, else the one
    before it (the view moves on, as in the page with JavaScript)."""
    if current not in ids:
        return None
    at = ids.index(current)
    if at + 1 < len(ids):
        return ids[at + 1]
    return ids[at - 1] if at > 0 else None


async def _render(request: Request, me: Viewer, pairs: list[tuple[str, str]], *,
                  open_id: int | None, explicit: bool, status_code: int = 200,
                  notice: str | None = None, failed: dict[str, Any] | None = None
                  ) -> Response:
    hub = hub_of(request)
    params = QueryParams(pairs)
    error = None
    try:
        query = inbox_query(params, me.name, reader(me.actor))
    except ValidationFailed as exc:
        error, query = exc, InboxQuery(me=me.name, readable_by=reader(me.actor))
        status_code = 422
    data = await call(triage_view.load, hub, query, me.actor, open_id, explicit)
    filters = _kept([(k, v) for k, v in pairs if k != "cursor"])
    items = data.result.items
    ids = [t.id for t in items]
    open_ = data.pane.ticket.id if data.pane else None
    after = _after(ids, open_)
    context = {
        "viewer": me, "data": data, "query": query, "error": error, "notice": notice,
        "failed": failed or {}, "filters": filters, "back": urlencode(pairs),
        "here": "/triage?" + urlencode(pairs), "next_id": after,
        "kinds": [k.value for k in Kind], "statuses": [s.value for s in Status],
        "snoozes": triage_actions.SNOOZES,
        "older_url": ("/triage?" + urlencode([*filters, ("cursor", data.result.next_cursor)])
                      if data.result.next_cursor else None),
        "stream_url": "/inbox/stream?" + urlencode(filters),
    }
    return page(request, "triage.html", context, status_code)


@router.get("/triage")
async def triage(request: Request, me: Me) -> Response:
    params = request.query_params
    open_id = parse_id(params.get("open") or "")
    return await _render(request, me, _kept(list(params.multi_items())), open_id=open_id,
                         explicit=open_id is not None, notice=_done_notice(params))


@router.get("/triage/pane/{ticket_id}")
async def pane(request: Request, ticket_id: TicketId, me: Me) -> Response:
    """The right-hand pane alone (for ``triage.js``); opening it marks the ticket read."""
    hub = hub_of(request)
    try:
        found = await call(triage_view.load_pane, hub, ticket_id, me.actor, True)
    except NotFound:
        raise NoSuchTicket(ticket_id) from None
    html = fragment("_triage_pane.html", "pane", found, me, hub.clock.now(),
                    urlencode(_back({"back": request.query_params.get("back", "")})), None,
                    triage_actions.SNOOZES, {})
    return HTMLResponse(html, headers=SECURITY_HEADERS)


@router.post("/triage/t/{ticket_id}/{action}")
async def act(request: Request, ticket_id: TicketId, action: str, me: Me) -> Response:
    hub = hub_of(request)
    form = triage_actions.form_dict(await request.form())
    check_csrf(me, form.get("csrf"))
    back = _back(form)
    act_ = triage_actions.Act(hub, me.actor, ticket_id, form, parse_id(form.get("version")
                                                                       or ""))
    try:
        notice = await call(triage_actions.run, action, act_)
    except TickethubError as exc:
        if wants_json(request):
            raise  # the route class renders it (page_route): problem+json naming the field
        failed = {"action": action, "field": exc.field or "", "detail": exc.detail,
                  "posted": form}
        return await _render(request, me, back, open_id=ticket_id, explicit=True,
                             status_code=exc.status, failed=failed)
    if wants_json(request):
        ticket = await call(hub.tickets.get, ticket_id, me.actor)
        return JSONResponse({"ok": True, "notice": notice, "id": ticket_id,
                             "status": ticket.status.value, "waiting": ticket.waiting,
                             "version": ticket.version})
    target = [*back, ("done", action), ("did", str(ticket_id))]
    following = parse_id(form.get("next") or "")
    if following is not None:
        target.append(("open", str(following)))
    elif action in ("comment", "assign", "label"):  # still waiting: stay on it
        target.append(("open", str(ticket_id)))
    return RedirectResponse("/triage?" + urlencode(target), status_code=303)


def _ids(form: Any) -> list[int]:
    return [i for i in (parse_id(str(v)) for v in form.getlist("id")) if i is not None]


async def _readable(hub: Any, me: Viewer, ids: list[int]) -> list[int]:
    """The ids the person reads; a mark on any other is left out, as for an unknown id."""
    out = []
    for ticket_id in ids[:500]:
        try:
            await call(hub.tickets.get, ticket_id, me.actor)
            out.append(ticket_id)
        except NotFound:
            continue
    return out


@router.post("/triage/bulk")
async def bulk(request: Request, me: Me) -> Response:
    """Approve, close, cancel or reopen many tickets: each its own service call (its own
    audited decision and event). Some may fail (already decided, not one's own to
    approve); the rest still happen, and the answer lists both. For a script that is a
    200 ``{"ok", "done", "failed"}``, each failure ``{"id", "code", "detail"}`` from its
    problem, even when none was done: the batch ran, and its outcome is data. An unknown
    action is the request's own error (422 naming ``action``)."""
    hub = hub_of(request)
    raw = await request.form()
    form = triage_actions.form_dict(raw)
    check_csrf(me, form.get("csrf"))
    action, ids = form.get("action", ""), _ids(raw)
    back = _back(form)
    failed: list[dict[str, Any]] = []
    done: list[int] = []
    if action in ("read", "unread"):
        done = await _readable(hub, me, ids)
        await call(hub.reads.mark, me.actor, done, action == "read")
    elif action not in triage_actions.BULK:
        raise ValidationFailed(f"action must be one of {', '.join(triage_actions.BULK)}, "
                               "read or unread", field="action")
    else:
        for ticket_id in ids:
            act_ = triage_actions.Act(hub, me.actor, ticket_id, {}, None)
            try:
                await call(triage_actions.run, action, act_)
                done.append(ticket_id)
            except TickethubError as exc:
                problem = exc.problem()
                failed.append({"id": ticket_id, "code": problem.code,
                               "detail": problem.detail})
    if wants_json(request):
        return JSONResponse({"ok": not failed, "done": done, "failed": failed})
    if not failed:
        return RedirectResponse("/triage?" + urlencode(
            [*back, ("done", action), ("n", str(len(done)))]), status_code=303)
    verb = _DONE.get(action, action)
    notice = (f"{verb} {len(done)} of {len(ids)}. Not done: "
              + "; ".join(f"#{f['id']}: {f['detail']}" for f in failed))
    return await _render(request, me, back, open_id=None, explicit=False,
                         status_code=200 if done else 422, notice=notice)


@router.post("/triage/read")
async def read(request: Request, me: Me) -> Response:
    """Mark tickets read (``read=1``) or unread for the signed-in person."""
    hub = hub_of(request)
    raw = await request.form()
    form = triage_actions.form_dict(raw)
    check_csrf(me, form.get("csrf"))
    readable = await _readable(hub, me, _ids(raw))
    await call(hub.reads.mark, me.actor, readable, form.get("read") == "1")
    if wants_json(request):
        return JSONResponse({"ok": True, "ids": readable})
    return RedirectResponse("/triage?" + urlencode(_back(form)), status_code=303)
