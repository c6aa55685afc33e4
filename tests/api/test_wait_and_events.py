"""Waiting agents wake at once; the event log and its SSE stream resume without gaps."""

from __future__ import annotations

import asyncio
import json
import time

from tests.api.test_tickets import ask
from tests.conftest import make_token


async def test_wait_returns_as_soon_as_the_ticket_is_answered(client, agent, responder):
    ticket = await ask(client, agent)
    waiter = asyncio.create_task(
        client.get(f"/api/v1/tickets/{ticket['id']}/wait?timeout=20", headers=agent))
    await asyncio.sleep(0.3)
    assert not waiter.done()
    started = time.monotonic()
    await client.post(f"/api/v1/tickets/{ticket['id']}/answer", json={"text": "go"},
                      headers=responder)
    response = await asyncio.wait_for(waiter, 10)  # woken, not timed out (20 s)
    assert time.monotonic() - started < 10
    assert response.status_code == 200
    assert response.headers["X-Tickethub-Timed-Out"] == "false"
    assert response.json()["answer"]["text"] == "go"


async def test_wait_keeps_waiting_through_messages_and_times_out_with_current_state(
        client, agent, responder):
    ticket = await ask(client, agent)
    waiter = asyncio.create_task(
        client.get(f"/api/v1/tickets/{ticket['id']}/wait?timeout=1", headers=agent))
    await asyncio.sleep(0.2)
    await client.post(f"/api/v1/tickets/{ticket['id']}/messages", json={"body": "looking"},
                      headers=responder)
    await client.post(f"/api/v1/tickets/{ticket['id']}/transition", json={"to": "in_progress"},
                      headers=responder)
    response = await waiter
    assert response.headers["X-Tickethub-Timed-Out"] == "true"
    assert response.json()["status"] == "in_progress"


async def test_wait_on_a_resolved_ticket_returns_at_once(client, agent, responder):
    ticket = await ask(client, agent)
    await client.post(f"/api/v1/tickets/{ticket['id']}/answer", json={"text": "done"},
                      headers=responder)
    started = time.monotonic()
    response = await client.get(f"/api/v1/tickets/{ticket['id']}/wait?timeout=30",
                                headers=agent)
    assert time.monotonic() - started < 15  # at once, not after the 30 s timeout
    assert response.json()["status"] == "answered"


async def test_no_wakeup_is_lost_between_the_check_and_the_sleep(client, runtime, agent,
                                                                   responder):
    """Answer at many different moments relative to the waiter's read; every waiter must
    be woken by its answer, not by its timeout.

    The waiters may wait 60 s; all of them must be back within 30 s. A lost wakeup shows
    as a 60 s wait, while a slow machine (answers take a second or two when busy) does
    not fail the test."""
    tickets = [await ask(client, agent, title=f"race {i}") for i in range(20)]
    started = time.monotonic()

    async def race(i, ticket):
        waiter = asyncio.create_task(
            client.get(f"/api/v1/tickets/{ticket['id']}/wait?timeout=60", headers=agent))
        await asyncio.sleep(0.001 * i)
        answered = await client.post(f"/api/v1/tickets/{ticket['id']}/answer",
                                     json={"text": str(i)}, headers=responder)
        answered_at = time.monotonic() - started
        assert answered.status_code == 200, answered.text
        try:
            return await asyncio.wait_for(waiter, 30 - answered_at)
        except TimeoutError:
            raise AssertionError(f"waiter {i} was not woken (answered at {answered_at:.2f}s)"
                                 ) from None

    results = await asyncio.gather(*(race(i, t) for i, t in enumerate(tickets)))
    assert all(r.json()["status"] == "answered" for r in results)
    assert all(r.headers["X-Tickethub-Timed-Out"] == "false" for r in results)
    assert runtime.bus.waiter_count == 0


