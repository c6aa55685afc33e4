"""``/api/v1/tickets``: ask, read, list, tree, messages, answer, approve, deny, transition,
assign, label, and wait."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any
from urllib.parse import parse_qsl

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import Field, TypeAdapter, ValidationError
from starlette.exceptions import HTTPException

from tickethub import json_codec
from tickethub.api.deps import (
    actor_for,
    bearer_of,
    call,
    channel_named,
    channel_of,
    client_address,
    current_actor,
    runtime,
)
from tickethub.api.direct_routes import DirectRequest, direct
from tickethub.api.problem_docs import PROBLEM_RESPONSES
from tickethub.api.responses import EncodedJSONResponse
from tickethub.api.schemas import (
    AnswerIn,
    ApproveIn,
    AssignIn,
    DenyIn,
    LabelIn,
    MessageIn,
    MessageOut,
    MovedJson,
    TicketIn,
    TicketOut,
    TicketPage,
    TransitionIn,
    TreeNode,
    shared_ticket_json,
)
from tickethub.api.wire_types import Id, Seq, Text
from tickethub.domain.actors import Actor
from tickethub.domain.status import Kind, Status, is_waiting
from tickethub.domain.tickets import (
    Moved,
    Ticket,
    TicketDraft,
    TicketQuery,
    outcome_of,
    state_after,
)
from tickethub.errors import ValidationFailed
from tickethub.ops.series import parked
from tickethub.services.doors import TicketsDoor

router = APIRouter(prefix="/api/v1", tags=["tickets"], responses=PROBLEM_RESPONSES)

Hub = Annotated[TicketsDoor, Depends(runtime)]
Me = Annotated[Actor, Depends(current_actor)]
# Limits each shared by a route's declaration (FastAPI's check, the OpenAPI document)
# and its direct handler's own check (``direct_routes``), so the two cannot drift.
IDEMPOTENCY_KEY_MAX = 200
WAIT_MAX_SECONDS = 60.0
WAIT_DEFAULT_SECONDS = 30.0
IdempotencyKey = Annotated[str | None, Field(max_length=IDEMPOTENCY_KEY_MAX)]


def _out(hub: TicketsDoor, ticket: Ticket, status_code: int = 200,
         headers: tuple[tuple[bytes, bytes], ...] = ()) -> Response:
    """The ticket as JSON. Returned as a ready response: FastAPI would otherwise validate
    the model a second time (``response_model`` still documents it)."""
    body = shared_ticket_json(ticket, hub.settings.effective_public_url)
    return EncodedJSONResponse(body, status_code, headers)


# Direct handlers (``api/direct_routes.py``): ask and answer without FastAPI's dependency
# solving, answering every request byte for byte as the route below them does. FastAPI's
# order of refusals is kept: a body that is not JSON at all first (422 malformed_json),
# then the token (401), then every invalid parameter and body field in one 422 (path,
# header, body, in that order).

_TICKET_ID: TypeAdapter[int] = TypeAdapter(Id)
_IDEMPOTENCY_KEY: TypeAdapter[str | None] = TypeAdapter(IdempotencyKey)
_TICKET_IN: TypeAdapter[TicketIn] = TypeAdapter(TicketIn)
_ANSWER_IN: TypeAdapter[AnswerIn] = TypeAdapter(AnswerIn)
_Missing = object()


def _json_of(raw: bytes) -> Any:
    """The body as FastAPI reads it: ``_Missing`` when empty, else JSON (a body that is
    not JSON fails as FastAPI's does: 422 with the standard library's reason, or 400 when
    it cannot even be decoded)."""
    if not raw:
        return _Missing
    try:
        return json_codec.loads(raw)
    except json.JSONDecodeError as exc:
        raise RequestValidationError([{
            "type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error",
            "input": {}, "ctx": {"error": exc.msg}}]) from exc
    except Exception as exc:  # e.g. not UTF-8, or nested too deep: FastAPI's 400
        raise HTTPException(400, "There was an error parsing the body") from exc


def _checked(adapter: TypeAdapter[Any], value: Any, loc: tuple[str, ...],
             errors: list[dict[str, Any]]) -> Any:
    """``value`` validated by ``adapter``; its errors, located at ``loc``, go to
    ``errors`` (FastAPI's shape). A missing body is FastAPI's ``missing``."""
    if value is _Missing:
        errors.append({"type": "missing", "loc": loc, "msg": "Field required", "input": None})
        return None
    try:
        return adapter.validate_python(value, from_attributes=True)  # as FastAPI
    except ValidationError as exc:
        errors.extend({**e, "loc": loc + tuple(e["loc"])}
                      for e in exc.errors(include_url=False))
        return None


async def _actor_of(request: DirectRequest, hub: TicketsDoor) -> Actor:
    token = bearer_of(request.headers.get(b"authorization", b"").decode("latin-1"))
    return await actor_for(hub, token, client_address(request.scope))


def _header(request: DirectRequest, name: bytes) -> str | None:
    value = request.headers.get(name)
    return None if value is None else value.decode("latin-1")


async def _ask_direct(request: DirectRequest) -> Response:
    raw = _json_of(request.body)
    hub: TicketsDoor = request.app.state.hub
    me = await _actor_of(request, hub)
    errors: list[dict[str, Any]] = []
    key = _checked(_IDEMPOTENCY_KEY, _header(request, b"idempotency-key"),
                   ("header", "idempotency-key"), errors)
    body = _checked(_TICKET_IN, raw, ("body",), errors)
    if errors:
        raise RequestValidationError(errors)
    return await ask(hub, me, body, key)


async def _answer_direct(request: DirectRequest) -> Response:
    raw = _json_of(request.body)
    hub: TicketsDoor = request.app.state.hub
    me = await _actor_of(request, hub)
    errors: list[dict[str, Any]] = []
    ticket_id = _checked(_TICKET_ID, request.path_params["ticket_id"],
                         ("path", "ticket_id"), errors)
    body = _checked(_ANSWER_IN, raw, ("body",), errors)
    if errors:
        raise RequestValidationError(errors)
    ticket = await hub.tickets.aanswer(me, ticket_id, body.text, body.data,
                                       channel_named(_header(request, b"x-tickethub-via")),
                                       expected_version=body.version)
    return _out(hub, ticket)


@router.post("/tickets", status_code=201, response_model=TicketOut,
             summary="Ask: open a ticket")
@direct(_ask_direct)
async def create_ticket(
    body: TicketIn, hub: Hub, me: Me,
    idempotency_key: Annotated[str | None, Header(max_length=IDEMPOTENCY_KEY_MAX)] = None,
) -> Response:
    """Open a ticket. With an ``Idempotency-Key`` header a retried request returns the
    ticket the first one made (200, ``Idempotent-Replayed: true``) instead of a second."""
    return await ask(hub, me, body, idempotency_key)


async def ask(hub: TicketsDoor, me: Actor, body: TicketIn, idempotency_key: str | None
              ) -> Response:
    """Open the ticket ``body`` describes: 201 with its ``Location``, or 200 and
    ``Idempotent-Replayed: true`` when ``idempotency_key`` already made it."""
    draft = TicketDraft(
        kind=body.kind, title=body.title, body=body.body, parent_id=body.parent_id,
        assignee=body.assignee, labels=tuple(body.labels), due_at=body.due_at,
        response_schema=body.response_schema, proposal=body.proposal, refs=body.refs,
    )
    ticket, created = await hub.tickets.aask(me, draft, idempotency_key)
    location = (b"location", f"/api/v1/tickets/{ticket.id}".encode())
    if not created:
        return _out(hub, ticket, 200, (location, (b"idempotent-replayed", b"true")))
    return _out(hub, ticket, 201, (location,))


@router.get("/tickets", response_model=TicketPage, summary="List tickets")
async def list_tickets(
    hub: Hub, me: Me,
    status: Annotated[list[Status] | None, Query(description="Repeat for several.")] = None,
    kind: Kind | None = None,
    label: Text | None = None,
    assignee: Text | None = None,
    parent_id: Id | None = None,
    created_by: Text | None = None,
    q: Annotated[Text | None, Query(max_length=200, description="Words in the title, body "
                                    "or messages.")] = None,
    ref: Annotated[Text | None, Query(description="name=value, e.g. ap_task_id=...")] = None,
    cursor: Annotated[Seq | None, Query(description="next_cursor of the previous page.")
                      ] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> Response:
    ref_pair = None
    if ref is not None:
        name, sep, value = ref.partition("=")
        if not sep or not name:
            raise ValidationFailed("ref must look like name=value", field="ref")
        ref_pair = (name, value)
    query = TicketQuery(
        status=tuple(status or ()), kind=kind, label=label, assignee=assignee,
        parent_id=parent_id, created_by=created_by, q=q, ref=ref_pair, after=cursor, limit=limit,
    )
    page = await call(hub.tickets.list, query, me)
    base = hub.settings.effective_public_url
    body = TicketPage(items=[TicketOut.of(t, base) for t in page.items],
                      next_cursor=page.next_cursor)
    return Response(body.model_dump_json(), media_type="application/json")


@router.get("/tickets/{ticket_id}", response_model=TicketOut, summary="Get a ticket")
async def get_ticket(ticket_id: Id, hub: Hub, me: Me) -> Response:
    return _out(hub, await call(hub.tickets.get, ticket_id, me))


@router.get("/tickets/{ticket_id}/tree", response_model=TreeNode,
            summary="The ticket and its subtree")
async def ticket_tree(
    ticket_id: Id, hub: Hub, me: Me, depth: Annotated[int, Query(ge=0, le=32)] = 3,
) -> TreeNode:
    tickets = await call(hub.tickets.subtree, ticket_id, depth, me)
    base = hub.settings.effective_public_url
    nodes = {t.id: TreeNode(ticket=TicketOut.of(t, base), children=[]) for t in tickets}
    for t in tickets[1:]:
        if t.parent_id in nodes:
            nodes[t.parent_id].children.append(nodes[t.id])
    return nodes[tickets[0].id]


@router.get("/tickets/{ticket_id}/messages", response_model=list[MessageOut],
            summary="Messages on a ticket, oldest first")
async def list_messages(ticket_id: Id, hub: Hub, me: Me) -> list[MessageOut]:
    return [MessageOut.of(m) for m in await call(hub.tickets.messages, ticket_id, me)]


@router.post("/tickets/{ticket_id}/messages", status_code=201, response_model=MessageOut,
             summary="Post a message")
async def post_message(
    ticket_id: Id, body: MessageIn, hub: Hub, me: Me, request: Request
) -> MessageOut:
    message = await hub.tickets.apost_message(me, ticket_id, body.body, channel_of(request),
                                              data=body.data)
    return MessageOut.of(message)


@router.post("/tickets/{ticket_id}/answer", response_model=TicketOut, summary="Answer")
@direct(_answer_direct)
async def answer(ticket_id: Id, body: AnswerIn, hub: Hub, me: Me, request: Request
                 ) -> Response:
    """Resolve a question, task or info ticket. ``data`` must satisfy the ticket's
    ``response_schema`` (422 naming the failing field)."""
    ticket = await hub.tickets.aanswer(me, ticket_id, body.text, body.data,
                                       channel_of(request), expected_version=body.version)
    return _out(hub, ticket)


@router.post("/tickets/{ticket_id}/approve", response_model=TicketOut, summary="Approve")
async def approve(ticket_id: Id, body: ApproveIn, hub: Hub, me: Me, request: Request
                  ) -> Response:
    ticket = await hub.tickets.aapprove(me, ticket_id, body.comment, body.edited,
                                        channel_of(request), expected_version=body.version)
    return _out(hub, ticket)


@router.post("/tickets/{ticket_id}/deny", response_model=TicketOut, summary="Deny")
async def deny(ticket_id: Id, body: DenyIn, hub: Hub, me: Me, request: Request) -> Response:
    ticket = await hub.tickets.adeny(me, ticket_id, body.reason, channel_of(request),
                                     expected_version=body.version)
    return _out(hub, ticket)


@router.post("/tickets/{ticket_id}/transition", response_model=TicketOut,
             summary="Move to in_progress, done, cancelled, deferred, or reopen")
async def transition(ticket_id: Id, body: TransitionIn, hub: Hub, me: Me, request: Request
                     ) -> Response:
    ticket = await hub.tickets.atransition(me, ticket_id, Status(body.to),
                                           channel_of(request), until=body.until,
                                           reason=body.reason, expected_version=body.version)
    return _out(hub, ticket)


@router.post("/tickets/{ticket_id}/assign", response_model=TicketOut, summary="Assign")
async def assign(ticket_id: Id, body: AssignIn, hub: Hub, me: Me) -> Response:
    ticket = await hub.tickets.aassign(me, ticket_id, body.assignee,
                                       expected_version=body.version)
    return _out(hub, ticket)


@router.post("/tickets/{ticket_id}/labels", response_model=TicketOut,
             summary="Add and remove labels")
async def label(ticket_id: Id, body: LabelIn, hub: Hub, me: Me) -> Response:
    ticket = await hub.tickets.alabel(me, ticket_id, body.add, body.remove,
                                      expected_version=body.version)
    return _out(hub, ticket)


_TIMEOUT: TypeAdapter[float] = TypeAdapter(Annotated[float, Field(ge=0, le=WAIT_MAX_SECONDS)])


def _query_value(query_string: bytes, name: str) -> str | None:
    """The last value of ``name`` in the query string, as Starlette reads it."""
    value = None
    for key, item in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if key == name:
            value = item
    return value


async def _wait_direct(request: DirectRequest) -> Response:
    hub: TicketsDoor = request.app.state.hub
    me = await _actor_of(request, hub)
    errors: list[dict[str, Any]] = []
    ticket_id = _checked(_TICKET_ID, request.path_params["ticket_id"],
                         ("path", "ticket_id"), errors)
    raw_timeout = _query_value(request.scope.get("query_string", b""), "timeout")
    timeout = WAIT_DEFAULT_SECONDS if raw_timeout is None else _checked(
        _TIMEOUT, raw_timeout, ("query", "timeout"), errors)
    if errors:
        raise RequestValidationError(errors)
    return await wait_for_resolution(hub, me, ticket_id, timeout)


@router.get("/tickets/{ticket_id}/wait", response_model=TicketOut,
            summary="Long-poll until the ticket is resolved")
@direct(_wait_direct)
async def wait(
    ticket_id: Id, hub: Hub, me: Me,
    timeout: Annotated[float, Query(ge=0, le=WAIT_MAX_SECONDS,
                                    description="Seconds, at most 60.")] = WAIT_DEFAULT_SECONDS,
) -> Response:
    """Returns as soon as the ticket leaves the waiting states (open, in_progress,
    deferred), else after ``timeout`` seconds (or at once when the hub shuts down) with
    its current state and the header ``X-Tickethub-Timed-Out: true``."""
    return await wait_for_resolution(hub, me, ticket_id, timeout)


def _resolve_empty(signal: asyncio.Future[Ticket | Moved | None]) -> None:
    if not signal.done():
        signal.set_result(None)


async def wait_for_resolution(hub: TicketsDoor, me: Actor, ticket_id: int, timeout: float
                              ) -> Response:
    """The long-poll of ``wait``: the ticket once resolved, or as it is after ``timeout``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + min(timeout, hub.settings.wait_max_seconds)
    with parked("wait"):
        while True:
            # Register before reading: a change committed after the read still wakes us.
            with hub.bus.ticket_signal(ticket_id) as changed:
                ticket = await call(hub.tickets.get, ticket_id, me)
                remaining = deadline - loop.time()
                if not ticket.waiting or remaining <= 0 or hub.bus.closing:  # closing: shutdown
                    break
                # A ticket with a deadline may expire (a ``Moved``): its body is prepared
                # now, while waiting, so thousands woken at one deadline answer sooner.
                expiring = (None if ticket.due_at is None
                            else MovedJson.of(ticket, hub.settings.effective_public_url))
                # At the timeout the signal resolves with None ("read it back"): the
                # loop reads the ticket once more and answers it as timed out. Cheaper
                # than ``asyncio.wait_for`` (no second future) for thousands of waiters.
                timer = loop.call_later(remaining, _resolve_empty, changed)
                try:
                    change = await changed
                finally:
                    timer.cancel()
                if (expiring is not None and isinstance(change, Moved)
                        and change.follows(ticket) and not is_waiting(change.status)):
                    # The expiry's hot path: no new ``Ticket``, one join of bytes.
                    return EncodedJSONResponse(expiring.render_moved(
                        change.status, outcome_of(ticket.kind, change.status), change.at,
                        change.version), headers=_RESOLVED)
                fresh = state_after(change, ticket)
                if fresh is not None and not fresh.waiting:
                    ticket = fresh
                    break
    return _out(hub, ticket, headers=_TIMED_OUT if ticket.waiting else _RESOLVED)


_RESOLVED = ((b"x-tickethub-timed-out", b"false"),)
_TIMED_OUT = ((b"x-tickethub-timed-out", b"true"),)
