"""Kits for the chat transport contract (``test_chat_transport_contract.py``): each chat
transport with its platform, driven the way a person and the platform drive it.

A kit says a message in a thread as alice or bob (signed or authenticated as the
platform does it), sends the platform's retry of a message, forges one, hands the
transport one of the bot's own messages as the platform would echo it, and reads what
the bot sent. ``serving()`` runs a hub with the transport; ``down()`` is the time when
no hub runs the conversations (a webhook's message still reaches a process, which
stores it and dies; a Matrix message waits on the homeserver). Both may be entered again
and again: every hub a kit runs uses the same database (a restart).

The webhook kits (Slack, Mattermost, Telegram) post to the hub's hook in process and
read the bot's replies from ``bench.chat_standin.StandIn``; the Matrix kit is in
``tests/channels/matrix/kit.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Any

import httpx
from bench.chat_standin import Call, StandIn

from tests.channels.chat_hooks.conftest import hook_settings
from tests.channels.chat_hooks.payloads import mattermost, slack, telegram
from tests.waiting import eventually
from tickethub.api.app import create_app
from tickethub.server.runtime import HubRuntime


@dataclass(frozen=True)
class Said:
    """A message a person said: its event id as the hub stores it, the root of the
    thread it is in (its own id for a top-level message), and what the platform sent."""

    id: str
    thread: str
    raw: Any = None


@dataclass(frozen=True)
class Sent:
    """A message the bot sent: the thread root it went to (``None``: outside any
    thread), its text, and its id on the platform."""

    thread: str | None
    text: str
    id: str


class ChatKit:
    """One chat transport and its platform (see the module docstring)."""

    name: str  # the transport, as in the thread key ``name|room|root``
    room: str  # where the kit's people talk
    people: dict[str, str]  # alice and bob → the hub actor each one is
    cannot_forge: str | None = None  # why this platform has no input to forge
    cannot_quote: str | None = None  # why this platform has no reply to one message
    wait_seconds = 30.0

    def __init__(self) -> None:
        self._hub: HubRuntime | None = None
        self._seen: set[str] = set()

    @property
    def hub(self) -> HubRuntime:
        """The hub of the current (or the last) ``serving()`` or ``down()``."""
        assert self._hub is not None, "no hub yet: enter serving() or down()"
        return self._hub

    def serving(self) -> AbstractAsyncContextManager[HubRuntime]:
        """A hub running the transport's conversations, for the block."""
        raise NotImplementedError

    def down(self) -> AbstractAsyncContextManager[None]:
        """No hub runs the conversations, for the block."""
        raise NotImplementedError

    async def say(self, who: str, text: str, thread: str | None = None) -> Said:
        """``who`` says ``text`` in ``thread`` (top level: a new thread). ``@bot`` at the
        start is the platform's way of calling the bot."""
        raise NotImplementedError

    async def answer(self, who: str, text: str, question: Sent) -> Said:
        """``who`` replies to the bot's ``question`` (quoting it), in its thread."""
        raise NotImplementedError

    async def redeliver(self, said: Said) -> None:
        """The platform delivers ``said`` again, as it does when it is not sure the hub
        got it."""
        raise NotImplementedError

    async def forge(self, who: str, text: str) -> int:
        """Someone without the platform's secret sends ``text`` as ``who``: the status
        the hook answered."""
        raise NotImplementedError

    async def echo(self, sent: Sent) -> None:
        """The platform hands the bot's own message ``sent`` to the transport."""
        raise NotImplementedError

    async def sent(self) -> list[Sent]:
        """Every message the bot sent, oldest first."""
        raise NotImplementedError

    async def reply(self, thread: str, containing: str) -> Sent:
        """The bot's next message in ``thread`` containing ``containing`` (waited for)."""

        async def new() -> Sent | None:
            for sent in await self.sent():
                if sent.id not in self._seen and sent.thread == thread \
                        and containing in sent.text:
                    return sent
            return None

        found: Sent = await eventually(new, f"the bot saying {containing!r} in {thread}",
                                       seconds=self.wait_seconds, every=0.05)
        self._seen.add(found.id)
        return found

    async def close(self) -> None:
        """Release what the kit holds (its stand-in, its people's sessions)."""


