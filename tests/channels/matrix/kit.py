"""The Matrix kit of the chat transport contract (``tests/channels/chat_kits.py``): a
hub serving one fresh room on the real Synapse, alice and bob writing in it.

Matrix has no hook: the bot reads ``/sync`` with its own login, so what the others fake
is here the real thing. A redelivery is what Matrix does after a hub stopped between
handling a sync's messages and storing its token: the kit restarts the hub from the
token stored before the message. The bot's own messages reach its sync without help.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from tests.channels.chat_kits import ChatKit, Said, Sent
from tests.channels.matrix.people import BOT, HOMESERVER, Person, register, synapse_running
from tests.conftest import ADMIN_TOKEN, require_server
from tests.waiting import eventually
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

    async def _start(self, rewind_to: str | None = None) -> None:
        hub = HubRuntime(self.settings)
        self._hub = hub
        if rewind_to is not None:  # as if the later tokens were never stored
            SqlChatState(hub.store).save_sync_token(ACCOUNT, rewind_to, datetime.now(UTC))
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
        token = None
        if self._stack is not None:
            # The bot's first sync is done before anyone speaks: a message it reads in
            # that sync is read as recent history, not from a stored token.
            token = await eventually(self._token, "the bot's first sync token",
                                     seconds=self.wait_seconds, every=0.05)
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
        await self._start(rewind_to=token)

    async def forge(self, who: str, text: str) -> int:
        raise NotImplementedError(self.cannot_forge)

    async def echo(self, sent: Sent) -> None:
        """Nothing to do: the homeserver hands the bot its own messages in every sync."""

    async def sent(self) -> list[Sent]:
        alice = self._persons["alice"]
        r = await alice.http.get(f"/_matrix/client/v3/rooms/{quote(self.room)}/messages",
                                 params={"dir": "b", "limit": 100})
        r.raise_for_status()
        found = []
        for event in reversed(r.json()["chunk"]):
            content = event.get("content", {})
            if event["sender"] != BOT or event.get("type") != "m.room.message":
                continue
            relates = content.get("m.relates_to") or {}
            thread = relates.get("event_id") if relates.get("rel_type") == "m.thread" else None
            found.append(Sent(thread, content.get("body", ""), event["event_id"]))
        return found
