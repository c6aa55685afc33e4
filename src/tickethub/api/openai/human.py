"""Model ``human`` / ``human:<label>``: the conversation becomes a ticket a person answers.

``block`` holds the request until the person answers or the wait ends (keep-alive
comments while a stream waits); ``handoff`` returns at once with AutoGPT's
``request_assistance`` command pointing at the ticket, as ai-ticket did. Every reply
carries a ``tickethub`` object: ``ticket_id``, ``ticket_url``, ``status`` and
``outcome`` (``answered``, ``pending``, ``handoff``, or how the ticket ended).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from fastapi import Response
from fastapi.responses import JSONResponse

from tickethub.api.deps import call
from tickethub.api.openai.schemas import ChatRequest, chunks_of, completion_body, completion_id
from tickethub.api.openai.streaming import DONE, held, sse, sse_response
from tickethub.domain.actors import Actor
from tickethub.domain.tickets import Ticket
from tickethub.llm.port import Completion, Usage
from tickethub.ops.series import parked
from tickethub.services.conversations_openai import HumanTurn, OpenAIConversations
from tickethub.services.doors import TicketsDoor
from tickethub.services.waiting import wait_resolved

HUMAN = "human"


def is_human(model: str) -> bool:
    return model == HUMAN or model.startswith(HUMAN + ":")


def label_of(model: str) -> str | None:
    _, _, label = model.partition(":")
    return label.strip() or None


@dataclass(frozen=True, slots=True)
class Reply:
    """What a person's turn came to: the completion to send and the ticket behind it."""

    completion: Completion
    ticket: Ticket
    outcome: str


def request_assistance(ticket_url: str, thought: str, reasoning: str) -> str:
    """AutoGPT's command format: the agent should poll the ticket for the answer."""
    return json.dumps({
        "thoughts": {
            "text": thought,
            "reasoning": reasoning,
            "plan": "- wait for the person's answer\n- poll the ticket URL\n- continue with it",
            "criticism": "",
            "speak": thought,
        },
        "command": {"name": "request_assistance",
                    "args": {"ticket_url": ticket_url, "next_action": "poll_url"}},
    })


class HumanDoor:
    """Answers chat-completions requests for the ``human`` models."""

    def __init__(self, hub: TicketsDoor) -> None:
        self._hub = hub
        self._conversations = OpenAIConversations(
            hub.tickets, replay_answers=hub.settings.openai_replay_answers)

    async def respond(
        self, actor: Actor, request: ChatRequest, *, mode: str, timeout: float,
        conversation_id: str | None,
    ) -> Response:
        turn = HumanTurn(
            messages=request.wire_messages(), tools=request.wire_tools(),
            response_format=request.response_format, label=label_of(request.model),
            conversation_id=conversation_id,
        )
        ticket = await call(self._conversations.open_turn, actor, turn)
        cid = completion_id()
        if mode == "handoff":
            reply = self._pending(ticket, "handoff")
            return self._send(request, cid, reply)
        if not request.stream:
            return self._send(request, cid, await self._wait(ticket, turn, timeout))
        body = held(self._wait(ticket, turn, timeout), self._hub.settings.openai_keepalive_seconds,
                    lambda reply: chunks_of(cid, request.model, reply.completion,
                                            include_usage=request.include_usage,
                                            extra=self._extra(reply)))
        return sse_response(body, self._headers(ticket))

    async def _wait(self, ticket: Ticket, turn: HumanTurn, timeout: float) -> Reply:
        with parked("openai_block"):
            ticket = await wait_resolved(self._hub.tickets.get, self._hub.bus, ticket.id,
                                         timeout)
        completion = self._conversations.reply_of(ticket, turn)
        if completion is not None:
            return Reply(completion, ticket, "answered")
        return self._pending(ticket, "pending" if ticket.waiting else ticket.status.value)

    def _pending(self, ticket: Ticket, outcome: str) -> Reply:
        url = self._hub.public_url(f"/api/v1/tickets/{ticket.id}")
        if outcome == "handoff":
            thought = f"I asked a person for help in ticket #{ticket.id}."
            reasoning = "A person answers there; the answer arrives when they reply."
        elif outcome == "pending":
            thought = f"No answer yet in ticket #{ticket.id}; the person was asked."
            reasoning = "The wait for the person ended before they answered."
        else:
            thought = f"Ticket #{ticket.id} ended as {outcome} without an answer."
            reasoning = "The person did not answer before the ticket closed."
        content = request_assistance(url, thought, reasoning)
        return Reply(Completion(content=content, usage=Usage(0, len(content) // 4), model=HUMAN),
                     ticket, outcome)

    def _extra(self, reply: Reply) -> dict[str, Any]:
        ticket = reply.ticket
        return {"tickethub": {
            "ticket_id": ticket.id, "ticket_url": self._hub.public_url(
                f"/api/v1/tickets/{ticket.id}"),
            "status": ticket.status.value, "outcome": reply.outcome,
        }}

    def _headers(self, ticket: Ticket) -> dict[str, str]:
        return {"X-Tickethub-Ticket": str(ticket.id)}

    def _send(self, request: ChatRequest, cid: str, reply: Reply) -> Response:
        headers = {**self._headers(reply.ticket), "X-Tickethub-Outcome": reply.outcome}
        if request.stream:
            chunks = chunks_of(cid, request.model, reply.completion,
                               include_usage=request.include_usage, extra=self._extra(reply))

            async def body() -> AsyncIterator[bytes]:
                for chunk in chunks:
                    yield sse(chunk)
                yield DONE

            return sse_response(body(), headers)
        return JSONResponse(completion_body(cid, request.model, reply.completion,
                                            self._extra(reply)), headers=headers)
