"""What the webhook chat transports share: an inbound queue the hook routes fill and the
pump (``conversations/pump.py``) drains, and the mapping of platform users to hub actors.

A hook answers the platform as soon as the message is queued (Slack wants an answer
within 3 s); the engine handles it in the background and drops a platform retry by its
event id (the ``chat_inbox`` dedup), so a retry that arrives while the first delivery
is still queued, or after a restart, has no second effect.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

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
    """A :class:`~tickethub.conversations.pump.ChatTransport` fed by an HTTP hook;
    subclasses send replies through their platform's API."""

    name = "webhook"

    def __init__(self, actors: Actors) -> None:
        self.actors = actors
        self._inbound: asyncio.Queue[ChatMessage] = asyncio.Queue()

    def push(self, msg: ChatMessage) -> None:
        """Queue a parsed inbound message (called by the hook route)."""
        self._inbound.put_nowait(msg)

    async def connect(self) -> None:
        """Nothing to log in to: the platform calls us."""

    async def messages(self) -> AsyncIterator[ChatMessage]:
        while True:
            yield await self._inbound.get()

    async def send(self, reply: Reply) -> str:
        raise NotImplementedError
