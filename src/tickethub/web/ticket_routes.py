"""``/t/{id}``: the ticket page, its answer/approve/deny forms, and its live stream.

Forms post back with the ticket ``version`` they were rendered from. A form that arrives
after the ticket was resolved elsewhere sends nothing and says who resolved it (409); one
that arrives after a smaller change is shown again, filled in, to check and resend.
Answers from here go with ``via="web"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from tickethub.api.deps import call, hub_of
from tickethub.api.wire_types import Seq
from tickethub.domain import proposal_diff
from tickethub.domain.events import Event, EventType
from tickethub.domain.ids import parse_id
from tickethub.domain.messages import Message
from tickethub.domain.status import Kind
from tickethub.domain.tickets import Ticket
from tickethub.errors import (
    Forbidden,
    IllegalTransition,
    NotFound,
    StaleVersion,
    ValidationFailed,
)
from tickethub.web import review, schema_form
from tickethub.web.live import sse, stream
from tickethub.web.markdown import render as markdown
from tickethub.web.page_route import PageRoute
from tickethub.web.render import SECURITY_HEADERS, fragment, page
from tickethub.web.session import Viewer, check_csrf, still_signed_in, viewer
from tickethub.web.ticket_view import NoSuchTicket, TicketView, load, page_ticket_id

router = APIRouter(include_in_schema=False, route_class=PageRoute)
Me = Annotated[Viewer, Depends(viewer)]
TicketId = Annotated[int, Depends(page_ticket_id)]
VIA = "web"
_DONE = {"answered": "Answer sent.", "approved": "Approved.", "denied": "Denied."}


def resolved_by(ticket: Ticket) -> str:
    """``answered by alice via github`` for a resolved ticket."""
    if ticket.answer is None:
        return ticket.status.value.replace("_", " ")
    return f"{ticket.status.value} by {ticket.answer.by} via {ticket.answer.via}"


def answer_fields(ticket: Ticket) -> list[schema_form.Field]:
    return schema_form.fields_for(ticket.response_schema)


def edit_fields(ticket: Ticket) -> list[schema_form.Field]:
    if ticket.response_schema is not None:
        return schema_form.fields_for(ticket.response_schema, ticket.proposal)
    return [schema_form.Field(schema_form.ROOT, (), "Proposal (JSON)", "json", True,
                              value=ticket.proposal)]


def _readonly_reason(me: Viewer, ticket: Ticket) -> str | None:
    if not me.can_answer:
        return (f"You can read this ticket. Answering needs the responder role; "
                f"{me.name} is {me.actor.role}.")
    if ticket.kind is Kind.APPROVAL and ticket.created_by == me.name:
        return "You asked for this approval, so someone else decides it."
    return None


def _render(request: Request, me: Viewer, view: TicketView, *, status_code: int = 200,
            notice: str | None = None, failed: str | None = None,
            errors: dict[str, str] | None = None, posted: dict[str, str] | None = None,
            fields: list[schema_form.Field] | None = None) -> Response:
    ticket = view.ticket
    version_rows = (review.version_rows(ticket.proposal, ticket.answer.data)
                    if review.edited(ticket) and ticket.answer else None)
    context: dict[str, Any] = {
        "viewer": me, "v": view, "t": ticket, "notice": notice, "failed": failed,
        "errors": errors or {}, "posted": posted or {},
        "readonly": _readonly_reason(me, ticket),
        "answer_fields": fields if failed == "answer" and fields else answer_fields(ticket),
        "edit_fields": fields if failed == "approve" and fields else edit_fields(ticket),
        "resolved_by": resolved_by(ticket),
        "outcome_line": review.outcome_line(ticket),
        "version_rows": version_rows,
        "pending_changes": None,
    }
    return page(request, "ticket.html", context, status_code)


async def _load(request: Request, ticket_id: int, me: Viewer) -> TicketView:
    return await call(load, hub_of(request), ticket_id, me.actor)


@router.get("/t/{ticket_id}")
async def ticket_page(request: Request, ticket_id: TicketId, me: Me,
                      done: str | None = None) -> Response:
    try:
        view = await _load(request, ticket_id, me)
    except NotFound:
        raise NoSuchTicket(ticket_id) from None
    notice = _DONE.get(done or "")
    if done == "approved" and view.ticket.status.value == "approved":
        notice = review.outcome_line(view.ticket) or notice
    return _render(request, me, view, notice=notice)


def _multi(form: Any) -> dict[str, list[str]]:
    return {key: [str(v) for v in form.getlist(key)] for key in form}


def _version(form: Any) -> int | None:
    return parse_id(str(form.get("version") or ""))


@dataclass
class _Submission:
    """A posted form read against its ticket: the typed value and every error found."""

    fields: list[schema_form.Field]
    data: Any
    errors: dict[str, str]


async def _read(request: Request, ticket: Ticket, form: Any, action: str,
                posted: dict[str, str]) -> _Submission:
    """Parse the form's fields, check all of them (the form's own reading, then the
    schema), and for an approval tell a plain approval from one with changes."""
    edit = form.get("edit") == "1"
    fields: list[schema_form.Field] = []
    if action == "answer" and ticket.response_schema is not None:
        fields = answer_fields(ticket)
    elif action == "approve" and (edit or _has_fields(form)):
        fields = edit_fields(ticket)
    data: Any = None
    errors: dict[str, str] = {}
    if fields:
        schema_form.refill(fields, _multi(form))
        data, errors = schema_form.parse(fields, _multi(form))
        if action == "answer" or edit:
            errors = await _all_errors(request, ticket, fields, data, errors)
    if action == "approve" and fields and not errors:
        baseline, _ = schema_form.parse(fields, schema_form.as_posted(fields))
        data = review.edited_value(ticket.proposal, baseline, data)
        changes = proposal_diff.diff(ticket.proposal, data)
        if not edit and changes:
            errors[""] = (f"You changed {proposal_diff.summary(changes)}. Choose "
                          f"\u201cApprove with changes\u201d to approve your version, or "
                          f"undo the changes to approve the proposal as it is.")
        elif not changes:
            fields = []  # nothing changed: a plain approval (the proposal is checked)
    if action == "deny" and not posted["reason"].strip():
        errors["comment"] = "Say why you deny it, so the agent can do better."
    if action == "answer" and not fields and not posted["text"].strip():
        errors["text"] = "Write an answer."
    return _Submission(fields, data, errors)


async def _send(request: Request, me: Viewer, ticket_id: int, action: str,
                posted: dict[str, str], got: _Submission, version: int | None) -> None:
    hub = hub_of(request)
    if action == "answer":
        await hub.tickets.aanswer(me.actor, ticket_id,
                                  posted["text"] or posted["comment"] or None, got.data, VIA,
                                  expected_version=version)
    elif action == "approve":
        await hub.tickets.aapprove(me.actor, ticket_id, posted["comment"] or None,
                                   got.data if got.fields else None, VIA,
                                   expected_version=version)
    else:
        await hub.tickets.adeny(me.actor, ticket_id, posted["reason"], VIA,
                                expected_version=version)


async def _decide(request: Request, me: Viewer, ticket_id: int, action: str) -> Response:
    """The one path of every form: CSRF, typed parse, every error at once, service call,
    errors next to fields."""
    hub = hub_of(request)
    form = await request.form()
    check_csrf(me, form.get("csrf"))
    posted = {key: str(form.get(key) or "") for key in ("text", "comment", "reason")}
    if action == "deny" and "reason" not in form:  # the review form's one comment box
        posted["reason"] = posted["comment"]
    try:
        ticket = await call(hub.tickets.get, ticket_id, me.actor)
    except NotFound:
        raise NoSuchTicket(ticket_id) from None
    got = await _read(request, ticket, form, action, posted)
    fields, errors = got.fields, got.errors
    if not errors:
        try:
            await _send(request, me, ticket_id, action, posted, got, _version(form))
        except ValidationFailed as exc:
            if fields:
                errors = schema_form.errors_from_problem(exc.extra.get("errors"), exc.field,
                                                         exc.detail, fields)
                known = schema_form.all_names(fields)
                errors = {(k if k in known else ""): v for k, v in errors.items()}
            else:
                errors = {"text" if action == "answer" else "": exc.detail}
        except (StaleVersion, IllegalTransition):
            view = await _load(request, ticket_id, me)
            if not view.ticket.waiting:
                notice = (f"Nothing was sent: this ticket was already "
                          f"{resolved_by(view.ticket)}.")
                return _render(request, me, view, status_code=409, notice=notice)
            notice = "This ticket changed while you were writing. Check it and send again."
            return _render(request, me, view, status_code=409, notice=notice, failed=action,
                           posted=posted, fields=fields)
        except Forbidden as exc:
            view = await _load(request, ticket_id, me)
            return _render(request, me, view, status_code=403, notice=exc.detail)
        else:
            done = {"answer": "answered", "approve": "approved", "deny": "denied"}[action]
            return RedirectResponse(f"/t/{ticket_id}?done={done}", status_code=303)
    view = await _load(request, ticket_id, me)
    errors = schema_form.in_form_order(fields, errors)
    return _render(request, me, view, status_code=422, failed=action, errors=errors,
                   posted=posted, fields=fields)


def _has_fields(form: Any) -> bool:
    return any(key == schema_form.ROOT or key.startswith(schema_form.ROOT + ".")
               for key in form)


async def _all_errors(request: Request, ticket: Ticket, fields: list[schema_form.Field],
                      data: Any, errors: dict[str, str]) -> dict[str, str]:
    """The form's own errors plus every schema error of the rest, so a person sees all
    of them after one submit (not the next one after fixing the first)."""
    schema = ticket.response_schema
    if schema is None:
        return errors
    try:
        await call(hub_of(request).schemas.validate, data, schema, "data")
    except ValidationFailed as exc:
        found = schema_form.errors_from_problem(exc.extra.get("errors"), exc.field,
                                                exc.detail, fields)
        known = schema_form.all_names(fields)
        for name, text in found.items():
            errors.setdefault(name if name in known else "", text)
    return errors


@router.post("/t/{ticket_id}/answer")
async def answer(request: Request, ticket_id: TicketId, me: Me) -> Response:
    return await _decide(request, me, ticket_id, "answer")


@router.post("/t/{ticket_id}/approve")
async def approve(request: Request, ticket_id: TicketId, me: Me) -> Response:
    return await _decide(request, me, ticket_id, "approve")


@router.post("/t/{ticket_id}/deny")
async def deny(request: Request, ticket_id: TicketId, me: Me) -> Response:
    return await _decide(request, me, ticket_id, "deny")


@router.post("/preview")
async def preview(request: Request, me: Me) -> Response:
    """The Markdown preview of an answer, rendered by the same safe renderer as the thread."""
    form = await request.form()
    check_csrf(me, form.get("csrf"))
    return HTMLResponse(str(markdown(str(form.get("text") or ""))), headers=SECURITY_HEADERS)


@router.get("/t/{ticket_id}/stream")
async def ticket_stream(request: Request, ticket_id: TicketId, me: Me,
                        since: Seq | None = None) -> Response:
    """``change`` events: the ticket's new status and version, who resolved it, and the
    HTML of a new message when one was posted."""
    hub = hub_of(request)
    await call(hub.tickets.get, ticket_id, me.actor)

    async def render(events: list[Event]) -> list[str]:
        ticket = await call(hub.tickets.get, ticket_id)
        out = []
        talk = (EventType.MESSAGE_POSTED, EventType.TICKET_ANSWERED)
        messages: list[Message] = (await call(hub.tickets.messages, ticket_id)
                                   if any(e.type in talk for e in events) else [])
        for event in events:
            data: dict[str, Any] = {"type": event.type.value, "status": ticket.status.value,
                                    "waiting": ticket.waiting, "version": ticket.version,
                                    "resolved_by": resolved_by(ticket)}
            # A decision names its message (older events did not: then only with text).
            if event.type is EventType.MESSAGE_POSTED or (
                    event.type is EventType.TICKET_ANSWERED and (
                        event.data.get("message_id")
                        or (ticket.answer and ticket.answer.text))):
                wanted = event.data.get("message_id")
                found = [m for m in messages if m.id == wanted] if wanted else messages[-1:]
                if found:
                    data["message_id"] = found[0].id
                    data["html"] = fragment(
                        "_message.html", "message", found[0], hub.clock.now(),
                        ticket.proposal if ticket.kind is Kind.APPROVAL else None)
            out.append(sse("change", data, event.seq))
        return out

    return await stream(request, render, ticket_id=ticket_id, since=since,
                        signed_in=still_signed_in(request))
