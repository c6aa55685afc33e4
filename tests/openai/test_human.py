"""Model ``human`` through the official ``openai`` SDK: block, stream, handoff, deadline,
one ticket per conversation, labels, and tool calls answered by a person."""

from __future__ import annotations

import asyncio
import json

import pytest
from helpers import get, next_ticket, respond
from live import Hub

import openai

SYSTEM = {"role": "system", "content": "You are a careful agent. Never guess."}


def sdk(hub: Hub, **headers: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=hub.url + "/v1", api_key=hub.agent, max_retries=0,
                              default_headers=headers or None)


async def test_block_returns_the_persons_answer_as_a_completion(hub: Hub) -> None:
    client = sdk(hub)
    call = asyncio.create_task(client.chat.completions.create(
        model="human", messages=[SYSTEM, {"role": "user", "content": "Capital of France?"}]))
    ticket = await next_ticket(hub)
    assert ticket["title"] == "Capital of France?"
    assert "<details><summary>system prompt</summary>" in ticket["body"]
    assert "Never guess." in ticket["body"]
    assert not call.done()
    assert (await respond(hub, ticket["id"], "answer", {"text": "Paris"})).status_code == 200
    completion = await asyncio.wait_for(call, 10)
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    assert completion.model == "human"
    assert isinstance(completion.created, int) and completion.created > 0
    choice = completion.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == "Paris"
    assert choice.finish_reason == "stop"
    assert completion.usage is not None and completion.usage.total_tokens > 0
    extra = completion.model_extra["tickethub"]
    assert extra["ticket_id"] == ticket["id"] and extra["outcome"] == "answered"


async def test_stream_sends_keepalives_while_waiting_then_the_answer(hub: Hub) -> None:
    body = {"model": "human", "stream": True,
            "messages": [{"role": "user", "content": "Deploy now?"}]}
    lines: list[str] = []
    async with (
        hub.client(hub.agent) as c,
        c.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        ticket_id = int(response.headers["x-tickethub-ticket"])
        answered = False
        async for line in response.aiter_lines():
            lines.append(line)
            if not answered and lines.count(": keep-alive") >= 3:
                answered = True
                reply = await respond(hub, ticket_id, "answer", {"text": "Yes, go."})
                assert reply.status_code == 200
    data = [json.loads(x[6:]) for x in lines if x.startswith("data: {")]
    assert lines[-2:] == ["data: [DONE]", ""] or lines[-1] == "data: [DONE]"
    assert all(d["object"] == "chat.completion.chunk" for d in data)
    assert data[0]["choices"][0]["delta"]["role"] == "assistant"
    assert "".join(d["choices"][0]["delta"].get("content", "") for d in data) == "Yes, go."
    assert data[-1]["choices"][0]["finish_reason"] == "stop"


async def test_stream_through_the_sdk_with_usage(hub: Hub) -> None:
    client = sdk(hub)

    async def collect() -> tuple[str, list[str | None], object]:
        stream = await client.chat.completions.create(
            model="human", stream=True, stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "Name a colour"}])
        text, finishes, usage = "", [], None
        async for chunk in stream:
            if chunk.usage:
                usage = chunk.usage
            for choice in chunk.choices:
                text += choice.delta.content or ""
                finishes.append(choice.finish_reason)
        return text, finishes, usage

    call = asyncio.create_task(collect())
    ticket = await next_ticket(hub)
    await respond(hub, ticket["id"], "answer", {"text": "A long answer: " + "blue " * 30})
    text, finishes, usage = await asyncio.wait_for(call, 10)
    assert text == "A long answer: " + "blue " * 30
    assert finishes[-1] == "stop" and all(f is None for f in finishes[:-1])
    assert usage is not None and usage.completion_tokens > 0


async def test_a_multi_turn_conversation_keeps_one_ticket(hub: Hub) -> None:
    client = sdk(hub)
    first = [SYSTEM, {"role": "user", "content": "Which region?"}]
    call = asyncio.create_task(client.chat.completions.create(model="human", messages=first))
    ticket = await next_ticket(hub)
    await respond(hub, ticket["id"], "answer", {"text": "eu-west"})
    one = await call
    second = [*first, {"role": "assistant", "content": one.choices[0].message.content},
              {"role": "user", "content": "And which size?"}]
    call = asyncio.create_task(client.chat.completions.create(model="human", messages=second))
    again = await next_ticket(hub)
    assert again["id"] == ticket["id"]  # reopened, not a second ticket
    await respond(hub, ticket["id"], "answer", {"text": "large"})
    two = await call
    assert two.choices[0].message.content == "large"
    assert two.model_extra["tickethub"]["ticket_id"] == ticket["id"]
    messages = await get(hub, f"/api/v1/tickets/{ticket['id']}/messages")
    assert any("And which size?" in m["body"] and m["via"] == "openai" for m in messages)


