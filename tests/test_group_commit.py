"""GroupCommit: requests waiting behind a running transaction go in the next one."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from tickethub.errors import WouldBlock
from tickethub.group_commit import GroupCommit, call_after_batch


async def test_waiting_items_share_the_next_transaction() -> None:
    batches: list[list[int]] = []
    gate = threading.Event()

    def commit(items: Sequence[int]) -> list[int]:
        if not batches:
            gate.wait(5)  # hold the first transaction open while others arrive
        batches.append(list(items))
        return [i * 10 for i in items]

    group = GroupCommit(commit, max_batch=3)
    first = asyncio.create_task(group.submit(0))
    await asyncio.sleep(0.05)
    rest = [asyncio.create_task(group.submit(i)) for i in range(1, 6)]
    await asyncio.sleep(0.05)
    gate.set()
    assert await first == 0
    assert [await r for r in rest] == [10, 20, 30, 40, 50]
    assert batches == [[0], [1, 2, 3], [4, 5]]


async def test_a_failed_transaction_fails_every_request_in_it() -> None:
    def commit(items: Sequence[int]) -> list[int]:
        raise RuntimeError("database gone")

    group = GroupCommit(commit)
    results = await asyncio.gather(group.submit(1), group.submit(2), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    with pytest.raises(RuntimeError):
        await group.submit(3)


async def test_an_item_failed_in_its_place_fails_only_its_own_request() -> None:
    def commit(items: Sequence[int]) -> list[int | Exception]:
        return [ValueError(f"odd {i}") if i % 2 else i for i in items]

    group = GroupCommit(commit)
    results = await asyncio.gather(*(group.submit(i) for i in range(4)),
                                   return_exceptions=True)
    assert results[0] == 0 and results[2] == 2
    assert [str(r) for r in results[1::2]] == ["odd 1", "odd 3"]


async def test_threads_join_the_event_loops_batch_once_bound() -> None:
    batches: list[list[int]] = []
    gate = threading.Event()

    def commit(items: Sequence[int]) -> list[int]:
        if not batches:
            gate.wait(5)
        batches.append(list(items))
        return [i * 10 for i in items]

    group = GroupCommit(commit)
    group.bind(asyncio.get_running_loop())
    first = asyncio.create_task(group.submit(0))
    await asyncio.sleep(0.05)
    threads = [asyncio.create_task(asyncio.to_thread(group.submit_blocking, i))
               for i in (1, 2)]
    for _ in range(500):
        if len(group._queue) == 2:
            break
        await asyncio.sleep(0.01)
    loop_item = asyncio.create_task(group.submit(3))
    await asyncio.sleep(0.05)
    gate.set()
    assert [await first, await threads[0], await threads[1], await loop_item] == [0, 10, 20, 30]
    assert batches[0] == [0] and sorted(batches[1]) == [1, 2, 3]


def test_unbound_a_thread_commits_alone_and_gets_its_error() -> None:
    def commit(items: Sequence[int]) -> list[int | Exception]:
        return [ValueError("odd") if i % 2 else i for i in items]

    group = GroupCommit(commit)
    assert group.submit_blocking(2) == 2
    with pytest.raises(ValueError, match="odd"):
        group.submit_blocking(1)


async def test_a_commit_that_writes_through_another_group_does_not_wait_on_it() -> None:
    """Inside a commit (a drain thread) a blocking submit writes alone: queueing behind
    the loop from there could deadlock."""
    threads: list[tuple[str, str]] = []

    def inner_commit(items: Sequence[int]) -> list[int]:
        threads.append(("inner", threading.current_thread().name))
        return [i + 1 for i in items]

    def outer_commit(items: Sequence[int]) -> list[int]:
        threads.append(("outer", threading.current_thread().name))
        return [inner.submit_blocking(i) for i in items]

    inner = GroupCommit(inner_commit)
    inner.bind(asyncio.get_running_loop())
    outer = GroupCommit(outer_commit)
    assert await asyncio.wait_for(outer.submit(1), 10) == 2
    (_, outer_thread), (_, inner_thread) = threads
    assert inner_thread == outer_thread  # written right there, not queued


async def test_what_a_commit_queues_for_its_loop_runs_there_before_the_results() -> None:
    loop = asyncio.get_running_loop()
    seen: list[tuple[str, int | None, str]] = []
    queued: list[bool] = []

    def commit(items: Sequence[str]) -> list[str]:
        for item in items:
            queued.append(call_after_batch(loop, lambda i: seen.append(
                (i, threading.get_ident(), "after")), item))
        return [item.upper() for item in items]

    group: GroupCommit[str, str] = GroupCommit(commit)
    assert await group.submit("a") == "A"
    assert queued == [True]
    assert seen == [("a", threading.get_ident(), "after")]  # on the loop's own thread


async def test_callbacks_queued_before_a_failure_still_run() -> None:
    loop = asyncio.get_running_loop()
    seen: list[str] = []

    def commit(items: Sequence[str]) -> list[str]:
        call_after_batch(loop, seen.append, "notified")
        raise RuntimeError("disk full")

    group: GroupCommit[str, str] = GroupCommit(commit)
    with pytest.raises(RuntimeError, match="disk full"):
        await group.submit("a")
    assert seen == ["notified"]


async def test_outside_a_batch_or_for_another_loop_nothing_is_queued() -> None:
    loop = asyncio.get_running_loop()
    assert not call_after_batch(loop, print)  # the loop's own thread, no batch
    assert not await asyncio.to_thread(call_after_batch, loop, print)  # a plain thread
    other = asyncio.new_event_loop()
    try:
        answers: list[bool] = []
        group: GroupCommit[str, str] = GroupCommit(
            lambda items: [answers.append(call_after_batch(other, print)) or i for i in items])
        await group.submit("a")
        assert answers == [False]  # queued only for the loop the batch answers on
    finally:
        other.close()


async def test_an_inline_commit_runs_on_the_event_loops_thread() -> None:
    threads: list[int] = []

    def inline(items: Sequence[int]) -> list[int]:
        threads.append(threading.get_ident())
        return [i * 10 for i in items]

    def commit(items: Sequence[int]) -> list[int]:
        raise AssertionError("the thread path was taken")

    group = GroupCommit(commit, inline=inline)
    assert await asyncio.gather(group.submit(1), group.submit(2)) == [10, 20]
    assert threads == [threading.get_ident()]  # one batch, on this (the loop's) thread


async def test_an_inline_commit_that_would_block_goes_to_a_thread() -> None:
    threads: list[int] = []

    def inline(items: Sequence[int]) -> list[int]:
        raise WouldBlock("the write lock is held elsewhere")

    def commit(items: Sequence[int]) -> list[int]:
        threads.append(threading.get_ident())
        return [i * 10 for i in items]

    group = GroupCommit(commit, inline=inline)
    assert await asyncio.gather(group.submit(1), group.submit(2)) == [10, 20]
    assert len(threads) == 1 and threads[0] != threading.get_ident()


async def test_a_failed_inline_commit_fails_every_request_in_it() -> None:
    def inline(items: Sequence[int]) -> list[int]:
        raise RuntimeError("disk full")

    def commit(items: Sequence[int]) -> list[int]:
        raise AssertionError("a failed inline commit is not retried on a thread")

    group = GroupCommit(commit, inline=inline)
    results = await asyncio.gather(group.submit(1), group.submit(2), return_exceptions=True)
    assert [str(r) for r in results] == ["disk full", "disk full"]


async def test_requests_received_in_the_same_turns_share_one_transaction() -> None:
    """A request reaches ``submit`` a turn or two after its bytes were read (its task
    starts in the next turn, and may suspend on the way); requests read together go in
    together, not the first one alone."""
    batches: list[list[int]] = []

    def commit(items: Sequence[int]) -> list[int]:
        batches.append(list(items))
        return list(items)

    group = GroupCommit(commit)

    async def request(n: int, turns_before_submit: int) -> int:
        for _ in range(turns_before_submit):
            await asyncio.sleep(0)
        return await group.submit(n)

    results = await asyncio.gather(request(0, 0), request(1, 1), request(2, 2))
    assert results == [0, 1, 2]
    assert batches == [[0, 1, 2]]
