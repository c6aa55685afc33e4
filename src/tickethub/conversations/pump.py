"""Run the engine over a chat transport: the only thing a transport must provide is
:class:`ChatTransport` — a stream of inbound messages and a way to send a reply — or,
for a transport whose messages are stored as they arrive (the webhook ones, in
whichever process the platform reached), :class:`AcceptedTransport`: a stream of
threads with stored messages (:func:`run_accepted`).

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


class Replier(Protocol):
    name: str

    async def connect(self) -> None:
        """Log in; called once before anything is sent or read."""
        ...

    async def send(self, reply: Reply) -> str:
        """Send ``reply`` (in its thread, or privately to ``reply.direct_to``); return
        the platform's event id."""
        ...


class ChatTransport(Replier, Protocol):
    def messages(self) -> AsyncIterator[ChatMessage]:
        """Inbound messages from the platform, oldest first, forever."""
        ...


class AcceptedTransport(Replier, Protocol):
    def threads(self) -> AsyncIterator[str]:
        """Threads whose messages were just stored (``ConversationEngine.accept``), as
        they come, forever."""
        ...

    def wake(self, thread: str) -> None:
        """Put ``thread`` in the stream (a scan found messages stored in it)."""
        ...


async def deliver(engine: ConversationEngine, transport: Replier,
                  outcome: Outcome) -> None:
    for reply in outcome.replies:
        event_id = await transport.send(reply)
        await asyncio.to_thread(engine.sent, reply, event_id)


async def expire_loop(engine: ConversationEngine, transport: Replier,
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


async def run_accepted(engine: ConversationEngine, transport: AcceptedTransport, *,
                       expire_every: float = 5.0, rescan_every: float = 5.0) -> None:
    """Serve ``transport`` until cancelled: handle each thread it names, and every
    ``rescan_every`` seconds (the first time at start) every thread with stored
    messages nobody handled — stored while no pump ran (before a restart, a crash),
    or by another process whose announcement did not arrive."""
    await transport.connect()
    helpers = [asyncio.create_task(expire_loop(engine, transport, expire_every)),
               asyncio.create_task(_rescan(engine, transport, rescan_every))]
    try:
        async for thread in transport.threads():
            try:
                await deliver(engine, transport, await asyncio.to_thread(engine.drain,
                                                                         thread))
            except Exception:  # a moment without the database or the platform: the
                # messages stay stored, and the next scan takes the thread again
                log.exception("handling %s thread %s failed", transport.name, thread)
    finally:
        for helper in helpers:
            helper.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)


async def _rescan(engine: ConversationEngine, transport: AcceptedTransport,
                  every: float) -> None:
    while True:
        try:
            for thread in await asyncio.to_thread(engine.pending_threads, transport.name):
                transport.wake(thread)
        except Exception:
            log.exception("looking for stored %s messages failed", transport.name)
        await asyncio.sleep(every)
