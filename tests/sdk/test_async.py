"""AsyncHub against the real hub process: the same calls, flows and errors as Hub."""

from __future__ import annotations

import asyncio

import pytest

from tickethub.sdk import AsyncHub, ConflictError, HubUnavailable, NotFoundError, Ticket
from tickethub.sdk.testing import free_port


@pytest.fixture
async def agent_async(hub_process, agent_token):
    async with AsyncHub(hub_process.url, agent_token) as hub:
        yield hub


@pytest.fixture
async def responder_async(hub_process, responder_token):
    async with AsyncHub(hub_process.url, responder_token, via="sdk-async") as hub:
        yield hub


async def test_ask_wait_answer(agent_async: AsyncHub, responder_async: AsyncHub) -> None:
    t = await agent_async.ask("async question?", labels=["async"])
    waiting = asyncio.create_task(t.wait(timeout=30))
    await asyncio.sleep(0.3)
    assert not waiting.done()
    await responder_async.answer(t.id, "sure", data=[1, 2])
    result = await asyncio.wait_for(waiting, 10)
    assert isinstance(result, Ticket)
    assert (result.outcome, result.answer.text, result.answer.data, result.answer.via) == (
        "answered", "sure", [1, 2], "sdk-async")


async def test_many_waiters_wake_together(agent_async: AsyncHub,
                                          responder_async: AsyncHub) -> None:
    tickets = [await agent_async.ask(f"w{i}", kind="approval") for i in range(20)]
    waits = [asyncio.create_task(agent_async.wait(t.id, timeout=30)) for t in tickets]
    await asyncio.sleep(0.3)
    for i, t in enumerate(tickets):
        if i % 2:
            await responder_async.approve(t.id)
        else:
            await responder_async.deny(t.id, reason="no")
    results = await asyncio.wait_for(asyncio.gather(*waits), 15)
    assert [r.approved for r in results] == [bool(i % 2) for i in range(20)]


async def test_list_events_tree_and_errors(agent_async: AsyncHub, unique: str) -> None:
    root = await agent_async.ask("root", kind="task", labels=[unique])
    child = await agent_async.ask("child", parent_id=root.id, labels=[unique])
    assert [t.id async for t in agent_async.list(label=unique, limit=1)] == [child.id, root.id]
    tree = await agent_async.tree(root.id)
    assert tree.children[0].ticket.id == child.id
    types = [e.type async for e in agent_async.events(since=0, subtree=root.id)]
    assert types == ["ticket.created", "ticket.created"]
    with pytest.raises(NotFoundError):
        await agent_async.get(10**9)
    await agent_async.transition(child.id, "done")
    with pytest.raises(ConflictError) as caught:
        await agent_async.transition(child.id, "in_progress")
    assert caught.value.problem["current"] == "done"


async def test_stream_events(agent_async: AsyncHub, responder_async: AsyncHub) -> None:
    t = await agent_async.ask("streamed")
    stream = agent_async.stream_events(subtree=t.id)

    async def first_two() -> list[str]:
        got = []
        async for event in stream:
            got.append(event.type)
            if len(got) == 2:
                break
        return got

    reading = asyncio.create_task(first_two())
    await asyncio.sleep(0.5)
    await responder_async.post(t.id, "hi")
    await responder_async.answer(t.id, "bye")
    assert await asyncio.wait_for(reading, 10) == ["message.posted", "ticket.answered"]
    await stream.aclose()


async def test_ask_and_wait_with_timeout(agent_async: AsyncHub) -> None:
    result = await agent_async.ask_and_wait("nobody will answer", timeout=0.3)
    assert result.waiting


async def test_unreachable() -> None:
    async with AsyncHub(f"http://127.0.0.1:{free_port()}", "t") as nowhere:
        with pytest.raises(HubUnavailable):
            await nowhere.ask("x")