async def test_events_since_pages_and_filters(client, agent, responder):
    root = await ask(client, agent, title="root", kind="task")
    child = await ask(client, agent, title="child", parent_id=root["id"])
    other = await ask(client, agent, title="other")
    await client.post(f"/api/v1/tickets/{child['id']}/answer", json={"text": "x"},
                      headers=responder)
    everything = (await client.get("/api/v1/events?since=0", headers=agent)).json()
    seqs = [e["seq"] for e in everything["items"]]
    assert seqs == sorted(seqs) and len(seqs) == 4
    assert everything["last_seq"] == seqs[-1]
    after = (await client.get(f"/api/v1/events?since={seqs[1]}", headers=agent)).json()
    assert [e["seq"] for e in after["items"]] == seqs[2:]
    subtree = (await client.get(f"/api/v1/events?subtree={root['id']}", headers=agent)).json()
    assert {e["ticket_id"] for e in subtree["items"]} == {root["id"], child["id"]}
    one = (await client.get(f"/api/v1/events?ticket_id={other['id']}", headers=agent)).json()
    assert [e["type"] for e in one["items"]] == ["ticket.created"]
    paged = (await client.get("/api/v1/events?since=0&limit=2", headers=agent)).json()
    assert [e["seq"] for e in paged["items"]] == seqs[:2]


async def test_a_cursor_ahead_of_the_log_is_refused(live_client):
    client = live_client
    agent = await make_token(client, "agent", "agent-1")
    await ask(client, agent)
    response = await client.get("/api/v1/events?since=999", headers=agent)
    assert response.status_code == 409
    assert response.json()["code"] == "cursor_ahead" and response.json()["field"] == "since"
    stream = await client.get("/api/v1/events/stream", headers={**agent, "Last-Event-ID": "999"})
    assert stream.status_code == 409 and stream.json()["field"] == "Last-Event-ID"
    garbage = await client.get("/api/v1/events/stream", headers={**agent, "Last-Event-ID": "x"})
    assert garbage.status_code == 422


async def _read_sse(response, count):
    events, current = [], {}
    async for line in response.aiter_lines():
        if line.startswith("id: "):
            current["id"] = int(line[4:])
        elif line.startswith("event: "):
            current["event"] = line[7:]
        elif line.startswith("data: "):
            current["data"] = json.loads(line[6:])
        elif line == "" and "id" in current:
            events.append(current)
            current = {}
            if len(events) == count:
                return events
    return events


async def test_sse_streams_live_events_and_resumes_from_last_event_id(live_client):
    client = live_client
    agent = await make_token(client, "agent", "agent-1")
    responder = await make_token(client, "responder", "alice")
    first = await ask(client, agent, title="first")
    async with client.stream("GET", "/api/v1/events/stream?since=0", headers=agent) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")

        async def later():
            await asyncio.sleep(0.2)
            await client.post(f"/api/v1/tickets/{first['id']}/answer", json={"text": "y"},
                              headers=responder)

        task = asyncio.create_task(later())
        events = await asyncio.wait_for(_read_sse(response, 2), 10)
        await task
    assert [e["event"] for e in events] == ["ticket.created", "ticket.answered"]
    assert events[1]["data"]["ticket_id"] == first["id"]
    await ask(client, agent, title="missed while disconnected")
    resume = {**agent, "Last-Event-ID": str(events[-1]["id"])}
    async with client.stream("GET", "/api/v1/events/stream", headers=resume) as response:
        missed = await asyncio.wait_for(_read_sse(response, 1), 10)
    assert missed[0]["id"] == events[-1]["id"] + 1
    assert missed[0]["event"] == "ticket.created"


async def test_sse_can_follow_one_ticket(live_client):
    client = live_client
    agent = await make_token(client, "agent", "agent-1")
    responder = await make_token(client, "responder", "alice")
    watched = await ask(client, agent, title="watched")
    other = await ask(client, agent, title="other")
    url = f"/api/v1/events/stream?since=0&ticket_id={watched['id']}"
    async with client.stream("GET", url, headers=agent) as response:
        await client.post(f"/api/v1/tickets/{other['id']}/answer", json={"text": "a"},
                          headers=responder)
        await client.post(f"/api/v1/tickets/{watched['id']}/answer", json={"text": "b"},
                          headers=responder)
        events = await asyncio.wait_for(_read_sse(response, 2), 10)
    assert {e["data"]["ticket_id"] for e in events} == {watched["id"]}