class HookKit(ChatKit):
    """A webhook transport: the platform posts to ``path``; its API is the stand-in."""

    path: str

    def __init__(self, data_dir: Path, database_url: str) -> None:
        super().__init__()
        self.standin = StandIn()
        self.settings = hook_settings(data_dir, database_url, self.standin)
        self._client: httpx.AsyncClient | None = None

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[HubRuntime]:
        async with self._door(run=True):
            yield self.hub

    @asynccontextmanager
    async def down(self) -> AsyncIterator[None]:
        """A process that answers the hook but never runs the conversations (another
        worker, or one that dies right after answering), then dies."""
        async with self._door(run=False):
            yield

    @asynccontextmanager
    async def _door(self, run: bool) -> AsyncIterator[None]:
        hub = HubRuntime(self.settings)
        self._hub = hub
        try:
            async with AsyncExitStack() as stack:
                if run:
                    await stack.enter_async_context(hub.running())
                self._client = await stack.enter_async_context(httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=create_app(hub)),
                    base_url="http://hub"))
                yield
        finally:
            self._client = None
            hub.close()

    async def post(self, **request: Any) -> httpx.Response:
        assert self._client is not None, "no hub: enter serving() or down()"
        return await self._client.post(self.path, **request)

    async def delivered(self, **request: Any) -> None:
        """Post to the hook as the platform does, which wants a 200."""
        response = await self.post(**request)
        assert response.status_code == 200, response.text

    async def sent(self) -> list[Sent]:
        return [self.read(n, call) for n, call in enumerate(list(self.standin.calls), 1)]

    def read(self, n: int, call: Call) -> Sent:
        """The ``n``-th call to the platform's API as the message it sent; fails on a
        call the platform would refuse."""
        raise NotImplementedError

    async def close(self) -> None:
        self.standin.close()


_THREADS_ONLY = "{} has threads but no reply to one message: a thread is the reply"


class SlackKit(HookKit):
    name, path, room = "slack", "/hooks/slack", slack.CHANNEL
    cannot_quote = _THREADS_ONLY.format("Slack")
    people = {"alice": "alice", "bob": f"slack:{slack.BOB}"}
    _users = {"alice": slack.ALICE, "bob": slack.BOB}

    def __init__(self, data_dir: Path, database_url: str) -> None:
        super().__init__(data_dir, database_url)
        self._ts = count(1)

    async def _signed(self, payload: dict[str, Any], secret: str = slack.SECRET,
                      **headers: str) -> httpx.Response:
        body = json.dumps(payload).encode()
        return await self.post(content=body,
                               headers={**slack.signed(body, secret=secret), **headers})

    def _event(self, who: str, text: str, thread: str | None) -> dict[str, Any]:
        text = re.sub(r"^@bot\b", f"<@{slack.BOT_USER}>", text)
        return slack.event(self._users[who], text, f"1700000300.{next(self._ts):06d}",
                           thread_ts=thread)

    async def say(self, who: str, text: str, thread: str | None = None) -> Said:
        payload = self._event(who, text, thread)
        response = await self._signed(payload)
        assert response.status_code == 200 and response.json()["queued"] is True
        ts = payload["event"]["ts"]
        return Said(ts, thread or ts, payload)

    async def redeliver(self, said: Said) -> None:
        response = await self._signed(said.raw, **{"X-Slack-Retry-Num": "1",
                                                   "X-Slack-Retry-Reason": "http_timeout"})
        assert response.status_code == 200

    async def forge(self, who: str, text: str) -> int:
        return (await self._signed(self._event(who, text, None),
                                   secret="not-the-secret")).status_code

    async def echo(self, sent: Sent) -> None:
        # Slack sends the bot's own posts to a message subscription, marked bot_id.
        payload = slack.event(slack.BOT_USER, sent.text, sent.id, thread_ts=sent.thread,
                              bot_id="B0BOT00001", app_id="A0APP00001")
        assert (await self._signed(payload)).status_code == 200

    def read(self, n: int, call: Call) -> Sent:
        assert call.path == "/api/chat.postMessage", call
        assert call.headers["Authorization"] == "Bearer xoxb-test"
        assert call.body["channel"] == self.room, call
        return Sent(call.body.get("thread_ts"), call.body["text"], f"1700000000.{n:06d}")


