"""Surfaces for events that happen on hub tickets (chat rooms and inbound webhooks are
mirrored to tickets): the thread is the ticket's messages, a comment is a message."""

from __future__ import annotations

import asyncio
import re

from tickethub.agents.events import Post
from tickethub.domain.actors import Actor
from tickethub.errors import Forbidden
from tickethub.services.tickets import TicketService

_LINK = re.compile(r"(?<![\w/])#(\d+)\b")


class TicketSurface:
    """The thread of hub ticket ``ticket_id``; writes are messages by ``actor`` through
    ``via`` (the chat channel delivers them on to the room as it does any message)."""

    def __init__(self, tickets: TicketService, ticket_id: int, actor: Actor,
                 source: str = "hub", via: str = "agent") -> None:
        self.source = source
        self._tickets = tickets
        self._ticket_id = ticket_id
        self._actor = actor
        self._via = via

    @property
    def ticket_id(self) -> int:
        return self._ticket_id

    async def thread(self) -> list[Post]:
        ticket = await asyncio.to_thread(self._tickets.get, self._ticket_id)
        messages = await asyncio.to_thread(self._tickets.messages, self._ticket_id)
        posts = [Post(ticket.created_by, f"{ticket.title}\n\n{ticket.body}".strip(),
                      f"ticket {ticket.id}")]
        posts += [Post(m.author, m.body, f"ticket {ticket.id} message {m.id}")
                  for m in messages]
        return posts

    async def linked(self) -> list[Post]:
        ticket = await asyncio.to_thread(self._tickets.get, self._ticket_id)
        out = []
        for number in sorted({int(n) for n in _LINK.findall(ticket.body)} - {ticket.id}):
            try:
                other = await asyncio.to_thread(self._tickets.get, number)
            except Exception:  # a dangling link is simply left out
                continue
            out.append(Post(other.created_by, f"{other.title}\n\n{other.body}".strip(),
                            f"ticket {other.id}"))
        return out

    async def comment(self, body: str) -> str:
        message = await asyncio.to_thread(self._tickets.post_message, self._actor,
                                          self._ticket_id, body, self._via)
        return str(message.id)

    async def read_comment(self, comment_id: str) -> str:
        for m in await asyncio.to_thread(self._tickets.messages, self._ticket_id):
            if str(m.id) == comment_id:
                return m.body
        return ""

    async def edit_comment(self, comment_id: str, body: str) -> None:
        # Hub messages are an append-only record; an "edit" is a new message that says so.
        raise Forbidden("messages on hub tickets cannot be edited; post a new comment")

    async def label(self, add: list[str], remove: list[str]) -> None:
        await asyncio.to_thread(self._tickets.label, self._actor, self._ticket_id, add,
                                remove)
