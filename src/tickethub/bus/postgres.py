"""Wakeups across several hub processes sharing one PostgreSQL: LISTEN/NOTIFY.

Each process keeps its in-process bus for its own waiters. A change committed in one
process is announced with ``NOTIFY`` on one channel; every other process's listener wakes
its local waiters, which read the ticket back (the notification carries ids), except
after a change of status alone (a deadline's expiry: ``Moved``): the id comes with the
new version, and a waiter holding the version before applies it without a read.
Notifications from the process itself are skipped: its waiters already got the new state.

The database may go away (restarted, failed over): the listener reconnects with backoff,
and once ``LISTEN`` is in effect again every local waiter reads its ticket back
(``recheck_all``), since what was notified meanwhile is lost. Sending is best effort:
after a failed ``NOTIFY`` the sender waits a moment before connecting again, so the
writers that notify are not held up by an unreachable server.

Other news between the processes (``broadcast``: e.g. the sign-in throttles' failures)
goes on a channel per topic, sent from a thread of its own so the caller never waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import psycopg
from sqlalchemy.engine import URL

from tickethub.bus.memory import MESSAGE_MAX, InProcessBus
from tickethub.domain.status import Status
from tickethub.domain.tickets import Moved, Ticket
from tickethub.store.conninfo import libpq_conninfo

log = logging.getLogger(__name__)

CHANNEL = "tickethub_events"
TOPIC_PREFIX = "tickethub_topic_"  # + a topic of ``broadcast``: its channel
_MAX_IDS = 400  # ids per NOTIFY: payloads are limited to 8000 bytes
CONNECT_TIMEOUT_SECONDS = 5
SEND_RETRY_SECONDS = 1.0  # after a failed NOTIFY, skip sending this long
LISTEN_BACKOFF_SECONDS = (0.2, 5.0)  # first and longest wait between LISTEN reconnects


class PostgresBus(InProcessBus):
    shared = True

    def __init__(self, url: URL) -> None:
        super().__init__()
        self._conninfo = libpq_conninfo(url)
        self._origin = uuid.uuid4().hex[:12]
        self._sender: psycopg.Connection[tuple[object, ...]] | None = None
        self._sender_lock = threading.Lock()
        self._send_after = 0.0  # monotonic time before which sending is not tried
        self._listener: asyncio.Task[None] | None = None
        self._broadcasts: ThreadPoolExecutor | None = None
        self._stopped = False  # ``stop`` ran: broadcasts are dropped, no sender is kept
        self.reconnects = 0  # times LISTEN was re-established after a loss

    def notify(self, seq: int, tickets: Sequence[Ticket | Moved], touched: Sequence[int] = ()
               ) -> None:
        super().notify(seq, tickets, touched)
        self._send(CHANNEL, _payloads(self._origin, seq, tickets, touched))

    def broadcast(self, topic: str, message: str) -> None:
        if len(message.encode()) > MESSAGE_MAX:
            raise ValueError(f"a {topic} message of over {MESSAGE_MAX} bytes")
        if self._stopped:
            return  # the process is leaving: no thread is started that nothing would stop
        if self._broadcasts is None:  # one thread: messages leave in the order sent
            self._broadcasts = ThreadPoolExecutor(1, thread_name_prefix="bus-broadcast")
        self._broadcasts.submit(self._send, _topic_channel(topic),
                                [f"{self._origin}:{message}"])

    def _send(self, channel: str, payloads: list[str]) -> None:
        """NOTIFY each payload on ``channel``, on this process's sending connection."""
        with self._sender_lock:
            for payload in payloads:
                if time.monotonic() < self._send_after:
                    return  # the server was out of reach a moment ago
                try:
                    if self._sender is None or self._sender.closed:
                        self._sender = psycopg.connect(
                            self._conninfo, autocommit=True,
                            connect_timeout=CONNECT_TIMEOUT_SECONDS)
                    self._sender.execute("SELECT pg_notify(%s, %s)", (channel, payload))
                except psycopg.Error as exc:
                    # The other processes' listeners lost their connection too (or will
                    # re-check at their poll timeout); their waiters read back on reconnect.
                    log.warning("could not NOTIFY other hub processes: %s",
                                str(exc).strip().partition("\n")[0])
                    if self._sender is not None:
                        self._sender.close()
                    self._sender = None
                    self._send_after = time.monotonic() + SEND_RETRY_SECONDS
            # After ``stop`` (its queued broadcasts sent, on one connection): a write
            # committed while stopping still reaches the others; nothing stays open.
            if self._stopped and self._broadcasts is None and self._sender is not None:
                self._sender.close()
                self._sender = None

    async def start(self) -> None:
        """Start listening; returns once LISTEN is in effect."""
        ready = asyncio.get_running_loop().create_future()
        self._listener = asyncio.create_task(self._listen(ready))
        await ready

    async def stop(self) -> None:
        """Stop listening, send what ``broadcast`` still has queued, close the sending
        connection. After it, ``broadcast`` drops its messages; ``notify`` still sends
        (a change committed during shutdown), on a connection closed right after."""
        self._stopped = True
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
        if self._broadcasts is not None:  # what is still queued is sent first
            await asyncio.to_thread(self._broadcasts.shutdown)
            self._broadcasts = None
        with self._sender_lock:
            if self._sender is not None:
                self._sender.close()
                self._sender = None

    async def _listen(self, ready: asyncio.Future[None]) -> None:
        first, longest = LISTEN_BACKOFF_SECONDS
        backoff = first
        lost = False  # a connection failed: on the next, notifications may be missing
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
                ) as connection:
                    await connection.execute(f"LISTEN {CHANNEL}")
                    for topic in self._topics:
                        await connection.execute(f"LISTEN {_topic_channel(topic)}")
                    if not ready.done():
                        ready.set_result(None)
                    if lost:  # what was notified while away is lost: read everything back
                        lost = False
                        self.reconnects += 1
                        log.warning("LISTEN connection back; waiters re-check their tickets")
                        self.recheck_all()
                    backoff = first
                    async for note in connection.notifies():
                        if note.channel == CHANNEL:
                            self._receive(note.payload)
                        else:
                            self._receive_message(note.channel, note.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                lost = True
                log.warning("LISTEN connection lost (%s); reconnecting in %.1fs",
                            str(exc).strip().partition("\n")[0] or type(exc).__name__,
                            backoff)
                if not ready.done():
                    ready.set_result(None)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, longest)

    def _receive(self, payload: str) -> None:
        origin, _, rest = payload.partition(":")
        if origin == self._origin:
            return
        seq_text, _, rest = rest.partition(":")
        ids, _, moved = rest.partition(":")
        status, _, at = moved.partition("@")
        states: dict[int, Ticket | Moved | None] = {}
        for item in ids.split(","):
            ticket_id, dot, version = item.partition(".")
            if not ticket_id.isdigit():
                continue
            if dot and version.isdigit() and at:
                # Only the status changed: waiters holding the version before apply it.
                states[int(ticket_id)] = Moved(int(ticket_id), Status(status),
                                               datetime.fromisoformat(at), int(version))
            else:  # the state lives in another process: waiters read it back
                states[int(ticket_id)] = None
        self._wake(int(seq_text), states)


    def _receive_message(self, channel: str, payload: str) -> None:
        origin, _, message = payload.partition(":")
        handler = self._topics.get(channel.removeprefix(TOPIC_PREFIX))
        if origin == self._origin or handler is None:
            return
        try:
            handler(message)
        except Exception:  # a subscriber's bug must not end the listening
            log.exception("a handler of %s messages from other hub processes failed", channel)


