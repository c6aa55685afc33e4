"""Conversations over the real Synapse, beyond the chat transport contract
(``tests/channels/test_chat_transport_contract.py``): a hub down longer than its
backlog window, a limited timeline paged back, a timeout that passes while the hub is
down, and the transport as a hub component."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from tests.channels.matrix.kit import BOT_PASSWORD
from tests.channels.matrix.people import BOT, HOMESERVER, Person
from tests.conftest import ADMIN_TOKEN
from tests.conversations.conftest import Hub
from tests.waiting import eventually
from tickethub.channels.matrix.transport import MatrixTransport, SyncTokens
from tickethub.conversations.engine import ConversationEngine
from tickethub.conversations.examples import foodselection
from tickethub.conversations.pump import run_conversations
from tickethub.domain.status import Status
from tickethub.domain.tickets import TicketQuery
from tickethub.server.runtime import HubRuntime
from tickethub.server.system import SystemClock
from tickethub.settings import Settings


@asynccontextmanager
async def serving(engine: ConversationEngine, room: str, *, tokens: SyncTokens | None = None,
                  backlog_seconds: float = 3600.0, timeline_limit: int = 100,
                  ) -> AsyncIterator[None]:
    """The hub's Matrix bot serving ``room`` (as the component does) until the block
    ends. Only that room: the bot account is shared by every test run."""
    transport = MatrixTransport(HOMESERVER, BOT, password=BOT_PASSWORD, rooms=(room,),
                                sync_timeout_ms=1000, tokens=tokens,
                                backlog_seconds=backlog_seconds,
                                timeline_limit=timeline_limit)
    task = asyncio.create_task(run_conversations(engine, transport, expire_every=0.5))
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await transport.close()


class _Tokens:
    """The sync tokens of one hub's database, per bot account (as ``ChatState`` keeps
    them), but each test keeps its own: the bot account is shared by every test run."""

    def __init__(self) -> None:
        self.saved: dict[str, str] = {}

    def sync_token(self, account: str) -> str | None:
        return self.saved.get(account)

    def save_sync_token(self, account: str, token: str, at: object) -> None:
        self.saved[account] = token


async def _answered_while_down(tmp_path: Path, alice: Person, room: str,
                               meanwhile: Callable[[], Awaitable[None]],
                               **options: Any) -> None:
    """The bot asks its first question and the hub stops; alice answers in the thread,
    ``meanwhile`` runs, and the hub starts again from its stored sync token (``options``
    go to both runs of ``serving``): the answer must be handled."""
    hub = Hub(f"sqlite:///{tmp_path / 'hub.db'}", SystemClock(), foodselection.handlers,
              frozenset())
    tokens = _Tokens()
    try:
        async with serving(hub.engine, room, tokens=tokens, **options):
            # The bot's first sync is done (it stores its token) before alice speaks:
            # else a bot slow to start takes her message for history older than its
            # backlog window (1 s in one of these tests) and rightly ignores it.
            await eventually(lambda: bool(tokens.saved), "the bot's first sync token",
                             seconds=30, every=0.1)
            first = dict(tokens.saved)
            root = await alice.send(room, "@bot foodselection tomorrow")
            await alice.wait_bot(room, root, "Which dish for")
            # A sync's token is stored once its messages are handled, when the bot asks
            # for the next: a moment after its reply, which alice may see first.
            await eventually(lambda: tokens.saved != first,
                             "the token of the sync that brought her message",
                             seconds=30, every=0.1)
        await alice.send(room, "3", thread=root)  # while the hub is down
        await meanwhile()
        async with serving(hub.build(), room, tokens=tokens, **options):
            await alice.wait_bot(room, root, "Any dietary needs?")
    finally:
        hub.close()


async def test_a_restarted_hub_goes_on_from_its_stored_sync_token(
        tmp_path: Path, people: tuple[Person, Person, str]) -> None:
    """The hub is down longer than its backlog window: a fresh bot would skip what was
    said meanwhile as old history; with the stored token it is handled."""
    alice, _, room = people
    await _answered_while_down(tmp_path, alice, room, lambda: asyncio.sleep(2.0),
                               backlog_seconds=1.0)  # down longer than the window


async def test_messages_beyond_a_limited_timeline_are_paged_back_after_a_restart(
        tmp_path: Path, people: tuple[Person, Person, str]) -> None:
    """More was said while the hub was down than one sync returns per room: the sync
    comes back ``limited`` and the answer buried under the chatter is read from the
    room's history, not lost."""
    alice, bob, room = people

    async def chatter() -> None:
        for n in range(6):
            await bob.send(room, f"unrelated chatter {n}")

    await _answered_while_down(tmp_path, alice, room, chatter, timeline_limit=3)


async def test_a_timeout_that_passed_while_down_is_announced_after_the_restart(
        tmp_path: Path, people: tuple[Person, Person, str]) -> None:
    alice, _, room = people

    def quick() -> list[object]:
        return [foodselection.foodselection(timedelta(seconds=2)), foodselection.Orders()]

    hub = Hub(f"sqlite:///{tmp_path / 'hub.db'}", SystemClock(), quick,  # type: ignore[arg-type]
              frozenset())
    try:
        async with serving(hub.engine, room):
            root = await alice.send(room, "@bot foodselection tomorrow")
            await alice.wait_bot(room, root, "Which dish for")
            # stop before the 2 s timeout can fire while running
        await asyncio.sleep(2.5)
        async with serving(hub.build(), room):
            await alice.wait_bot(room, root, "timed out without an answer")
        assert hub.tickets.get(1).status is Status.CANCELLED
    finally:
        hub.close()


async def test_the_hub_serves_a_room_as_a_component(
        tmp_path: Path, people: tuple[Person, Person, str]) -> None:
    alice, _, room = people
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN,
                        matrix_homeserver=HOMESERVER, matrix_user=BOT,
                        matrix_password=BOT_PASSWORD, matrix_rooms=[room],
                        chat_timeout_check_seconds=0.5)
    hub = HubRuntime(settings)
    try:
        async with hub.running():
            root = await alice.send(room, "@bot foodselection tomorrow")
            await alice.wait_bot(room, root, "Which dish for")
            await alice.send(room, "help", thread=root)
            await alice.wait_bot(room, root, "You're in foodselection (step 1 of 3)")
        found = hub.tickets.list(TicketQuery(label="foodselection")).items
        assert [t.refs["chat_thread"] for t in found] == [f"matrix|{room}|{root}"]
    finally:
        hub.close()