async def test_a_retried_turn_gets_the_answer_it_missed(hub: Hub) -> None:
    messages = [{"role": "user", "content": "Which port?"}]
    thread = {"X-Tickethub-Conversation": "deploy-7"}
    handoff = sdk(hub, **{"X-Tickethub-Mode": "handoff"}, **thread)
    first = await handoff.chat.completions.create(model="human", messages=messages)
    ticket_id = first.model_extra["tickethub"]["ticket_id"]
    await respond(hub, ticket_id, "answer", {"text": "8080"})
    # the agent never saw that answer (handoff, or a lost response): asking again in the
    # same conversation gets it (without a conversation id it would be a new question)
    again = await asyncio.wait_for(sdk(hub, **thread).chat.completions.create(
        model="human", messages=messages), 5)
    assert again.choices[0].message.content == "8080"
    assert (await get(hub, f"/api/v1/tickets/{ticket_id}"))["status"] == "answered"


async def test_a_client_conversation_id_names_the_thread(hub: Hub) -> None:
    client = sdk(hub)
    call = asyncio.create_task(client.chat.completions.create(
        model="human", metadata={"conversation_id": "run-42"},
        messages=[{"role": "user", "content": "Step one?"}]))
    ticket = await next_ticket(hub)
    await respond(hub, ticket["id"], "answer", {"text": "ok"})
    await call
    # different opening messages, same conversation id (as a header this time)
    call = asyncio.create_task(sdk(hub, **{"X-Tickethub-Conversation": "run-42"})
                               .chat.completions.create(
        model="human", messages=[{"role": "user", "content": "A new opening"},
                                 {"role": "assistant", "content": "ok"},
                                 {"role": "user", "content": "Step two?"}]))
    assert (await next_ticket(hub))["id"] == ticket["id"]
    await respond(hub, ticket["id"], "answer", {"text": "done"})
    assert (await call).choices[0].message.content == "done"
    # without an id, another opening is another conversation
    handoff = sdk(hub, **{"X-Tickethub-Mode": "handoff"})
    other = await handoff.chat.completions.create(
        model="human", messages=[{"role": "user", "content": "Unrelated"}])
    assert other.model_extra["tickethub"]["ticket_id"] != ticket["id"]


async def test_handoff_returns_at_once_with_request_assistance(hub: Hub) -> None:
    client = sdk(hub, **{"X-Tickethub-Mode": "handoff"})
    completion = await asyncio.wait_for(client.chat.completions.create(
        model="human", messages=[{"role": "user", "content": "Review my PR"}]), 5)
    command = json.loads(completion.choices[0].message.content)
    assert command["command"]["name"] == "request_assistance"
    args = command["command"]["args"]
    assert args["next_action"] == "poll_url"
    assert set(command["thoughts"]) >= {"text", "reasoning", "plan", "criticism", "speak"}
    ticket = await get(hub, args["ticket_url"].removeprefix(hub.url))
    assert ticket["status"] == "open" and ticket["title"] == "Review my PR"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model_extra["tickethub"]["outcome"] == "handoff"


@pytest.mark.hub(openai_default_mode="handoff")
async def test_the_default_mode_is_configurable(hub: Hub) -> None:
    completion = await sdk(hub).chat.completions.create(
        model="human", messages=[{"role": "user", "content": "hello"}])
    assert completion.model_extra["tickethub"]["outcome"] == "handoff"


