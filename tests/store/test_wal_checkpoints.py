"""SQLite's WAL checkpointed in the background while the hub serves, not in commits."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import Engine

from tickethub.server.checkpoint_loop import checkpoint_loop
from tickethub.store.checkpoints import WalCheckpoints
from tickethub.store.engine import make_engine

PAGE = 4096


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path / 'hub.db'}")
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE blobs (x TEXT)")
    yield engine
    engine.dispose()


def _autocheckpoint(engine: Engine) -> int:
    with engine.connect() as c:
        return int(c.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar_one())


def _write_pages(engine: Engine, pages: int) -> None:
    """About ``pages`` pages of new rows, in commits of 50."""
    for _ in range(pages // 50):
        with engine.begin() as c:
            c.exec_driver_sql("INSERT INTO blobs VALUES (?)", [("x" * (PAGE - 200),)] * 50)


def test_inside_the_block_commits_leave_the_log_to_the_caller(engine: Engine) -> None:
    checkpoints = WalCheckpoints(engine)
    assert _autocheckpoint(engine) == 1000
    with checkpoints.in_background():
        assert _autocheckpoint(engine) == 0
        _write_pages(engine, 1500)
        busy, in_log, copied = checkpoints.checkpoint()
    # SQLite's own checkpoint at 1,000 pages would have restarted the log before that.
    assert busy == 0 and in_log > 1200 and copied == in_log
    assert _autocheckpoint(engine) == 1000  # SQLite's default again after the block


def test_the_loop_checkpoints_what_commits_left(engine: Engine, tmp_path: Path) -> None:
    checkpoints = WalCheckpoints(engine)

    async def serve_a_while() -> None:
        loop = asyncio.create_task(checkpoint_loop(checkpoints, every_seconds=0.01))
        await asyncio.to_thread(_write_pages, engine, 1500)
        await asyncio.sleep(0.2)
        assert _autocheckpoint(engine) == 0
        loop.cancel()
        with pytest.raises(asyncio.CancelledError):
            await loop

    asyncio.run(serve_a_while())
    # Only a checkpoint copies pages from the log into the database file itself.
    assert (tmp_path / "hub.db").stat().st_size > 1200 * PAGE


def test_only_for_sqlite() -> None:
    class _Postgres:
        class dialect:
            name = "postgresql"

    with pytest.raises(ValueError, match="SQLite"):
        WalCheckpoints(_Postgres())  # type: ignore[arg-type]
