"""What the MCP tools need from the hub, and its in-process implementation.

A desk acts for one agent: ask, wait, list its tickets, post. Every method returns
tickets in the native API's ``TicketOut`` JSON shape, so the in-process desk (the
``/mcp`` endpoint) and the remote one (``tickethub mcp`` over stdio, talking to a hub
over HTTP) give the tools the same data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from tickethub.api.deps import call
from tickethub.api.schemas import MessageOut, TicketOut
from tickethub.domain.actors import Actor
from tickethub.domain.status import WAITING, Kind
from tickethub.domain.tickets import Ticket, TicketDraft, TicketQuery
from tickethub.ops.series import parked
from tickethub.services.doors import TicketsDoor
from tickethub.services.waiting import wait_resolved

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Question:
    """What ``ask_human`` asks."""

    title: str
    body: str = ""
    kind: Kind = Kind.QUESTION
    response_schema: JSON | None = None
    proposal: Any = None
    deadline_seconds: float | None = None
    labels: tuple[str, ...] = field(default_factory=tuple)


class Desk(Protocol):
    async def ask(self, question: Question) -> JSON: ...

    async def wait(self, ticket_id: int, timeout: float) -> JSON: ...

    async def mine(self, waiting_only: bool, limit: int) -> list[JSON]: ...

    async def post(self, ticket_id: int, text: str) -> JSON: ...


class LocalDesk:
    """The desk of ``actor`` inside the hub process: services and the bus directly."""

    def __init__(self, hub: TicketsDoor, actor: Actor) -> None:
        self._hub = hub
        self._actor = actor

    def _read(self, ticket_id: int) -> Ticket:
        """The ticket as this desk's agent may read it (else ``NotFound``)."""
        return self._hub.tickets.get(ticket_id, self._actor)

    def _out(self, ticket: Any) -> JSON:
        return TicketOut.of(ticket, self._hub.settings.effective_public_url).model_dump(
            mode="json")

    async def ask(self, question: Question) -> JSON:
        due = None
        if question.deadline_seconds is not None:
            due = self._hub.clock.now() + timedelta(seconds=question.deadline_seconds)
        draft = TicketDraft(
            kind=question.kind, title=question.title, body=question.body, due_at=due,
            labels=question.labels, response_schema=question.response_schema,
            proposal=question.proposal, refs={"via": "mcp"},
        )
        ticket, _ = await self._hub.tickets.aask(self._actor, draft)
        return self._out(ticket)

    async def wait(self, ticket_id: int, timeout: float) -> JSON:
        with parked("mcp_call"):
            ticket = await wait_resolved(self._read, self._hub.bus, ticket_id, timeout)
        return self._out(ticket)

    async def mine(self, waiting_only: bool, limit: int) -> list[JSON]:
        query = TicketQuery(created_by=self._actor.name,
                            status=tuple(WAITING) if waiting_only else (), limit=limit)
        page = await call(self._hub.tickets.list, query, self._actor)
        return [self._out(t) for t in page.items]

    async def post(self, ticket_id: int, text: str) -> JSON:
        message = await self._hub.tickets.apost_message(self._actor, ticket_id, text, "mcp")
        return MessageOut.of(message).model_dump(mode="json")
