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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Sequence
from datetime import datetime

import psycopg
from psycopg.conninfo import make_conninfo
from sqlalchemy.engine import URL

from tickethub.bus.memory import InProcessBus
from tickethub.domain.status import Status
from tickethub.domain.tickets import Moved, Ticket

log = logging.getLogger(__name__)

CHANNEL = "tickethub_events"
_MAX_IDS = 400  # ids per NOTIFY: payloads are limited to 8000 bytes
CONNECT_TIMEOUT_SECONDS = 5
SEND_RETRY_SECONDS = 1.0  # after a failed NOTIFY, skip sending this long
LISTEN_BACKOFF_SECONDS = (0.2, 5.0)  # first and longest wait between LISTEN reconnects


def _conninfo(url: URL) -> str:
    """libpq key/value conninfo for the same server and options as the engine's ``url``.

    Built from the parsed parts, not by re-rendering the URL: a rendered URL writes a
    space as ``+``, which libpq does not decode, so ``?options=-c%20x%3Dy`` would reach
    the server as ``-c+x=y`` and the LISTEN connection would never open."""
    parts: dict[str, object] = {"host": url.host, "port": url.port, "user": url.username,
                                "password": url.password, "dbname": url.database}
    for key, value in url.query.items():
        parts[key] = value[-1] if isinstance(value, tuple) else value
    return make_conninfo(**{k: str(v) for k, v in parts.items() if v is not None})


class PostgresBus(InProcessBus):
    def __init__(self, url: URL) -> None:
        super().__init__()
        self._conninfo = _conninfo(url)
        self._origin = uuid.uuid4().hex[:12]
        self._sender: psycopg.Connection[tuple[object, ...]] | None = None
        self._sender_lock = threading.Lock()
        self._send_after = 0.0  # monotonic time before which sending is not tried
        self._listener: asyncio.Task[None] | None = None
        self.reconnects = 0  # times LISTEN was re-established after a loss

    def notify(self, seq: int, tickets: Sequence[Ticket | Moved], touched: Sequence[int] = ()
               ) -> None:
        super().notify(seq, tickets, touched)
        with self._sender_lock:
            for payload in _payloads(self._origin, seq, tickets, touched):
                if time.monotonic() < self._send_after:
                    return  # the server was out of reach a moment ago
                try:
                    if self._sender is None or self._sender.closed:
                        self._sender = psycopg.connect(
                            self._conninfo, autocommit=True,
                            connect_timeout=CONNECT_TIMEOUT_SECONDS)
                    self._sender.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
                except psycopg.Error as exc:
                    # The other processes' listeners lost their connection too (or will
                    # re-check at their poll timeout); their waiters read back on reconnect.
                    log.warning("could not NOTIFY other hub processes: %s",
                                str(exc).strip().partition("\n")[0])
                    if self._sender is not None:
                        self._sender.close()
                    self._sender = None
                    self._send_after = time.monotonic() + SEND_RETRY_SECONDS

    async def start(self) -> None:
        """Start listening; returns once LISTEN is in effect."""
        ready = asyncio.get_running_loop().create_future()
        self._listener = asyncio.create_task(self._listen(ready))
        await ready

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
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
                    if not ready.done():
                        ready.set_result(None)
                    if lost:  # what was notified while away is lost: read everything back
                        lost = False
                        self.reconnects += 1
                        log.warning("LISTEN connection back; waiters re-check their tickets")
                        self.recheck_all()
                    backoff = first
                    async for note in connection.notifies():
                        self._receive(note.payload)
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
