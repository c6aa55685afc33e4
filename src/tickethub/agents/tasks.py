"""The hub task behind an event's thread, and closing it for the owner (the
``update_task`` tool: issue-manager's "the story is done").

A GitHub issue the hub mirrors is linked to its ticket (``github_sync``'s issue links);
a chat or webhook thread *is* a ticket. When that ticket is a task — an Agent Protocol
task is one, with the ref ``ap_task_id`` — ``complete`` posts the agent's note as the
reply to the task's open step and moves the ticket to done, so the AP task's last step
completes with that note as its output.

The agent acts with its owner's authority and never more: the writes are the owner's
(their hub actor, as stored), so an owner who could not close the task by hand cannot
have their agent close it either.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tickethub.agents.events import AgentEvent
from tickethub.agents.github_events import GithubSurface
from tickethub.agents.surfaces import TicketSurface
from tickethub.domain.actors import Actor
from tickethub.domain.status import Kind, Status
from tickethub.services.agent_tasks import REF_TASK
from tickethub.services.tickets import TicketService

VIA = "agent"


class LinkedTasks:
    def __init__(self, tickets: TicketService, actor_of: Callable[[str], Actor | None],
                 github_link: Callable[[str, int], int | None] | None = None) -> None:
        self._tickets = tickets
        self._actor_of = actor_of
        self.github_link = github_link  # (repo, number) -> ticket id; set with GitHub

    async def ticket_for(self, event: AgentEvent) -> int | None:
        """The hub ticket the event's thread belongs to, if any."""
        surface = event.surface
        if isinstance(surface, TicketSurface):
            return surface.ticket_id
        if isinstance(surface, GithubSurface) and self.github_link is not None:
            return await asyncio.to_thread(self.github_link, surface.repo, surface.number)
        return None

    async def complete(self, owner: str, event: AgentEvent, note: str) -> dict[str, Any]:
        """Reply ``note`` on the linked task and mark it done, as ``owner``; returns what
        was done (for the audit). Raises ``LookupError`` when the thread has no task,
        ``PermissionError`` when the owner is not a hub actor (and the ticket service's
        own errors when the owner may not close it)."""
        ticket_id = await self.ticket_for(event)
        if ticket_id is None:
            raise LookupError("this thread is not linked to a hub task")
        ticket = await asyncio.to_thread(self._tickets.get, ticket_id)
        if ticket.kind is not Kind.TASK:
            raise LookupError(f"ticket {ticket_id} is a {ticket.kind.value}, not a task")
        person = await asyncio.to_thread(self._actor_of, owner)
        if person is None:
            raise PermissionError(f"{owner} is not a hub actor; their agent cannot act "
                                  "on hub tasks")
        await asyncio.to_thread(self._tickets.post_message, person, ticket_id, note, VIA)
        if ticket.waiting:
            await asyncio.to_thread(self._tickets.transition, person, ticket_id,
                                    Status.DONE, VIA, reason="the owner said it is done")
        refs = ticket.refs if isinstance(ticket.refs, dict) else {}
        return {"ticket_id": ticket_id, "ap_task_id": refs.get(REF_TASK)}
