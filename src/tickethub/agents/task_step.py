"""One Agent Protocol step, as a handler running inside the hub sees it.

It has the attributes and methods of the SDK's ``tickethub.sdk.tasks.TaskStep``, so a
handler written for ``serve_tasks`` runs inside the hub unchanged. The step may not be
stored yet while the handler runs (it is stored together with a quick reply); ``ask``
and ``attach`` store it first, since what they make belongs to it. ``ask`` returns
the hub's own ``Ticket`` (same ``status``, ``outcome``, ``answer``, ``approved`` and
``denied`` as the SDK's) and ``attach`` the artifact as the door lists it.
"""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anyio

from tickethub.domain.actors import Actor
from tickethub.domain.status import Kind
from tickethub.domain.tickets import Ticket, TicketDraft
from tickethub.services.artifacts import ArtifactService
from tickethub.services.tickets import TicketService
from tickethub.services.waiting import TicketSignals, wait_resolved

_FOREVER = 365 * 86400.0  # a finite "no timeout": event loops cap timer delays
_DRAFT_FIELDS = frozenset({"assignee", "labels", "due_at", "response_schema", "proposal",
                           "refs"})


@dataclass(frozen=True)
class StepTools:
    """What a hosted step reaches the hub with: the services and who it acts as."""

    actor: Actor
    tickets: TicketService
    artifacts: ArtifactService
    bus: TicketSignals


@dataclass
class HostedTaskStep:
    """A step for a handler inside the hub (see the module doc)."""

    task_id: str
    step_id: str
    ticket_id: int
    input: str | None
    additional_input: dict[str, Any] | None
    task_input: str | None
    task_additional_input: dict[str, Any] | None
    _tools: StepTools = field(repr=False)
    _stored: Callable[[], Awaitable[object]] = field(repr=False)

    async def ask(self, title: str, body: str = "", kind: str = "question", *,
                  timeout: float | None = None, **fields: Any) -> Ticket:
        """Ask people a child question of this task's ticket and wait for the answer
        (forever by default; after ``timeout`` seconds the ticket as it stands).
        ``fields``: assignee, labels, due_at, response_schema, proposal, refs."""
        unknown = set(fields) - _DRAFT_FIELDS
        if unknown:
            raise TypeError(f"ask() got unknown fields: {', '.join(sorted(unknown))}")
        if isinstance(fields.get("due_at"), str):
            fields["due_at"] = datetime.fromisoformat(fields["due_at"])
        if "labels" in fields:
            fields["labels"] = tuple(fields["labels"])
        draft = TicketDraft(kind=Kind(kind), title=title, body=body, parent_id=self.ticket_id,
                            **fields)
        await self._stored()
        tools = self._tools
        ticket, _ = await tools.tickets.aask(tools.actor, draft)
        return await wait_resolved(tools.tickets.get, tools.bus, ticket.id,
                                   _FOREVER if timeout is None else timeout)

    async def attach(self, file_name: str, content: bytes,
                     relative_path: str | None = None) -> dict[str, Any]:
        """Store a file as the agent's artifact; it shows in this step once replied."""
        await self._stored()  # an agent's file belongs to the newest stored step
        tools = self._tools
        record = await anyio.to_thread.run_sync(
            tools.artifacts.upload, tools.actor, self.task_id, file_name, relative_path,
            io.BytesIO(content))
        return {"artifact_id": record.artifact_id, "agent_created": record.agent_created,
                "file_name": record.file_name, "relative_path": record.relative_path}
