"""Deadlines through the running hub: expiry wakes waiters; approvals fail closed."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from tests.api.test_tickets import ask


def _soon(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


async def test_an_unanswered_approval_expires_as_denied_and_wakes_the_waiter(client, agent):
    ticket = await ask(client, agent, kind="approval", proposal={"x": 1}, due_at=_soon(0.6))
    response = await asyncio.wait_for(
        client.get(f"/api/v1/tickets/{ticket['id']}/wait?timeout=10", headers=agent), 10)
    body = response.json()
    assert body["status"] == "expired"
    assert body["outcome"] == "denied"
    assert response.headers["X-Tickethub-Timed-Out"] == "false"
    events = (await client.get(f"/api/v1/events?ticket_id={ticket['id']}", headers=agent)).json()
    assert events["items"][-1]["type"] == "ticket.expired"
    assert events["items"][-1]["actor"] == "system"


async def test_a_woken_waiter_gets_the_expired_ticket_byte_for_byte_as_a_read(
        client, agent, runtime, monkeypatch):
    """The waiter applies the expiry (``Moved``) to the state it holds, without reading
    the ticket again: the body is what reading the ticket back gives."""
    ticket = await ask(client, agent, kind="approval", proposal={"x": 1},
                       labels=["a"], refs={"k": "v"}, due_at=_soon(0.8))
    reads = []
    get = runtime.tickets.get
    monkeypatch.setattr(runtime.tickets, "get",
                        lambda *args, **kw: reads.append(args) or get(*args, **kw))
    woken = await asyncio.wait_for(
        client.get(f"/api/v1/tickets/{ticket['id']}/wait?timeout=10", headers=agent), 10)
    assert len(reads) == 1  # parking; the expiry's state came with the wakeup
    read = await client.get(f"/api/v1/tickets/{ticket['id']}", headers=agent)
    assert woken.json()["status"] == "expired" and woken.json()["version"] == 2
    assert woken.content == read.content


async def test_an_answered_ticket_does_not_expire(client, agent, responder):
    ticket = await ask(client, agent, due_at=_soon(0.5))
    await client.post(f"/api/v1/tickets/{ticket['id']}/answer", json={"text": "in time"},
                      headers=responder)
    await asyncio.sleep(1.0)
    after = (await client.get(f"/api/v1/tickets/{ticket['id']}", headers=agent)).json()
    assert after["status"] == "answered"


async def test_a_deferred_ticket_comes_back_when_its_time_comes(client, agent, responder):
    ticket = await ask(client, agent)
    await client.post(f"/api/v1/tickets/{ticket['id']}/transition",
                      json={"to": "deferred", "until": _soon(0.5)}, headers=responder)
    await asyncio.sleep(1.5)
    after = (await client.get(f"/api/v1/tickets/{ticket['id']}", headers=agent)).json()
    assert after["status"] == "open" and after["next_attention_at"] is None
