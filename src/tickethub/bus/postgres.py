"""Wakeups across several hub processes sharing one PostgreSQL: LISTEN/NOTIFY.

Each process keeps its in-process bus for its own waiters. A change committed in one
process is announced with ``NOTIFY`` on one channel; every other process's listener wakes
its local waiters, which read the ticket back (the notification carries ids only).
Notifications from the process itself are skipped: its waiters already got the new state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from collections.abc import Sequence

import psycopg
from sqlalchemy.engine import URL

from tickethub.bus.memory import InProcessBus
from tickethub.domain.tickets import Ticket

log = logging.getLogger(__name__)

CHANNEL = "tickethub_events"
_MAX_IDS = 500  # NOTIFY payloads are limited to 8000 bytes


def _conninfo(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


class PostgresBus(InProcessBus):
    def __init__(self, url: URL) -> None:
        super().__init__()
        self._conninfo = _conninfo(url)
        self._origin = uuid.uuid4().hex[:12]
        self._sender: psycopg.Connection[tuple[object, ...]] | None = None
        self._sender_lock = threading.Lock()
        self._listener: asyncio.Task[None] | None = None

    def notify(self, seq: int, tickets: Sequence[Ticket], touched: Sequence[int] = ()
               ) -> None:
        super().notify(seq, tickets, touched)
        ids = ",".join(str(i) for i in [*(t.id for t in tickets), *touched][:_MAX_IDS]) or "-"
        payload = f"{self._origin}:{seq}:{ids}"
        with self._sender_lock:
            try:
                if self._sender is None or self._sender.closed:
                    self._sender = psycopg.connect(self._conninfo, autocommit=True)
                self._sender.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
            except psycopg.Error:
                # Other processes' waiters re-check at their poll timeout; log and go on.
                log.exception("could not NOTIFY other hub processes")
                self._sender = None

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
        backoff = 0.5
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._conninfo, autocommit=True
                ) as connection:
                    await connection.execute(f"LISTEN {CHANNEL}")
                    if not ready.done():
                        ready.set_result(None)
                    backoff = 0.5
                    async for note in connection.notifies():
                        self._receive(note.payload)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("LISTEN connection lost; reconnecting in %.1fs", backoff)
                if not ready.done():
                    ready.set_result(None)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10)

    def _receive(self, payload: str) -> None:
        origin, _, rest = payload.partition(":")
        if origin == self._origin:
            return
        seq_text, _, ids = rest.partition(":")
        # The state lives in another process: waiters get None and read it back.
        self._wake(int(seq_text), {int(i): None for i in ids.split(",") if i.isdigit()})
