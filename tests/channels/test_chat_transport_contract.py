"""The chat transport contract: what every chat transport (Slack, Mattermost, Telegram:
``channels/chat_hooks``; Matrix: ``channels/matrix/transport.py``) promises, one set of
tests run against each through a kit that drives its platform as people and the
platform do (``tests/channels/chat_kits.py``; Matrix on the real Synapse,
``tests/channels/matrix/kit.py``). The outbound ``Channel`` contract is
``test_channel_contract.py``.

1. A message in a thread reaches its conversation, and the bot answers in that thread.
2. The platform's redelivery of a message is handled once: one stored message, one
   reply.
3. Forged input (no platform secret) is refused: nothing is stored, nothing changes.
4. A message from someone who may not steer the conversation is kept on its ticket,
   untrusted, and not obeyed: said in its thread, or (where the platform has replies
   to one message: Telegram, Matrix) as a reply to the bot's question.
5. A message the transport took survives a restart of the hub before it is handled.
6. The bot's own messages, handed back by the platform, are not taken as input.

Platform details (Slack's ``url_verification``, Telegram topics, Mattermost slash
commands, field names in problems) stay in each transport's own tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.channels.chat_hooks.conftest import stored
from tests.channels.chat_kits import HOOK_KITS, ChatKit
from tests.conftest import _PgDatabases, require_server
from tickethub.conversations.engine import BOT
from tickethub.domain.tickets import Ticket, TicketQuery
from tickethub.server.runtime import HubRuntime

START = "@bot foodselection tomorrow"

# Each webhook kit on SQLite and PostgreSQL; Matrix on SQLite only: its round trips
# through Synapse are slow, and the webhook kits already hold the engine to PostgreSQL.
CASES = [(name, db) for name in sorted(HOOK_KITS) for db in ("sqlite", "postgresql")]
CASES.append(("matrix", "sqlite"))


@pytest.fixture(params=CASES, ids=[f"{n}-{db}" for n, db in CASES])
async def kit(request: pytest.FixtureRequest, tmp_path: Path,
              pg_databases: _PgDatabases | None) -> AsyncIterator[ChatKit]:
    name, database = request.param
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    if database == "postgresql":
        require_server("PostgreSQL", pg_databases is not None)
        assert pg_databases is not None
        url = pg_databases.fresh()
    try:
        if name == "matrix":
            from tests.channels.matrix.kit import MatrixKit, shared_room_with_people

            async with shared_room_with_people() as (alice, bob, room):
                matrix = MatrixKit(tmp_path / "data", url, alice, bob, room)
                yield matrix
                await matrix.close()
        else:
            made = HOOK_KITS[name](tmp_path / "data", url)
            try:
                yield made
            finally:
                await made.close()
    finally:
        if database == "postgresql" and pg_databases is not None:
            pg_databases.drop(url)


def _order(hub: HubRuntime) -> Ticket:
    """The one foodselection conversation's ticket."""
    [found] = hub.tickets.list(TicketQuery(label="foodselection")).items
    return hub.tickets.get(found.id)


async def test_a_message_in_a_thread_reaches_its_conversation_and_is_answered_there(
        kit: ChatKit) -> None:
    async with kit.serving() as hub:
        said = await kit.say("alice", START)
        await kit.reply(said.thread, "Which dish")
        await kit.say("alice", "3", said.thread)
        await kit.reply(said.thread, "Any dietary needs?")  # "3" went to the conversation
        assert [s.thread for s in await kit.sent()] == [said.thread] * 2
        ticket = _order(hub)
        assert ticket.refs["chat_thread"] == f"{kit.name}|{kit.room}|{said.thread}"
        assert ticket.refs["chat_participant"] == kit.people["alice"]