class MattermostKit(HookKit):
    """Outgoing webhooks (JSON), each post its own event; the thread is ``root_id``."""

    name, path, room = "mattermost", "/hooks/mattermost", mattermost.CHANNEL
    cannot_quote = _THREADS_ONLY.format("Mattermost")
    people = {"alice": "alice", "bob": f"mattermost:{mattermost.USERS['bob']}"}

    def __init__(self, data_dir: Path, database_url: str) -> None:
        super().__init__(data_dir, database_url)
        self._posts = count(1)

    def _post(self, who: str, text: str, thread: str | None) -> dict[str, Any]:
        return mattermost.outgoing(who, text, f"userpost{next(self._posts):018d}",
                                   thread or "")

    async def say(self, who: str, text: str, thread: str | None = None) -> Said:
        payload = self._post(who, text, thread)
        await self.delivered(json=payload)
        return Said(payload["post_id"], thread or payload["post_id"], payload)

    async def redeliver(self, said: Said) -> None:
        await self.delivered(json=said.raw)

    async def forge(self, who: str, text: str) -> int:
        return (await self.post(json={**self._post(who, text, None), "token": "guessed"})
                ).status_code

    async def echo(self, sent: Sent) -> None:
        # An outgoing webhook fires on the bot's posts too (on every post of its
        # channel when it has no trigger words).
        await self.delivered(json=mattermost.outgoing(
            "bot", sent.text, sent.id, sent.thread or "", user_id=StandIn.MATTERMOST_BOT))

    def read(self, n: int, call: Call) -> Sent:
        assert call.path == "/api/v4/posts", call
        assert call.headers["Authorization"] == "Bearer mm-bot-token"
        assert call.body["channel_id"] == self.room, call
        return Sent(call.body["root_id"] or None, call.body["message"],
                    f"botpost{n:020d}")


class TelegramKit(HookKit):
    """A forum supergroup: a new thread is a new topic."""

    name, path, room = "telegram", "/hooks/telegram", str(telegram.CHAT)
    people = {"alice": "alice", "bob": f"telegram:{telegram.USERS['bob']}"}

    def __init__(self, data_dir: Path, database_url: str) -> None:
        super().__init__(data_dir, database_url)
        self._updates, self._messages, self._topics = count(500), count(100), count(70)

    def _update(self, who: str, text: str, thread: str | None, **extra: Any
                ) -> dict[str, Any]:
        text = re.sub(r"^@bot (\w+)", r"/\1@LunchBot", text)
        topic = int(thread) if thread else next(self._topics)
        return telegram.update(next(self._updates), who, text, next(self._messages),
                               topic=topic, **extra)

    async def say(self, who: str, text: str, thread: str | None = None) -> Said:
        payload = self._update(who, text, thread)
        await self.delivered(json=payload, headers=telegram.HEADERS)
        topic = str(payload["message"]["message_thread_id"])
        return Said(f"update:{payload['update_id']}", topic, payload)

    async def answer(self, who: str, text: str, question: Sent) -> Said:
        assert question.thread is not None
        message_id = int(question.id.rpartition(":")[2])
        payload = self._update(who, text, question.thread, reply_to=message_id)
        await self.delivered(json=payload, headers=telegram.HEADERS)
        return Said(f"update:{payload['update_id']}", question.thread, payload)

    async def redeliver(self, said: Said) -> None:
        await self.delivered(json=said.raw, headers=telegram.HEADERS)

    async def forge(self, who: str, text: str) -> int:
        return (await self.post(json=self._update(who, text, None), headers={
            "X-Telegram-Bot-Api-Secret-Token": "guess"})).status_code

    async def echo(self, sent: Sent) -> None:
        # Telegram does not send a bot its own messages; were it to, they are from a bot.
        await self.delivered(json=self._update("bot", sent.text, sent.thread, is_bot=True),
                             headers=telegram.HEADERS)

    def read(self, n: int, call: Call) -> Sent:
        assert call.path == "/bot123:ABC/sendMessage", call
        assert call.body["chat_id"] == telegram.CHAT, call
        topic = call.body.get("message_thread_id")
        return Sent(str(topic) if topic is not None else None, call.body["text"],
                    f"{telegram.CHAT}:{9000 + n}")


HOOK_KITS: dict[str, type[HookKit]] = {
    "slack": SlackKit, "mattermost": MattermostKit, "telegram": TelegramKit}
