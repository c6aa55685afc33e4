"""Wire schemas of the native API (pydantic at the edge, dataclasses inside)."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Annotated, Any, Literal

import orjson
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

from tickethub.api.wire_types import Id, NoNul, Text
from tickethub.domain.events import Event
from tickethub.domain.messages import Message
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket

Label = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100),
                  NoNul]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200),
                 NoNul]
LongText = Annotated[str, StringConstraints(max_length=200_000), NoNul]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TicketIn(Strict):
    """A new ticket: what the agent asks."""

    title: Annotated[str, StringConstraints(min_length=1, max_length=500), NoNul]
    body: LongText = ""
    kind: Kind = Kind.QUESTION
    parent_id: Id | None = None
    labels: list[Label] = Field(default_factory=list, max_length=50)
    assignee: Name | None = None
    due_at: AwareDatetime | None = Field(None, description="When an unanswered ticket "
                                         "expires (an approval then counts as denied).")
    response_schema: dict[str, Any] | None = Field(None, description="JSON Schema the "
                                                   "answer's data (or an edited approval) "
                                                   "must satisfy.")
    proposal: Any = Field(None, description="For approvals: the proposed action.")
    refs: dict[str, Any] = Field(default_factory=dict, description="Links to the outside.")


class AnswerOut(BaseModel):
    text: str | None
    data: Any
    by: str
    via: str
    at: datetime


class TicketOut(BaseModel):
    id: int
    parent_id: int | None
    kind: Kind
    title: str
    body: str
    status: Status
    outcome: str | None = Field(description="null while waiting; else the result to act on "
                                "(an expired approval is 'denied').")
    created_by: str
    assignee: str | None
    labels: list[str]
    due_at: datetime | None
    next_attention_at: datetime | None
    answer: AnswerOut | None
    response_schema: dict[str, Any] | None
    proposal: Any
    refs: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    version: int
    url: str
    html_url: str

    @classmethod
    def of(cls, ticket: Ticket, base_url: str) -> TicketOut:
        answer = ticket.answer
        return cls(
            id=ticket.id, parent_id=ticket.parent_id, kind=ticket.kind, title=ticket.title,
            body=ticket.body, status=ticket.status, outcome=ticket.outcome,
            created_by=ticket.created_by, assignee=ticket.assignee, labels=list(ticket.labels),
            due_at=ticket.due_at, next_attention_at=ticket.next_attention_at,
            answer=AnswerOut(text=answer.text, data=answer.data, by=answer.by, via=answer.via,
                             at=answer.at) if answer else None,
            response_schema=ticket.response_schema, proposal=ticket.proposal,
            refs=ticket.refs, created_at=ticket.created_at, updated_at=ticket.updated_at,
            version=ticket.version, url=f"{base_url}/api/v1/tickets/{ticket.id}",
            html_url=f"{base_url}/t/{ticket.id}",
        )


_TICKET_JSON = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS


def ticket_json(ticket: Ticket, base_url: str) -> bytes:
    """``TicketOut.of(ticket, base_url).model_dump_json()``, byte for byte, in a
    fraction of its time (no model is built): for the hot paths (an ask, an answer,
    thousands of woken long-polls). Values orjson refuses (an integer beyond 64 bits)
    go the model's way."""
    try:
        return orjson.dumps(_document(ticket, base_url), option=_TICKET_JSON)
    except TypeError:
        return TicketOut.of(ticket, base_url).model_dump_json().encode()


def _document(ticket: Ticket, base_url: str) -> dict[str, Any]:
    answer = ticket.answer
    return {
        "id": ticket.id, "parent_id": ticket.parent_id, "kind": ticket.kind.value,
        "title": ticket.title, "body": ticket.body, "status": ticket.status.value,
        "outcome": ticket.outcome, "created_by": ticket.created_by,
        "assignee": ticket.assignee, "labels": list(ticket.labels), "due_at": ticket.due_at,
        "next_attention_at": ticket.next_attention_at,
        "answer": None if answer is None else {
            "text": answer.text, "data": answer.data, "by": answer.by, "via": answer.via,
            "at": answer.at},
        "response_schema": ticket.response_schema, "proposal": ticket.proposal,
        "refs": ticket.refs, "created_at": ticket.created_at,
        "updated_at": ticket.updated_at, "version": ticket.version,
        "url": f"{base_url}/api/v1/tickets/{ticket.id}", "html_url": f"{base_url}/t/{ticket.id}",
    }


# The fields a change of status alone (``Moved``) changes, in the document's order.
_MOVING = ("status", "outcome", "updated_at", "version")
_MARK = "\x00" + os.urandom(8).hex()  # no ticket holds it: a placeholder's value