async def test_the_deadline_gives_a_typed_reply_not_a_hang(hub: Hub) -> None:
    client = sdk(hub, **{"X-Tickethub-Timeout": "0.3"})
    completion = await asyncio.wait_for(client.chat.completions.create(
        model="human", messages=[{"role": "user", "content": "Anyone there?"}]), 5)
    extra = completion.model_extra["tickethub"]
    assert extra["outcome"] == "pending" and extra["status"] == "open"
    command = json.loads(completion.choices[0].message.content)
    assert command["command"]["args"]["ticket_url"] == extra["ticket_url"]
    # streamed, the same typed reply arrives as chunks
    stream = await client.chat.completions.create(
        model="human", stream=True, messages=[{"role": "user", "content": "Anyone there?"}])
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert json.loads(text)["command"]["name"] == "request_assistance"


async def test_a_label_routes_the_ticket_to_a_team(hub: Hub) -> None:
    completion = await sdk(hub, **{"X-Tickethub-Mode": "handoff"}).chat.completions.create(
        model="human:ops", messages=[{"role": "user", "content": "Disk full on db-1"}])
    ticket = await get(hub, f"/api/v1/tickets/{completion.model_extra['tickethub']['ticket_id']}")
    assert ticket["labels"] == ["ops"]
    assert completion.model == "human:ops"


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False}}}


async def test_a_person_answers_with_a_tool_call_checked_against_its_schema(hub: Hub) -> None:
    client = sdk(hub)
    call = asyncio.create_task(client.chat.completions.create(
        model="human", tools=[WEATHER],
        messages=[{"role": "user", "content": "What should I wear in Paris?"}]))
    ticket = await next_ticket(hub)
    assert "get_weather" in ticket["body"]
    bad = await respond(hub, ticket["id"], "answer",
                        {"data": {"tool_calls": [{"name": "get_weather",
                                                  "arguments": {"city": 7}}]}})
    assert bad.status_code == 422
    assert bad.json()["field"] == "data.tool_calls.0.arguments.city"
    unknown = await respond(hub, ticket["id"], "answer",
                            {"data": {"tool_calls": [{"name": "rm_rf", "arguments": {}}]}})
    assert unknown.status_code == 422
    assert not call.done()  # the agent got nothing invalid
    good = await respond(hub, ticket["id"], "answer",
                         {"data": {"tool_calls": [{"name": "get_weather",
                                                   "arguments": {"city": "Paris"}}]}})
    assert good.status_code == 200, good.text
    completion = await asyncio.wait_for(call, 10)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    [tool_call] = choice.message.tool_calls
    assert tool_call.type == "function" and tool_call.function.name == "get_weather"
    assert json.loads(tool_call.function.arguments) == {"city": "Paris"}
    assert tool_call.id


async def test_a_tool_call_answer_streams(hub: Hub) -> None:
    client = sdk(hub)

    async def collect() -> tuple[dict[int, dict[str, str]], str | None]:
        stream = await client.chat.completions.create(
            model="human", tools=[WEATHER], stream=True,
            messages=[{"role": "user", "content": "Weather in Oslo?"}])
        calls: dict[int, dict[str, str]] = {}
        finish = None
        async for chunk in stream:
            for choice in chunk.choices:
                finish = choice.finish_reason or finish
                for tc in choice.delta.tool_calls or []:
                    entry = calls.setdefault(tc.index, {"name": "", "arguments": ""})
                    entry["name"] += tc.function.name or ""
                    entry["arguments"] += tc.function.arguments or ""
        return calls, finish

    call = asyncio.create_task(collect())
    ticket = await next_ticket(hub)
    await respond(hub, ticket["id"], "answer", {"data": {
        "tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}})
    calls, finish = await asyncio.wait_for(call, 10)
    assert finish == "tool_calls"
    assert calls[0]["name"] == "get_weather"
    assert json.loads(calls[0]["arguments"]) == {"city": "Oslo"}


async def test_a_json_schema_response_format_is_what_the_person_must_fill(hub: Hub) -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}},
              "required": ["ok"]}
    call = asyncio.create_task(sdk(hub).chat.completions.create(
        model="human", messages=[{"role": "user", "content": "Approve the budget?"}],
        response_format={"type": "json_schema",
                         "json_schema": {"name": "decision", "schema": schema}}))
    ticket = await next_ticket(hub)
    assert (await respond(hub, ticket["id"], "answer", {"data": {"ok": "y"}})).status_code == 422
    assert (await respond(hub, ticket["id"], "answer", {"data": {"ok": True}})).status_code == 200
    completion = await asyncio.wait_for(call, 10)
    assert json.loads(completion.choices[0].message.content) == {"ok": True}
