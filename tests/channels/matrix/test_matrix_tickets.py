"""Tickets in chat on the real Synapse: a ticket routed to a room is posted there, a
responder's reply in its thread answers it (and wakes a waiting agent), someone else's
reply is kept but not obeyed, and the agent's follow-ups appear in the same thread."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.channels.matrix.kit import BOT_PASSWORD, HUMAN, SECOND
from tests.channels.matrix.people import BOT, HOMESERVER, Person, wait_top_level
from tests.conftest import ADMIN_TOKEN
from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.server.runtime import HubRuntime
from tickethub.services.waiting import wait_resolved
from tickethub.settings import Settings

AGENT = Actor(name="deploy-agent", role=Role.AGENT)


@pytest.fixture
async def hub(tmp_path: Path, people: tuple[Person, Person, str]
              ) -> AsyncIterator[HubRuntime]:
    room = people[2]
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN,
                        matrix_homeserver=HOMESERVER, matrix_user=BOT,
                        matrix_password=BOT_PASSWORD, matrix_rooms=[room],
                        chat_responders=[HUMAN], delivery_poll_seconds=0.2,
                        chat_timeout_check_seconds=0.5)
    runtime = HubRuntime(settings)
    try:
        async with runtime.running():
            yield runtime
    finally:
        runtime.close()


async def test_a_ticket_is_posted_and_answered_from_its_thread(
        hub: HubRuntime, people: tuple[Person, Person, str]) -> None:
    alice, bob, room = people
    # the bot is up (and its delivery worker has started from the log's end)
    hello = await alice.send(room, "@bot help")
    await alice.wait_bot(room, hello, "I can start: foodselection, orders")
    ticket, _ = await asyncio.to_thread(hub.tickets.ask, AGENT, TicketDraft(
        kind=Kind.QUESTION, title="Which region for the deploy?",
        refs={"matrix_room": room}))
    post = await wait_top_level(alice, room, f"Ticket #{ticket.id} (question)")
    root = post["event_id"]
    await asyncio.to_thread(hub.tickets.post_message, AGENT, ticket.id,
                            "It must be in the EU.", "api")
    await alice.wait_bot(room, root, "deploy-agent: It must be in the EU.")
    waiter = asyncio.create_task(wait_resolved(hub.tickets.get, hub.bus, ticket.id, 60))
    await bob.send(room, "us-east-1", thread=root)  # bob is no responder
    await alice.send(room, "eu-west-1", thread=root)
    await alice.wait_bot(room, root, f"Answered ticket #{ticket.id}.")
    answered = await asyncio.wait_for(waiter, 30)
    assert answered.answer is not None and answered.answer.text == "eu-west-1"
    bobs = [(m.body, m.trusted) for m in hub.tickets.messages(ticket.id)
            if m.author == SECOND]
    assert bobs == [("us-east-1", False)]
