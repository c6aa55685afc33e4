"""One leader among the processes on a database runs the once-only loops; when it goes,
another takes over. On SQLite (one process) the hub always leads."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from sqlalchemy.engine import make_url

from tests.waiting import eventually
from tickethub.server.leader import Leadership


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_one_process_leads_and_another_takes_over_when_it_goes(database_url: str):
    started: list[str] = []

    def loop(name: str):
        async def run() -> None:
            started.append(name)
            await asyncio.Event().wait()
        return run

    postgres = database_url.startswith("postgresql")
    url = make_url(database_url) if postgres else None
    first = Leadership(url, [loop("first")], retry_seconds=0.1)
    running_first = asyncio.create_task(first.run())
    await eventually(lambda: started == ["first"], "the first process to lead", seconds=20)
    assert first.leading
    if not postgres:
        await _stop(running_first)
        return  # one process: nothing to share
    second = Leadership(url, [loop("second")], retry_seconds=0.1)
    running_second = asyncio.create_task(second.run())
    try:
        await asyncio.sleep(0.5)  # several tries of the lock
        assert started == ["first"] and not second.leading
        await _stop(running_first)  # its connection closes: the lock is free
        assert not first.leading
        await eventually(lambda: started == ["first", "second"],
                         "the second process to take over", seconds=20)
        assert second.leading
    finally:
        await _stop(running_second)


async def test_connection_options_in_the_database_url_reach_the_leader_lock(
        database_url: str):
    """``?options=-c x=y`` (URL-encoded) once reached the lock's connection as
    ``-c+x=y``: the server refused it, and no process ever led."""
    if not database_url.startswith("postgresql"):
        pytest.skip("on SQLite the hub leads without a connection")
    url = make_url(database_url).update_query_dict(
        {"options": "-c synchronous_commit=on"})
    started = asyncio.Event()

    async def run() -> None:
        started.set()
        await asyncio.Event().wait()

    leading = Leadership(url, [run], retry_seconds=0.1)
    task = asyncio.create_task(leading.run())
    try:
        await asyncio.wait_for(started.wait(), 20)
        assert leading.leading
    finally:
        await _stop(task)
