"""The LLM port's contract, passed by every provider: ``ScriptedLLM``, ``OpenAICompatible``
(against an upstream speaking OpenAI's wire format) and ``HumanLLM`` (a person answers
through a ticket on a live hub)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from helpers import next_ticket, respond
from live import UPSTREAM_KEY, FakeUpstream, Hub, Reply

from tickethub.domain.actors import Actor, Role
from tickethub.llm import (
    LLM,
    Completion,
    HumanLLM,
    NoHumanReply,
    OpenAICompatible,
    ScriptedLLM,
    ToolCall,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from tickethub.services.human_person import HubPerson

MESSAGES = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Say hi"}]
TOOL = {"type": "function", "function": {"name": "greet", "parameters": {
    "type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}}}

async def _nothing() -> None:
    return None


async def _ask(llm: LLM, person: Callable[[], Awaitable[None]],
               messages: list[dict[str, Any]], **kwargs: Any) -> Completion:
    call = asyncio.create_task(llm.complete(messages, **kwargs))
    await person()
    return await asyncio.wait_for(call, 20)


async def contract(llm: LLM, say_hi: Callable[[], Awaitable[None]],
                   call_greet: Callable[[], Awaitable[None]]) -> None:
    """What every provider must do: reply "hi" when ``say_hi`` makes it, then call
    greet(who=bob) when ``call_greet`` makes it."""
    text = await _ask(llm, say_hi, MESSAGES)
    assert text.content == "hi" and text.finish_reason == "stop" and not text.tool_calls
    assert text.to_message() == {"role": "assistant", "content": "hi"}
    follow_up = [*MESSAGES, text.to_message(), {"role": "user", "content": "Greet bob"}]
    tool = await _ask(llm, call_greet, follow_up, tools=[TOOL])
    assert tool.finish_reason == "tool_calls"
    [call] = tool.tool_calls
    assert (call.name, call.arguments) == ("greet", {"who": "bob"}) and call.id
    assert tool.to_message()["tool_calls"][0]["function"]["name"] == "greet"


class OnHubLoop:
    """Runs an LLM on the live hub's event loop, where its bus lives."""

    def __init__(self, llm: LLM, hub: Hub) -> None:
        self._llm = llm
        self._loop = hub.runtime.bus._loop

    async def complete(self, *args: Any, **kwargs: Any) -> Completion:
        future = asyncio.run_coroutine_threadsafe(self._llm.complete(*args, **kwargs),
                                                  self._loop)
        return await asyncio.wrap_future(future)


@pytest.mark.sqlite_only
async def test_scripted_llm_passes_the_contract() -> None:
    llm = ScriptedLLM("hi", Completion(None, (ToolCall("c1", "greet", {"who": "bob"}),),
                                       "tool_calls"))
    await contract(llm, _nothing, _nothing)


@pytest.mark.sqlite_only
async def test_openai_compatible_passes_the_contract(
        fake: FakeUpstream, upstream: tuple[FakeUpstream, str]) -> None:
    fake.replies += [Reply(content="hi"), Reply(tool_calls=[("greet", {"who": "bob"})])]
    llm = OpenAICompatible(upstream[1], UPSTREAM_KEY, model="gpt-test")
    try:
        await contract(llm, _nothing, _nothing)
    finally:
        await llm.aclose()
    assert fake.requests[1]["tools"] == [TOOL]


async def test_human_llm_passes_the_contract(hub: Hub) -> None:
    runtime = hub.runtime
    person = HubPerson(runtime.tickets, runtime.bus, Actor(name="agent-1", role=Role.AGENT),
                       timeout=30)

    async def answer(body: dict[str, Any]) -> None:
        ticket = await next_ticket(hub)
        assert (await respond(hub, ticket["id"], "answer", body)).status_code == 200

    await contract(OnHubLoop(HumanLLM(person), hub),
                   lambda: answer({"text": "hi"}),
                   lambda: answer({"data": {"tool_calls": [
                       {"name": "greet", "arguments": {"who": "bob"}}]}}))


@pytest.mark.sqlite_only
async def test_scripted_llm_records_calls_and_refuses_extra_ones() -> None:
    llm = ScriptedLLM(lambda messages: f"{len(messages)} messages")
    assert (await llm.complete(MESSAGES, [TOOL])).content == "2 messages"
    assert llm.calls == [(MESSAGES, [TOOL], None)]
    with pytest.raises(AssertionError):
        await llm.complete(MESSAGES)


@pytest.mark.sqlite_only
async def test_upstream_failures_are_typed(fake: FakeUpstream,
                                           upstream: tuple[FakeUpstream, str]) -> None:
    down = OpenAICompatible("http://127.0.0.1:9/v1", model="gpt-test")
    with pytest.raises(UpstreamUnavailable):
        await down.complete(MESSAGES)
    await down.aclose()
    fake.replies.append(Reply(content="late", delay=1))
    slow = OpenAICompatible(upstream[1], UPSTREAM_KEY, model="gpt-test", timeout=0.2)
    with pytest.raises(UpstreamTimeout):
        await slow.complete(MESSAGES)
    await slow.aclose()


async def test_a_person_who_does_not_answer_in_time_is_no_reply(hub: Hub) -> None:
    runtime = hub.runtime
    person = HubPerson(runtime.tickets, runtime.bus, Actor(name="agent-1", role=Role.AGENT),
                       timeout=0.2)
    with pytest.raises(NoHumanReply) as caught:
        await OnHubLoop(HumanLLM(person), hub).complete(MESSAGES)
    assert caught.value.outcome is None and caught.value.ticket_id >= 1