class MovedJson:
    """``ticket_json`` of a ticket after a change of its status alone (a deadline's
    expiry), prepared from the state before it: the encoded document cut where the four
    fields that change go. A waiter prepares it while it waits, so the woken response
    costs four small encodes and a join instead of the whole document."""

    def __init__(self, parts: list[bytes]) -> None:
        self._parts = parts

    @classmethod
    def of(cls, before: Ticket, base_url: str) -> MovedJson | None:
        """Prepared from ``before``; ``None`` when it cannot be (``ticket_json``'s
        fallback cases)."""
        document = _document(before, base_url)
        for n, key in enumerate(_MOVING):
            document[key] = f"{_MARK}{n}"
        try:
            rest = orjson.dumps(document, option=_TICKET_JSON)
        except TypeError:
            return None
        parts = []
        for n in range(len(_MOVING)):
            head, *tail = rest.split(orjson.dumps(f"{_MARK}{n}"))
            if len(tail) != 1:
                return None
            parts.append(head)
            rest = tail[0]
        return cls([*parts, rest])

    def render(self, after: Ticket) -> bytes:
        """``ticket_json(after, base_url)``, for ``after`` = a ``Moved`` applied to the
        ticket this was prepared from."""
        return self.render_moved(after.status, after.outcome, after.updated_at,
                                 after.version)

    def render_moved(self, status: Status, outcome: str | None, at: datetime,
                     version: int) -> bytes:
        """:meth:`render` from the moved fields alone (the ticket this was prepared
        from, moved to ``status`` at ``at`` as ``version``, its outcome then
        ``outcome``), without building the new ``Ticket``: a woken waiter's whole cost
        is this join."""
        p = self._parts
        return b"".join((
            p[0], orjson.dumps(status.value), p[1], orjson.dumps(outcome), p[2],
            orjson.dumps(at, option=_TICKET_JSON), p[3], str(version).encode(), p[4]))


_SHARED_BODIES = 4096  # tickets whose latest encoded state is kept
_bodies: dict[int, tuple[Ticket, str, bytes]] = {}


def shared_ticket_json(ticket: Ticket, base_url: str) -> bytes:
    """``ticket_json(ticket, base_url)``, encoded once per ticket *state object*: a write
    hands the same ``Ticket`` to its requester and (through the bus) to every waiter of
    the ticket, so an answer and the long-polls it wakes share one body. Keyed by the
    object's identity (tickets are immutable values), so a state read back from the
    store is encoded afresh."""
    entry = _bodies.get(ticket.id)
    if entry is not None and entry[0] is ticket and entry[1] == base_url:
        return entry[2]
    body = ticket_json(ticket, base_url)
    if len(_bodies) >= _SHARED_BODIES:
        _bodies.clear()
    _bodies[ticket.id] = (ticket, base_url, body)
    return body


class TicketPage(BaseModel):
    items: list[TicketOut]
    next_cursor: str | None


class TreeNode(BaseModel):
    ticket: TicketOut
    children: list[TreeNode]


class Versioned(Strict):
    version: Id | None = Field(None, description="If given, the change applies only "
                                "to this version of the ticket (else 409 stale_version).")


class MessageIn(Strict):
    body: Annotated[LongText, StringConstraints(min_length=1)]
    data: Any = None


class MessageOut(BaseModel):
    id: int
    ticket_id: int
    author: str
    via: str
    kind: str
    body: str
    trusted: bool
    external_id: str | None
    data: Any
    decision: Literal["answered", "approved", "edited", "denied"] | None = Field(
        None, description="On an answer message: the decision it records (edited: approved "
        "with edited data); its data is what was decided. Null on other messages.")
    created_at: datetime

    @classmethod
    def of(cls, m: Message) -> MessageOut:
        return cls(id=m.id, ticket_id=m.ticket_id, author=m.author, via=m.via, kind=m.kind,
                   body=m.body, trusted=m.trusted, external_id=m.external_id, data=m.data,
                   decision=m.decision.value if m.decision else None, created_at=m.created_at)


class AnswerIn(Versioned):
    text: LongText | None = None
    data: Any = None


class ApproveIn(Versioned):
    comment: LongText | None = None
    edited: Any = Field(None, description="An edited proposal; must satisfy response_schema.")


class DenyIn(Versioned):
    reason: LongText | None = None


class TransitionIn(Versioned):
    to: Literal["open", "in_progress", "deferred", "done", "cancelled"]
    until: AwareDatetime | None = Field(None, description="For 'deferred': when the ticket "
                                        "comes back.")
    reason: Annotated[str, StringConstraints(max_length=10_000), NoNul] | None = None


class AssignIn(Versioned):
    assignee: Name | None


class LabelIn(Versioned):
    add: list[Label] = Field(default_factory=list, max_length=50)
    remove: list[Label] = Field(default_factory=list, max_length=50)


class EventOut(BaseModel):
    seq: int
    type: str
    ticket_id: int
    actor: str
    data: dict[str, Any]
    at: datetime

    @classmethod
    def of(cls, e: Event) -> EventOut:
        return cls(seq=e.seq, type=e.type.value, ticket_id=e.ticket_id, actor=e.actor,
                   data=e.data, at=e.at)


class EventPage(BaseModel):
    items: list[EventOut]
    last_seq: int = Field(description="Pass as 'since' to get what comes next.")


class TokenIn(Strict):
    role: Literal["agent", "responder", "admin"]
    name: Annotated[str, StringConstraints(min_length=1, max_length=100), NoNul]
    scopes: list[Annotated[str, StringConstraints(max_length=50)]] = Field(
        default_factory=list, max_length=10,
        description="What the token adds to its role: 'read:all' lets an agent read every "
                    "ticket, message and event (by default it reads only the tickets it "
                    "created, their subtrees and those assigned to it).")


class TokenOut(BaseModel):
    id: int
    name: str
    role: str
    prefix: str
    created_at: datetime
    revoked_at: datetime | None = None
    scopes: list[str] = Field(default_factory=list)
    token: str | None = Field(None, description="Only in the response that created it.")


class WebhookIn(Strict):
    url: Annotated[str, StringConstraints(min_length=1, max_length=2000), NoNul]
    events: list[Text] = Field(default_factory=list, description="Event types; empty = all.")
    secret: Text | None = None


class WebhookOut(BaseModel):
    id: int
    url: str
    events: list[str]
    created_at: datetime
    secret: str | None = None


class ActorOut(BaseModel):
    name: str
    role: str
    kind: str
