"""SQLite: the write-ahead log checkpointed by a background thread, not inside commits.

SQLite in WAL mode appends each commit to the ``-wal`` file and, by default, the commit
that takes it past 1,000 pages copies it back into the database and syncs it (a
"checkpoint"): a few milliseconds to tens of milliseconds, paid by whichever write
happened to cross the line. The hub commits small batches on the event loop itself
(``group_commit``, ``SqlStore.write_now``), so that commit would stall every request for
its duration; measured on an answer burst, two thirds of all commit time was those
checkpoints.

Inside :meth:`WalCheckpoints.in_background`, transactions begin with automatic
checkpoints off (``PRAGMA wal_autocheckpoint=0``, set once per connection, at the first
transaction it begins inside the block) and ``server/checkpoint_loop.py`` calls
:meth:`WalCheckpoints.checkpoint` every second in a worker thread: ``PASSIVE``, it never
waits for, nor blocks, readers and writers, and its sync runs without the GIL. What a
passive checkpoint could not copy (a reader still on older pages) the next one copies.
A process that does not run the loop (the CLI, a script) keeps SQLite's default, and
closing the last connection checkpoints anyway.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, event

_MARK = "tickethub_background_checkpoints"  # in a connection's ``info``


class WalCheckpoints:
    """Background checkpoints of an SQLite engine's WAL (see the module doc)."""

    def __init__(self, engine: Engine) -> None:
        if engine.dialect.name != "sqlite":
            raise ValueError("background checkpoints are for SQLite engines")
        self._engine = engine
        self._active = False
        event.listen(engine, "begin", self._on_begin)

    def _on_begin(self, connection: Any) -> None:
        # At each transaction's start, not at checkout: a connection held open (the
        # event loop's own, ``SqlStore.write_now``) follows too. The PRAGMA runs once per
        # connection and change; otherwise this is a dict look-up.
        wanted = self._active
        if connection.info.get(_MARK, False) is not wanted:
            connection.connection.driver_connection.execute(
                f"PRAGMA wal_autocheckpoint={0 if wanted else 1000}")
            connection.info[_MARK] = wanted

    def checkpoint(self) -> tuple[int, int, int]:
        """One passive checkpoint, now, in this thread: SQLite's ``(busy, pages in the
        log, pages checkpointed)``."""
        connection = self._engine.raw_connection()
        try:
            # The driver's own connection: autocommit (the engine's connect hook), so no
            # transaction is open around the checkpoint.
            row = connection.driver_connection.execute(  # type: ignore[union-attr]
                "PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        finally:
            connection.close()
        return int(row[0]), int(row[1]), int(row[2])

    @contextmanager
    def in_background(self) -> Iterator[None]:
        """Automatic checkpoints off for transactions begun inside the block (the caller
        checkpoints), back on for those begun after it."""
        self._active = True
        try:
            yield
        finally:
            self._active = False