async def test_a_redelivered_message_is_handled_once(kit: ChatKit) -> None:
    async with kit.serving():
        said = await kit.say("alice", START)
        await kit.reply(said.thread, "Which dish")
        await kit.redeliver(said)
        # Handled after the redelivery in the same thread's queue: when its answer is
        # there, so would be any answer to the redelivered message.
        await kit.say("alice", "3", said.thread)
        await kit.reply(said.thread, "Any dietary needs?")
        assert len(await kit.sent()) == 2
        ids = stored(kit.hub, kit.name)
        assert ids.count(said.id) == 1 and len(ids) == 2
        alice = kit.people["alice"]
        said_on_ticket = [m.body for m in kit.hub.tickets.messages(_order(kit.hub).id)
                          if m.author == alice]
        assert len(said_on_ticket) == 2 and said_on_ticket[1] == "3"


async def test_forged_input_is_refused_and_changes_nothing(kit: ChatKit) -> None:
    if kit.cannot_forge:
        pytest.skip(kit.cannot_forge)
    async with kit.serving() as hub:
        assert await kit.forge("alice", START) == 401
        assert stored(hub, kit.name) == []
        # The real alice then: her message is the only one stored and answered.
        said = await kit.say("alice", START)
        await kit.reply(said.thread, "Which dish")
        assert stored(hub, kit.name) == [said.id]
        assert len(await kit.sent()) == 1
        assert _order(hub).refs["chat_thread"].endswith(f"|{said.thread}")


async def test_someone_who_may_not_steer_is_kept_on_the_ticket_not_obeyed(
        kit: ChatKit) -> None:
    async with kit.serving() as hub:
        said = await kit.say("alice", START)
        await kit.reply(said.thread, "Which dish")
        await kit.say("bob", "2", said.thread)  # in alice's conversation's thread
        await kit.say("alice", "3", said.thread)
        await kit.reply(said.thread, "Any dietary needs?")
        await kit.say("alice", "Gluten-free", said.thread)
        await kit.reply(said.thread, "save it?")
        await kit.say("alice", "yes", said.thread)
        await kit.reply(said.thread, "Saved: Falafel bowl (gluten-free)")
        assert len(await kit.sent()) == 4  # nothing answered bob
        ticket = _order(hub)
        assert ticket.answer is not None
        assert ticket.answer.data["dish"] == "Falafel bowl"
        assert ticket.answer.data["person"] == kit.people["alice"]
        bobs = [(m.body, m.trusted) for m in hub.tickets.messages(ticket.id)
                if m.author == kit.people["bob"]]
        assert bobs == [("2", False)]


async def test_a_reply_to_the_bots_question_from_a_bystander_is_kept_not_obeyed(
        kit: ChatKit) -> None:
    if kit.cannot_quote:
        pytest.skip(kit.cannot_quote)
    async with kit.serving() as hub:
        said = await kit.say("alice", START)
        question = await kit.reply(said.thread, "Which dish")
        await kit.answer("bob", "2", question)  # bob may not answer alice's question
        await kit.answer("alice", "3", question)
        await kit.reply(said.thread, "Any dietary needs?")
        bobs = [(m.body, m.trusted) for m in hub.tickets.messages(_order(hub).id)
                if m.author == kit.people["bob"]]
        assert bobs == [("2", False)]
        assert len(await kit.sent()) == 2


async def test_a_message_taken_survives_a_restart_before_it_is_handled(
        kit: ChatKit) -> None:
    async with kit.serving():
        said = await kit.say("alice", START)
        await kit.reply(said.thread, "Which dish")
    async with kit.down():
        await kit.say("alice", "3", said.thread)  # taken; no hub runs the conversations
    async with kit.serving():
        await kit.reply(said.thread, "Any dietary needs?")
        assert len(await kit.sent()) == 2


async def test_the_bots_own_messages_are_not_taken_as_input(kit: ChatKit) -> None:
    async with kit.serving() as hub:
        said = await kit.say("alice", START)
        question = await kit.reply(said.thread, "Which dish")
        await kit.echo(question)
        await kit.say("alice", "3", said.thread)  # handled after the echo
        await kit.reply(said.thread, "Any dietary needs?")
        ids = stored(hub, kit.name)
        assert len(ids) == 2 and question.id not in ids
        authors = {m.author for m in hub.tickets.messages(_order(hub).id)}
        assert authors == {kit.people["alice"], BOT.name}
        assert len(await kit.sent()) == 2
