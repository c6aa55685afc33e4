"""What the webhook chat transports share: how a hook's message is stored and handed to
the pump (``conversations/pump.run_accepted``), and the mapping of platform users to hub
actors.

A hook stores the message in its thread's queue (``ConversationEngine.accept``, the
``chat_inbox`` table) before it answers the platform (Slack wants an answer within 3 s),
so an acknowledged message survives a crash; a platform retry is dropped by its event
id. The conversations run in the leading process only (``serve --workers N``): a message
stored by another process is announced to it over the bus (``chat_hooks`` topic), and
the leader's pump also scans for stored messages nobody handled (at start, after a crash,
when an announcement was lost).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping

from tickethub.conversations.model import ChatMessage, Reply


class Actors:
    """Platform users as hub actors: ``transport:user id`` (``slack:U024BE7LH``), or the
    hub name ``chat_actors`` maps it to, so one person is one actor on every transport
    (and ``chat_responders`` can name them once)."""

    def __init__(self, mapping: Mapping[str, str]) -> None:
        self._to_hub = dict(mapping)
        self._to_platform: dict[tuple[str, str], str] = {}
        for key, name in mapping.items():
            transport, _, user = key.partition(":")
            self._to_platform[(transport, name)] = user

    def hub_name(self, transport: str, user: str) -> str:
        key = f"{transport}:{user}"
        return self._to_hub.get(key, key)

    def platform_id(self, transport: str, name: str) -> str:
        """The platform user id behind a hub actor name (for a direct message)."""
        if (transport, name) in self._to_platform:
            return self._to_platform[(transport, name)]
        prefix = f"{transport}:"
        return name[len(prefix):] if name.startswith(prefix) else name


class WebhookTransport:
    """A :class:`~tickethub.conversations.pump.AcceptedTransport` fed by an HTTP hook;
    subclasses send replies through their platform's API. ``bind`` it to the engine's
    ``accept`` before the first hook call."""

    name = "webhook"

    def __init__(self, actors: Actors) -> None:
        self.actors = actors
        self._threads: asyncio.Queue[str] = asyncio.Queue()
        self._accept: Callable[[ChatMessage], str | None] | None = None
        self._announce: Callable[[str], None] = lambda message: None
        self._served = False  # this process's pump is taking threads

    def bind(self, accept: Callable[[ChatMessage], str | None],
             announce: Callable[[str], None] | None = None) -> None:
        """Store messages with ``accept`` (``ConversationEngine.accept``); ``announce``
        tells the other processes (the bus's ``broadcast`` on ``chat_hooks``)."""
        self._accept = accept
        if announce is not None:
            self._announce = announce

    async def accept(self, msg: ChatMessage) -> None:
        """Store ``msg`` (called by the hook route, before it answers): then its thread
        goes to this process's pump, or is announced to the one running it. Raises what
        storing raised (the hook answers with that error, and the platform retries)."""
        if self._accept is None:
            raise RuntimeError(f"the {self.name} transport is not bound to an engine")
        thread = await asyncio.to_thread(self._accept, msg)
        if thread is None:  # a retry of a stored message
            return
        if self._served:
            self._threads.put_nowait(thread)
        else:
            self._announce(json.dumps([self.name, thread]))

    def announced(self, message: str) -> None:
        """Another process stored a message (``accept``'s announcement): take its
        thread if this process's pump runs and the message is for this transport."""
        name, thread = json.loads(message)
        if name == self.name and self._served:
            self._threads.put_nowait(thread)

    def wake(self, thread: str) -> None:
        """Have the pump take ``thread`` (its stored messages) next."""
        self._threads.put_nowait(thread)

    async def threads(self) -> AsyncIterator[str]:
        """The threads with newly stored messages, as they come, for as long as the
        pump iterates."""
        self._served = True
        try:
            while True:
                yield await self._threads.get()
        finally:
            self._served = False

    async def connect(self) -> None:
        """Nothing to log in to: the platform calls us."""

    async def send(self, reply: Reply) -> str:
        raise NotImplementedError