def _topic_channel(topic: str) -> str:
    if not topic.replace("_", "").isalpha() or not topic.islower():
        raise ValueError(f"a topic is lower-case letters and '_', not {topic!r}")
    return TOPIC_PREFIX + topic


def _payloads(origin: str, seq: int, tickets: Sequence[Ticket | Moved],
              touched: Sequence[int]) -> list[str]:
    """The NOTIFY payloads of one notification, ``_MAX_IDS`` ids each:
    ``origin:seq:ids[:status@at]``. An id is ``id.version`` for a ``Moved`` to the
    ``status`` at the time ``at`` of the first one (``Moved``s of another status or
    time go as plain ids: read back)."""
    first = next((t for t in tickets if isinstance(t, Moved)), None)
    items = []
    for t in tickets:
        if (first is not None and isinstance(t, Moved) and t.status is first.status
                and t.at == first.at):
            items.append(f"{t.id}.{t.version}")
        else:
            items.append(str(t.id))
    items += [str(i) for i in touched]
    tail = "" if first is None else f":{first.status.value}@{first.at.isoformat()}"
    if not items:
        return [f"{origin}:{seq}:-"]
    return [f"{origin}:{seq}:{','.join(items[start:start + _MAX_IDS])}{tail}"
            for start in range(0, len(items), _MAX_IDS)]
