"""One leader among the hub processes that share a database: it runs the loops that
must run once (mail watch, GitHub inbox and poller, chat pumps, personal-agent schedules).

On PostgreSQL the leader is the process holding a session-level advisory lock on a
connection of its own. The others try again every ``retry_seconds``. A leader that dies
(even ``kill -9``) loses its connection, PostgreSQL releases the lock, and another
process takes over at its next try; a leader that loses its connection stops its loops
before anyone else can start them again. On SQLite (one process) the hub always leads.

Loops that are safe in every process stay out of here: deadline expiry (``SKIP LOCKED``
claims: a ticket expires once) and delivery (claimed rows with a lease), so those keep
running, and spread, in every process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence

from sqlalchemy.engine import URL

from tickethub.store import advisory_locks
from tickethub.store.conninfo import libpq_conninfo

log = logging.getLogger(__name__)

LEADER_LOCK_KEY = advisory_locks.LEADER

Loop = Callable[[], Awaitable[None]]


class Leadership:
    """Runs ``loops`` while this process leads. ``run()`` never returns by itself."""

    def __init__(self, url: URL | None, loops: Sequence[Loop], *,
                 retry_seconds: float = 2.0) -> None:
        self._conninfo = libpq_conninfo(url) if url is not None else None
        self._loops = list(loops)
        self._retry = retry_seconds
        self.leading = False

    async def run(self) -> None:
        if self._conninfo is None:  # one process on SQLite: always the leader
            self.leading = True
            await _run_all(self._loops)
            return
        while True:
            try:
                await self._term()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # connection lost or refused: try again later
                log.warning("leader lock: %s; trying again in %.0fs", exc, self._retry)
            await asyncio.sleep(self._retry)

    async def _term(self) -> None:
        """Wait for the lock on one connection, then lead until that connection fails."""
        assert self._conninfo is not None
        import psycopg  # PostgreSQL only: a plain install (SQLite) does not have it

        async with await psycopg.AsyncConnection.connect(
                self._conninfo, autocommit=True) as connection:
            while True:
                taken = await (await connection.execute(
                    "SELECT pg_try_advisory_lock(%s)", (LEADER_LOCK_KEY,))).fetchone()
                if taken and taken[0]:
                    break
                await asyncio.sleep(self._retry)
            log.info("this hub process leads: it runs the once-only loops (%d)",
                     len(self._loops))
            self.leading = True
            work = asyncio.create_task(_run_all(self._loops))
            try:
                while not work.done():  # the lock lives as long as this connection
                    done, _ = await asyncio.wait({work}, timeout=self._retry)
                    if not done:
                        await connection.execute("SELECT 1")
            finally:
                self.leading = False
                work.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await work


async def _run_all(loops: Sequence[Loop]) -> None:
    """Run every loop until all end (each is meant to run forever); one that fails is
    logged and ends alone."""
    await asyncio.gather(*(_logged(loop) for loop in loops), asyncio.Event().wait())


async def _logged(loop: Loop) -> None:
    try:
        await loop()
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("background loop %r failed", loop)
