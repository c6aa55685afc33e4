"""The Matrix kit of the chat transport contract (``tests/channels/chat_kits.py``): a
hub serving a room on the real Synapse, alice and bob writing in it.

Matrix has no hook: the bot reads ``/sync`` with its own login, so what the others fake
is here the real thing. A redelivery is what Matrix does after a hub stopped between
handling a sync's messages and storing its token: the kit restarts the hub from the
token stored before the message. The bot's own messages reach its sync without help.

Every kit of a test run talks in one room (Synapse lets a user create only a few rooms
a minute; each test has its own threads), and starts its hub, on a fresh database,
from where the room is now: it stores a sync token of the moment as the bot's, so the
hub does not read the earlier tests' messages as recent history.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from tests.channels.chat_kits import ChatKit, Said, Sent
from tests.channels.matrix.people import BOT, HOMESERVER, Person, register, synapse_running
from tests.conftest import ADMIN_TOKEN, require_server
from tickethub.channels.matrix.transport import TRANSPORT
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings
from tickethub.store.chat_store import SqlChatState

HUMAN = os.environ.get("MATRIX_HUMAN_USER", "@human:localhost")
HUMAN_PASSWORD = os.environ.get("MATRIX_HUMAN_PASSWORD", "human-password")
BOT_PASSWORD = os.environ.get("MATRIX_BOT_PASSWORD", "bot-password")
SECOND = "@human2:localhost"
ACCOUNT = f"{TRANSPORT}:{BOT}"  # the bot's row in chat_sync_tokens


@asynccontextmanager
async def room_with_people() -> AsyncIterator[tuple[Person, Person, str]]:
    """alice (@human), bob (@human2, registered on demand) and a fresh room with both
    and the bot; skips (fails in CI) without Synapse."""
    require_server("Matrix Synapse", synapse_running())
    await register("human2", "human2-password")
    alice = await Person.login(HUMAN, HUMAN_PASSWORD)
    bob = await Person.login(SECOND, "human2-password")
    try:
        room = await alice.create_room(invite=[BOT, SECOND])
        await bob.join(room)
        yield alice, bob, room
    finally:
        await alice.close()
        await bob.close()


_shared: dict[str, str] = {}  # "room": the room every kit of this run talks in


@asynccontextmanager
async def shared_room_with_people() -> AsyncIterator[tuple[Person, Person, str]]:
    """``room_with_people``, but the room is made once per test run."""
    if "room" not in _shared:
        async with room_with_people() as (alice, bob, room):
            _shared["room"] = room
            yield alice, bob, room
        return
    require_server("Matrix Synapse", synapse_running())
    alice = await Person.login(HUMAN, HUMAN_PASSWORD)
    bob = await Person.login(SECOND, "human2-password")
    try:
        yield alice, bob, _shared["room"]
    finally:
        await alice.close()
        await bob.close()


async def now_token(person: Person) -> str:
    """A sync token of this moment, read as ``person`` (no events: an empty filter).
    Synapse's tokens are positions in its server-wide streams, so it serves as the bot's
    too."""
    empty = json.dumps({"room": {"rooms": []}, "presence": {"types": []},
                        "account_data": {"types": []}})
    r = await person.http.get("/_matrix/client/v3/sync",
                              params={"timeout": 0, "filter": empty})
    r.raise_for_status()
    return str(r.json()["next_batch"])


class MatrixKit(ChatKit):
    name = TRANSPORT
    cannot_forge = ("Matrix has no door to forge: the bot pulls /sync with its own login "
                    "and the homeserver authenticates every sender")
    wait_seconds = 60.0

    def __init__(self, data_dir: Path, database_url: str, alice: Person, bob: Person,
                 room: str) -> None:
        super().__init__()
        self.room = room
        self._persons = {"alice": alice, "bob": bob}
        self.people = {"alice": alice.user, "bob": bob.user}
        self.settings = Settings(data_dir=data_dir, database_url=database_url,
                                 admin_token=ADMIN_TOKEN, matrix_homeserver=HOMESERVER,
                                 matrix_user=BOT, matrix_password=BOT_PASSWORD,
                                 matrix_rooms=[room], chat_timeout_check_seconds=0.5)
        self._stack: AsyncExitStack | None = None
        self._token_before: dict[str, str | None] = {}
        self._start_token: str | None = None  # where this kit's part of the room begins

    async def _start(self, token: str | None = None) -> None:
        """Start a hub; with ``token``, from there (as if no later one was stored)."""
        if self._start_token is None:
            self._start_token = token = await now_token(self._persons["alice"])
        hub = HubRuntime(self.settings)
        self._hub = hub
        if token is not None:
            SqlChatState(hub.store).save_sync_token(ACCOUNT, token, datetime.now(UTC))
        self._stack = AsyncExitStack()
        self._stack.callback(hub.close)
        await self._stack.enter_async_context(hub.running())

    async def _stop(self) -> None:
        assert self._stack is not None
        stack, self._stack = self._stack, None
        await stack.aclose()

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[HubRuntime]:
        await self._start()
        try:
            yield self.hub
        finally:
            await self._stop()

    @asynccontextmanager
    async def down(self) -> AsyncIterator[None]:
        """No hub runs: the homeserver keeps what is said."""
        yield

    def _token(self) -> str | None:
        return SqlChatState(self.hub.store).sync_token(ACCOUNT)

    async def say(self, who: str, text: str, thread: str | None = None) -> Said:
        token = self._token() if self._stack is not None else None
        event = await self._persons[who].send(self.room, text, thread=thread)
        self._token_before[event] = token
        return Said(event, thread or event)

    async def answer(self, who: str, text: str, question: Sent) -> Said:
        assert question.thread is not None
        event = await self._persons[who].send(self.room, text, thread=question.thread,
                                              reply_to=question.id)
        return Said(event, question.thread)

    async def redeliver(self, said: Said) -> None:
        token = self._token_before[said.id]
        assert token is not None, "said while no hub ran: nothing to redeliver from"
        await self._stop()
        await self._start(token)

    async def forge(self, who: str, text: str) -> int:
        raise NotImplementedError(self.cannot_forge)

    async def echo(self, sent: Sent) -> None:
        """Nothing to do: the homeserver hands the bot its own messages in every sync."""

    async def sent(self) -> list[Sent]:
        """The bot's messages in the room since this kit's first hub started."""
        if self._start_token is None:
            return []
        alice = self._persons["alice"]
        r = await alice.http.get(f"/_matrix/client/v3/rooms/{quote(self.room)}/messages",
                                 params={"dir": "f", "from": self._start_token,
                                         "limit": 1000})
        r.raise_for_status()
        found = []
        for event in r.json()["chunk"]:
            content = event.get("content", {})
            if event["sender"] != BOT or event.get("type") != "m.room.message":
                continue
            relates = content.get("m.relates_to") or {}
            thread = relates.get("event_id") if relates.get("rel_type") == "m.thread" else None
            found.append(Sent(thread, content.get("body", ""), event["event_id"]))
        return found
