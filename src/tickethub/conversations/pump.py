"""Run the engine over a chat transport: the only thing a transport must provide is
:class:`ChatTransport` — a stream of inbound messages and a way to send a reply.

Messages are handled one after another in a worker thread (the engine is synchronous
and already orders each thread across processes); replies are sent in order and their
event ids reported back, so a reply to a bot question routes to its conversation.
Timeouts are checked every ``expire_every`` seconds, the first time right at start, so a
conversation that timed out while the hub was down is ended and announced.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Protocol

from tickethub.conversations.engine import ConversationEngine
from tickethub.conversations.model import ChatMessage, Outcome, Reply

log = logging.getLogger(__name__)


class ChatTransport(Protocol):
    name: str

    async def connect(self) -> None:
        """Log in; called once before anything is sent or read."""
        ...

    def messages(self) -> AsyncIterator[ChatMessage]:
        """Inbound messages from the platform, oldest first, forever."""
        ...

    async def send(self, reply: Reply) -> str:
        """Send ``reply`` (in its thread, or privately to ``reply.direct_to``); return
        the platform's event id."""
        ...


async def deliver(engine: ConversationEngine, transport: ChatTransport,
                  outcome: Outcome) -> None:
    for reply in outcome.replies:
        event_id = await transport.send(reply)
        await asyncio.to_thread(engine.sent, reply, event_id)


async def expire_loop(engine: ConversationEngine, transport: ChatTransport,
                      every: float) -> None:
    while True:
        try:
            await deliver(engine, transport, await asyncio.to_thread(engine.expire_due,
                                                             transport.name))
        except Exception:  # the platform may be away for a moment: try again next round
            log.exception("announcing timed-out conversations on %s failed", transport.name)
        await asyncio.sleep(every)


async def run_conversations(engine: ConversationEngine, transport: ChatTransport, *,
                            expire_every: float = 5.0) -> None:
    """Serve ``transport`` until cancelled."""
    await transport.connect()
    expiring = asyncio.create_task(expire_loop(engine, transport, expire_every))
    try:
        async for msg in transport.messages():
            try:
                outcome = await asyncio.to_thread(engine.receive, msg)
                await deliver(engine, transport, outcome)
            except Exception:  # one bad message (or a moment without the database or
                # the platform) must not end the bot; the message stays queued if stored
                log.exception("handling %s %s failed", msg.transport, msg.event_id)
    finally:
        expiring.cancel()
        await asyncio.gather(expiring, return_exceptions=True)
