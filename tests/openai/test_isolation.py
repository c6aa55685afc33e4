"""The read policy through the OpenAI door: an agent naming another agent's
conversation id gets a conversation of its own; it never continues, reopens or reads
the other's ticket."""

from __future__ import annotations

import asyncio

from helpers import get, next_ticket, respond
from live import Hub

import openai
from tests.openai.conftest import _token


def sdk(hub: Hub, token: str, conversation: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=hub.url + "/v1", api_key=token, max_retries=0,
                              default_headers={"X-Tickethub-Conversation": conversation})


async def test_an_agent_cannot_continue_another_agents_conversation(hub: Hub) -> None:
    first = [{"role": "user", "content": "Which region?"}]
    call = asyncio.create_task(sdk(hub, hub.agent, "conv-1").chat.completions.create(
        model="human", messages=first))
    theirs = await next_ticket(hub)
    await respond(hub, theirs["id"], "answer", {"text": "eu-west"})
    await asyncio.wait_for(call, 10)

    other = _token(hub.url, "agent", "agent-2")
    follow_up = [*first, {"role": "assistant", "content": "eu-west"},
                 {"role": "user", "content": "And the password?"}]
    call = asyncio.create_task(sdk(hub, other, "conv-1").chat.completions.create(
        model="human", messages=follow_up))
    mine = await next_ticket(hub, after=theirs["id"])
    assert mine["id"] != theirs["id"] and mine["created_by"] == "agent-2"
    await respond(hub, mine["id"], "answer", {"text": "no"})
    completion = await asyncio.wait_for(call, 10)
    assert completion.model_extra["tickethub"]["ticket_id"] == mine["id"]
    untouched = await get(hub, f"/api/v1/tickets/{theirs['id']}")
    assert untouched["status"] == "answered"
    assert [m["author"] for m in await get(hub, f"/api/v1/tickets/{theirs['id']}/messages")
            ] == ["alice"]
