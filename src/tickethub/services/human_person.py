"""``HubPerson``: the hub's answer to :class:`tickethub.llm.human.Person` — a turn of a
conversation becomes (or continues) a ticket, and the reply is whatever a person answers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio

from tickethub.domain.actors import Actor
from tickethub.llm.errors import NoHumanReply
from tickethub.llm.port import Completion, Message, Tool
from tickethub.services.conversations_openai import HumanTurn, OpenAIConversations
from tickethub.services.tickets import TicketService
from tickethub.services.waiting import TicketSignals, wait_resolved


class HubPerson:
    """Asks on behalf of ``actor``; waits at most ``timeout`` seconds per reply, then
    raises :class:`NoHumanReply` naming the ticket (which keeps waiting for a person)."""

    def __init__(
        self, tickets: TicketService, bus: TicketSignals, actor: Actor, *,
        label: str | None = None, conversation_id: str | None = None, timeout: float = 300.0,
    ) -> None:
        self._tickets = tickets
        self._conversations = OpenAIConversations(tickets)
        self._bus = bus
        self._actor = actor
        self._label = label
        self._conversation_id = conversation_id
        self._timeout = timeout

    async def reply(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool] | None,
        response_format: dict[str, Any] | None,
    ) -> Completion:
        turn = HumanTurn(messages=list(messages), tools=list(tools or ()),
                         response_format=response_format, label=self._label,
                         conversation_id=self._conversation_id)
        ticket = await anyio.to_thread.run_sync(self._conversations.open_turn, self._actor, turn)
        ticket = await wait_resolved(self._tickets.get, self._bus, ticket.id, self._timeout)
        completion = self._conversations.reply_of(ticket, turn)
        if completion is None:
            raise NoHumanReply(ticket.id, ticket.outcome)
        return completion
