"""A waiter parked on one hub, answered through another on the same database."""

from __future__ import annotations

import asyncio
import time

import httpx

from tests.conftest import ADMIN_TOKEN, bearer
from tickethub.api.app import create_app
from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.server.runtime import HubRuntime

AGENT, ALICE = Actor("bot", Role.AGENT), Actor("alice", Role.RESPONDER)


async def answered_across(hub_a: HubRuntime, hub_b: HubRuntime, *, wait_seconds: float
                          = 20, give_up_seconds: float = 10) -> tuple[httpx.Response, float]:
    """Run both hubs; park a long-poll (``wait_seconds``) on A, answer through B: A's
    response, and seconds from the answer to it (``TimeoutError`` after
    ``give_up_seconds``)."""
    async with hub_a.running(), hub_b.running():
        ticket, _ = hub_a.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="q"))
        transport = httpx.ASGITransport(app=create_app(hub_a))
        async with httpx.AsyncClient(transport=transport, base_url="http://a") as client:
            waiter = asyncio.create_task(client.get(
                f"/api/v1/tickets/{ticket.id}/wait?timeout={wait_seconds:g}",
                headers=bearer(ADMIN_TOKEN)))
            await asyncio.sleep(0.3)
            started = time.monotonic()
            await asyncio.to_thread(hub_b.tickets.answer, ALICE, ticket.id, "from B",
                                    None, "api")
            response = await asyncio.wait_for(waiter, give_up_seconds)
            return response, time.monotonic() - started
