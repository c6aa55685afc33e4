"""Decisions on the OpenAI door, through the official ``openai`` SDK: a person's tool-call
answer is on the record; an earlier answer is replayed only for a plain question the
operator allows; an upstream's invalid gated call opens a flagged approval."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from helpers import get, next_ticket, respond
from live import FakeUpstream, Hub, Reply

import openai

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False}}}
DELETE = {"type": "function", "function": {
    "name": "delete_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string", "pattern": "^/tmp/"}},
        "required": ["path"], "additionalProperties": False}}}
USER = [{"role": "user", "content": "clean up the temp folder"}]


def sdk(hub: Hub) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=hub.url + "/v1", api_key=hub.agent, max_retries=0)


async def _answered_events(hub: Hub, ticket_id: int) -> list[dict[str, Any]]:
    page = await get(hub, f"/api/v1/events?ticket_id={ticket_id}")
    return [e["data"] for e in page["items"] if e["type"] == "ticket.answered"]


async def test_a_tool_call_answer_is_a_message_and_an_event_with_its_data(hub: Hub) -> None:
    call = asyncio.create_task(sdk(hub).chat.completions.create(
        model="human", tools=[WEATHER], messages=[{"role": "user", "content": "Wear?"}]))
    ticket = await next_ticket(hub)
    decided = {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}
    assert (await respond(hub, ticket["id"], "answer", {"data": decided})).status_code == 200
    completion = await asyncio.wait_for(call, 10)
    assert completion.choices[0].finish_reason == "tool_calls"
    messages = await get(hub, f"/api/v1/tickets/{ticket['id']}/messages")
    [record] = [m for m in messages if m["kind"] == "answer"]
    assert (record["decision"], record["data"], record["author"]) == (
        "answered", decided, "alice")
    [event] = await _answered_events(hub, ticket["id"])
    assert event["data"] == decided and event["message_id"] == record["id"]


async def _ask_answered(hub: Hub, question: str, answer: dict[str, Any],
                        **extra: Any) -> tuple[dict[str, Any], Any]:
    messages = [{"role": "user", "content": question}]
    call = asyncio.create_task(sdk(hub).chat.completions.create(
        model="human", messages=messages, **extra))
    ticket = await next_ticket(hub)
    assert (await respond(hub, ticket["id"], "answer", answer)).status_code == 200
    return ticket, await asyncio.wait_for(call, 10)


async def test_the_same_question_again_is_a_new_question_by_default(hub: Hub) -> None:
    first, _ = await _ask_answered(hub, "Which port?", {"text": "8080"})
    again = asyncio.create_task(sdk(hub).chat.completions.create(
        model="human", messages=[{"role": "user", "content": "Which port?"}]))
    second = await next_ticket(hub, after=first["id"])  # a person is asked again
    assert second["title"] == "Which port?"
    assert not again.done()  # the earlier answer was not replayed
    assert (await respond(hub, second["id"], "answer", {"text": "9090"})).status_code == 200
    completion = await asyncio.wait_for(again, 10)
    assert completion.choices[0].message.content == "9090"
    assert completion.model_extra["tickethub"]["ticket_id"] == second["id"]
    assert (await get(hub, f"/api/v1/tickets/{first['id']}"))["status"] == "answered"


@pytest.mark.hub(openai_replay_answers=True)
async def test_the_operator_may_let_a_plain_question_replay_its_answer(hub: Hub) -> None:
    first, _ = await _ask_answered(hub, "Which port?", {"text": "8080"})
    again = await asyncio.wait_for(sdk(hub).chat.completions.create(
        model="human", messages=[{"role": "user", "content": "Which port?"}]), 5)
    assert again.choices[0].message.content == "8080"
    assert again.model_extra["tickethub"]["ticket_id"] == first["id"]


@pytest.mark.hub(openai_replay_answers=True)
async def test_a_tool_call_answer_is_never_replayed(hub: Hub) -> None:
    decided = {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}
    first, _ = await _ask_answered(hub, "Wear?", {"data": decided}, tools=[WEATHER])
    again = asyncio.create_task(sdk(hub).chat.completions.create(
        model="human", tools=[WEATHER], messages=[{"role": "user", "content": "Wear?"}]))
    second = await next_ticket(hub, after=first["id"])
    assert not again.done()
    other = {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome"}}]}
    assert (await respond(hub, second["id"], "answer", {"data": other})).status_code == 200
    completion = await asyncio.wait_for(again, 10)
    [tool_call] = completion.choices[0].message.tool_calls
    assert json.loads(tool_call.function.arguments) == {"city": "Rome"}


@pytest.mark.hub(upstream_approval_tools=["delete_*"], openai_replay_answers=True)
async def test_an_approval_is_never_replayed(hub: Hub, fake: FakeUpstream) -> None:
    fake.replies.append(Reply(tool_calls=[("delete_file", {"path": "/tmp/x"})]))
    call = asyncio.create_task(sdk(hub).chat.completions.create(
        model="gpt-test", messages=USER, tools=[DELETE]))
    first = await next_ticket(hub, kind="approval")
    assert (await respond(hub, first["id"], "approve", {})).status_code == 200
    await asyncio.wait_for(call, 10)
    fake.replies.append(Reply(tool_calls=[("delete_file", {"path": "/tmp/x"})]))
    again = asyncio.create_task(sdk(hub).chat.completions.create(
        model="gpt-test", messages=USER, tools=[DELETE]))
    second = await next_ticket(hub, kind="approval", after=first["id"])
    assert not again.done()
    assert (await respond(hub, second["id"], "deny", {"reason": "not twice"})).status_code == 200
    refused = await asyncio.wait_for(again, 10)
    assert refused.choices[0].message.tool_calls is None


@pytest.mark.hub(upstream_approval_tools=["delete_*"])
async def test_an_invalid_gated_call_opens_a_flagged_approval_not_a_422(
        hub: Hub, fake: FakeUpstream) -> None:
    fake.replies.append(Reply(tool_calls=[("delete_file", {"path": "/etc/passwd"})]))
    call = asyncio.create_task(sdk(hub).chat.completions.create(
        model="gpt-test", messages=USER, tools=[DELETE]))
    ticket = await next_ticket(hub, kind="approval")
    assert "invalid-tool-call" in ticket["labels"] and "tool-approval" in ticket["labels"]
    assert "does not match the tool's schema" in ticket["body"]
    assert "tool_calls.0.arguments.path" in ticket["body"]
    assert ticket["proposal"]["tool_calls"][0]["arguments"] == {"path": "/etc/passwd"}
    assert not call.done()  # the agent waits for the person, no error
    unedited = await respond(hub, ticket["id"], "approve", {})
    assert unedited.status_code == 422 and unedited.json()["field"] == "edited"
    assert "edit" in unedited.json()["detail"]
    assert (await get(hub, f"/api/v1/tickets/{ticket['id']}"))["status"] == "open"
    fixed = {"edited": {"tool_calls": [{"id": "call_0", "name": "delete_file",
                                        "arguments": {"path": "/tmp/passwd"}}]}}
    assert (await respond(hub, ticket["id"], "approve", fixed)).status_code == 200
    completion = await asyncio.wait_for(call, 10)
    arguments = completion.choices[0].message.tool_calls[0].function.arguments
    assert json.loads(arguments) == {"path": "/tmp/passwd"}


@pytest.mark.hub(upstream_approval_tools=["delete_*"])
async def test_an_invalid_gated_call_can_be_denied(hub: Hub, fake: FakeUpstream) -> None:
    fake.replies.append(Reply(tool_calls=[("delete_file", {"path": 7, "force": True})]))
    call = asyncio.create_task(sdk(hub).chat.completions.create(
        model="gpt-test", messages=USER, tools=[DELETE]))
    ticket = await next_ticket(hub, kind="approval")
    assert "invalid-tool-call" in ticket["labels"]
    assert (await respond(hub, ticket["id"], "deny", {"reason": "bad call"})).status_code == 200
    completion = await asyncio.wait_for(call, 10)
    assert completion.choices[0].finish_reason == "stop"
    assert "bad call" in (completion.choices[0].message.content or "")
