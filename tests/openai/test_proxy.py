"""The proxy to an upstream speaking OpenAI's wire format: pass-through (streaming too),
the approval gate on named tools (approve, edit, reject, time out), and upstream
failures as 502/504 recorded on a ticket."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from helpers import get, next_ticket, respond
from live import UPSTREAM_KEY, FakeUpstream, Hub, Reply

import openai

USER = [{"role": "user", "content": "clean up the temp folder"}]


def tool(name: str, **properties: Any) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "parameters": {"type": "object", "properties": properties,
                                     "required": list(properties),
                                     "additionalProperties": False}}}


DELETE = tool("delete_file", path={"type": "string", "pattern": "^/tmp/"})
CLOCK = tool("get_time", zone={"type": "string"})


def sdk(hub: Hub, **headers: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=hub.url + "/v1", api_key=hub.agent, max_retries=0,
                              default_headers=headers or None)


@pytest.mark.sqlite_only
async def test_plain_requests_pass_through(hub: Hub, fake: FakeUpstream) -> None:
    completion = await sdk(hub).chat.completions.create(
        model="gpt-test", messages=USER, temperature=0.2, user="u-1")
    assert completion.choices[0].message.content == "echo: clean up the temp folder"
    assert completion.usage is not None and completion.usage.total_tokens == 12
    assert completion.id == "chatcmpl-up" and completion.model == "gpt-test"
    [sent] = fake.requests
    assert sent["temperature"] == 0.2 and sent["user"] == "u-1" and sent["messages"] == USER


@pytest.mark.sqlite_only
async def test_streams_pass_through(hub: Hub, fake: FakeUpstream) -> None:
    stream = await sdk(hub).chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "one two three"}],
        stream=True)
    chunks = [c async for c in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "echo: one two three "
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert fake.requests[0]["stream"] is True


async def test_ungated_tool_calls_pass_straight_through(hub: Hub, fake: FakeUpstream) -> None:
    fake.replies.append(Reply(tool_calls=[("get_time", {"zone": "UTC"})]))
    completion = await sdk(hub).chat.completions.create(
        model="gpt-test", messages=USER, tools=[CLOCK, DELETE])
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.choices[0].message.tool_calls[0].function.name == "get_time"
    tickets = await get(hub, "/api/v1/tickets")
    assert tickets["items"] == []  # no approval was needed


@pytest.mark.hub(upstream_approval_tools=["delete_*"])
async def test_a_gated_call_waits_for_approval(hub: Hub, fake: FakeUpstream) -> None:
    fake.replies.append(Reply(tool_calls=[("delete_file", {"path": "/tmp/x"})]))
    call = asyncio.create_task(sdk(hub).chat.completions.create(
        model="gpt-test", messages=USER, tools=[DELETE, CLOCK]))
    ticket = await next_ticket(hub, kind="approval")
    assert ticket["title"] == "Approve tool call: delete_file"
    assert "/tmp/x" in ticket["body"] and "clean up the temp folder" in ticket["body"]
    assert ticket["proposal"]["tool_calls"][0]["arguments"] == {"path": "/tmp/x"}
    assert not call.done()
    assert "stream" not in fake.requests[0]
    assert (await respond(hub, ticket["id"], "approve", {})).status_code == 200
    completion = await asyncio.wait_for(call, 10)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert json.loads(choice.message.tool_calls[0].function.arguments) == {"path": "/tmp/x"}
    assert choice.message.tool_calls[0].id == "call_0"


@pytest.mark.hub(upstream_approval_tools=["delete_file"])
async def test_an_edit_is_checked_against_the_tools_schema(hub: Hub, fake: FakeUpstream
                                                           ) -> None:
    fake.replies.append(Reply(tool_calls=[("delete_file", {"path": "/tmp/x"})]))
    call = asyncio.create_task(sdk(hub).chat.completions.create(
        model="gpt-test", messages=USER, tools=[DELETE]))
    ticket = await next_ticket(hub, kind="approval")

    def edited(path: Any) -> dict[str, Any]:
        return {"edited": {"tool_calls": [{"id": "call_0", "name": "delete_file",
                                           "arguments": {"path": path}}]}}

    bad = await respond(hub, ticket["id"], "approve", edited("/etc/passwd"))
    assert bad.status_code == 422
    assert bad.json()["field"] == "edited.tool_calls.0.arguments.path"
    renamed = await respond(hub, ticket["id"], "approve", {"edited": {"tool_calls": [
        {"id": "call_0", "name": "format_disk", "arguments": {"path": "/tmp/y"}}]}})
    assert renamed.status_code == 422
    assert not call.done()
    assert (await respond(hub, ticket["id"], "approve", edited("/tmp/y"))).status_code == 200
    completion = await asyncio.wait_for(call, 10)
    arguments = completion.choices[0].message.tool_calls[0].function.arguments
    assert json.loads(arguments) == {"path": "/tmp/y"}


@pytest.mark.hub(upstream_approval_tools=["delete_*"])
async def test_a_rejection_is_a_clear_refusal(hub: Hub, fake: FakeUpstream) -> None:
    fake.replies.append(Reply(content="Deleting.", tool_calls=[("delete_file",
                                                                 {"path": "/tmp/x"})]))
    call = asyncio.create_task(sdk(hub).chat.completions.create(
        model="gpt-test", messages=USER, tools=[DELETE]))
    ticket = await next_ticket(hub, kind="approval")
    await respond(hub, ticket["id"], "deny", {"reason": "keep /tmp/x, it holds the logs"})
    completion = await asyncio.wait_for(call, 10)
    choice = completion.choices[0]
    assert choice.finish_reason == "stop" and not choice.message.tool_calls
    assert choice.message.content == ("A person refused the tool call (delete_file): "
                                      "keep /tmp/x, it holds the logs")
    assert completion.model_extra["tickethub"]["outcome"] == "denied"


@pytest.mark.hub(upstream_approval_tools=["delete_*"], upstream_on_reject="error")
async def test_a_rejection_can_be_an_error_by_policy(hub: Hub, fake: FakeUpstream) -> None:
    fake.replies.append(Reply(tool_calls=[("delete_file", {"path": "/tmp/x"})]))
    call = asyncio.create_task(sdk(hub).chat.completions.create(
        model="gpt-test", messages=USER, tools=[DELETE]))
    ticket = await next_ticket(hub, kind="approval")
    await respond(hub, ticket["id"], "deny", {"reason": "no"})
    with pytest.raises(openai.PermissionDeniedError) as caught:
        await asyncio.wait_for(call, 10)
    assert caught.value.response.json()["error"]["code"] == "tool_call_rejected"


@pytest.mark.hub(upstream_approval_tools=["delete_*"])
async def test_a_gated_stream_keeps_alive_then_streams_the_approved_call(
        hub: Hub, fake: FakeUpstream) -> None:
    fake.replies.append(Reply(tool_calls=[("delete_file", {"path": "/tmp/x"})]))

    async def collect() -> tuple[str, str, str | None]:
        stream = await sdk(hub).chat.completions.create(
            model="gpt-test", messages=USER, tools=[DELETE], stream=True)
        name, arguments, finish = "", "", None
        async for chunk in stream:
            for choice in chunk.choices:
                finish = choice.finish_reason or finish
                for tc in choice.delta.tool_calls or []:
                    name += tc.function.name or ""
                    arguments += tc.function.arguments or ""
        return name, arguments, finish

    call = asyncio.create_task(collect())
    ticket = await next_ticket(hub, kind="approval")
    await asyncio.sleep(0.2)  # a few keep-alives go by
    await respond(hub, ticket["id"], "approve", {})
    name, arguments, finish = await asyncio.wait_for(call, 10)
    assert (name, json.loads(arguments), finish) == ("delete_file", {"path": "/tmp/x"},
                                                     "tool_calls")


@pytest.mark.hub(upstream_approval_tools=["delete_*"])
async def test_a_gated_request_without_gated_calls_is_not_held(
        hub: Hub, fake: FakeUpstream) -> None:
    fake.replies.append(Reply(content="Nothing to delete."))
    stream = await sdk(hub).chat.completions.create(
        model="gpt-test", messages=USER, tools=[DELETE], stream=True)
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "Nothing to delete."
    assert (await get(hub, "/api/v1/tickets"))["items"] == []


@pytest.mark.hub(upstream_approval_tools=["delete_*"])
async def test_no_decision_in_time_fails_closed(hub: Hub, fake: FakeUpstream) -> None:
    fake.replies.append(Reply(tool_calls=[("delete_file", {"path": "/tmp/x"})]))
    completion = await asyncio.wait_for(sdk(hub, **{"X-Tickethub-Timeout": "0.3"})
                                        .chat.completions.create(
        model="gpt-test", messages=USER, tools=[DELETE]), 10)
    assert not completion.choices[0].message.tool_calls
    assert "no person decided within 0.3 s" in completion.choices[0].message.content
    ticket = (await get(hub, "/api/v1/tickets?kind=approval"))["items"][0]
    assert ticket["status"] == "cancelled"


@pytest.mark.hub(upstream_base_url="http://127.0.0.1:9/v1")
async def test_an_unreachable_upstream_is_502_and_recorded(hub: Hub) -> None:
    with pytest.raises(openai.APIStatusError) as caught:
        await sdk(hub).chat.completions.create(model="gpt-test", messages=USER)
    assert caught.value.status_code == 502
    error = caught.value.response.json()["error"]
    assert error["code"] == "upstream_unavailable" and error["type"] == "upstream_error"
    ticket_id = int(caught.value.response.headers["x-tickethub-ticket"])
    ticket = await get(hub, f"/api/v1/tickets/{ticket_id}")
    assert ticket["kind"] == "info" and "unreachable" in ticket["body"]
    # the same conversation failing again is noted on the same ticket
    with pytest.raises(openai.APIStatusError) as again:
        await sdk(hub).chat.completions.create(model="gpt-test", messages=USER, stream=True)
    assert again.value.status_code == 502
    assert int(again.value.response.headers["x-tickethub-ticket"]) == ticket_id
    messages = await get(hub, f"/api/v1/tickets/{ticket_id}/messages")
    assert len(messages) == 1 and "unreachable" in messages[0]["body"]


@pytest.mark.hub(upstream_timeout_seconds=0.3)
async def test_a_slow_upstream_is_504_and_recorded(hub: Hub, fake: FakeUpstream) -> None:
    fake.replies.append(Reply(content="late", delay=2))
    with pytest.raises(openai.APIStatusError) as caught:
        await sdk(hub).chat.completions.create(model="gpt-test", messages=USER)
    assert caught.value.status_code == 504
    assert caught.value.response.json()["error"]["code"] == "upstream_timeout"
    ticket_id = int(caught.value.response.headers["x-tickethub-ticket"])
    assert "did not answer in time" in (await get(hub, f"/api/v1/tickets/{ticket_id}"))["body"]


@pytest.mark.sqlite_only
async def test_an_upstream_server_error_is_502(hub: Hub, fake: FakeUpstream) -> None:
    fake.replies.append(Reply(status=500))
    with pytest.raises(openai.APIStatusError) as caught:
        await sdk(hub).chat.completions.create(model="gpt-test", messages=USER)
    assert caught.value.status_code == 502
    assert "upstream says 500" in caught.value.response.json()["error"]["message"]


@pytest.mark.hub(upstream_api_key="wrong-key")
async def test_an_upstream_refusing_the_hubs_key_is_502_not_the_callers_401(hub: Hub) -> None:
    assert UPSTREAM_KEY != "wrong-key"
    for stream in (False, True):
        with pytest.raises(openai.APIStatusError) as caught:
            await sdk(hub).chat.completions.create(model="gpt-test", messages=USER,
                                                   stream=stream)
        assert caught.value.status_code == 502
        error = caught.value.response.json()["error"]
        assert error["code"] == "upstream_auth_failed"
        assert "Incorrect API key" in error["message"]
