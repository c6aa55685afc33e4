"""Group commit for the hub's writes (ticket commands from the native API, the web and
MCP: ``services/ticket_writes.py``; the Agent Protocol door's task creates, step posts
and in-hub workers' replies): requests that arrive while a transaction is running wait
for it and then go in together, in the next single transaction. Each request is still
answered only after its write is committed. A failed transaction fails every request in
it (nothing of it is stored); a commit function may also fail single items by putting
an exception in their place (those items changed nothing).

Doors that run in worker threads (web forms, GitHub answers, the conversation engine,
OpenAI asks) join the same queue through ``submit_blocking``: with the group commit
bound to the hub's event loop (``bind``), a thread's write goes in with the event loop's
requests, in one transaction; without one (the CLI's local mode, a script) it is written
alone, as before."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

from tickethub.errors import WouldBlock
from tickethub.ops.series import GROUP_COMMIT_BATCH, GROUP_COMMIT_SECONDS

In = TypeVar("In")
Out = TypeVar("Out")

MAX_BATCH = 64
# Loop turns a drain lets pass before it takes a batch, so that requests already received
# join it. A request's bytes arriving in one turn (the poll) are parsed in that turn's
# callbacks, its task first runs in the next, reaching ``submit`` there when nothing on
# its way suspends; a drain woken before those callbacks sees them three turns later.
# Without this, the drain ran one turn after the first ``submit`` and an answer burst
# over 8 connections settled into batches of 1, 5 and 2 (three commits, three rounds of
# wake-ups); with it, batches of 8. A turn with nothing else to do is a few microseconds.
GATHER_TURNS = 3
# How long a thread waits on the event loop between checks that it still runs.
_POLL_SECONDS = 1.0

_committing = threading.local()


def _mark_commit_thread() -> None:
    _committing.active = True


def call_after_batch(loop: asyncio.AbstractEventLoop, callback: Callable[..., object],
                     *args: object) -> bool:
    """From inside a batch's commit (a drain thread): queue ``callback(*args)`` to run on
    ``loop`` when the batch's results are handed back there, and return True. That
    hand-back wakes the loop anyway, so a notification (the bus waking waiters) rides
    along instead of waking it a second time: a cross-thread wake-up is a system call,
    among the dearest things a write does. False anywhere else (another thread, a batch
    of another loop): the caller wakes ``loop`` itself. Callbacks run in the order
    queued, before the batch's requests get their results, also when the commit failed
    after queuing them."""
    queued: list[tuple[Callable[..., object], tuple[object, ...]]] | None = getattr(
        _committing, "after", None)
    if queued is None or getattr(_committing, "loop", None) is not loop:
        return False
    queued.append((callback, args))
    return True


# The drains' threads: their own pool, not the loop's default executor, so threads that
# block in ``submit_blocking`` (some from that executor) can never starve the drain that
# would release them. One drain per GroupCommit at a time, so a few threads serve all.
_DRAINS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="group-commit",
                             initializer=_mark_commit_thread)


class LoopGone(RuntimeError):
    """The event loop a blocking submit waited on stopped before answering: whether the
    item was written is unknown (the hub is shutting down)."""


class GroupCommit(Generic[In, Out]):
    """``await submit(item)`` runs ``commit([items...])`` (blocking, in the thread pool)
    with whatever else is waiting, one transaction at a time, and returns the item's
    result or raises the exception that ``commit`` put in its place.

    ``inline``: a commit that may run on the event loop's thread (an embedded SQLite
    store): it must either write the batch without waiting on anything held elsewhere
    or raise :class:`~tickethub.errors.WouldBlock` having stored nothing, and then the
    batch goes to ``commit`` in the thread pool as usual."""

    def __init__(self, commit: Callable[[Sequence[In]], Sequence[Out | Exception]],
                 max_batch: int = MAX_BATCH,
                 inline: Callable[[Sequence[In]], Sequence[Out | Exception]] | None = None
                 ) -> None:
        self._commit = commit
        self._inline = inline
        self._max = max_batch
        self._queue: list[tuple[In, asyncio.Future[Out]]] = []
        self._draining = False
        self._drainer: asyncio.Task[None] | None = None  # held so it is not collected
        self._loop: asyncio.AbstractEventLoop | None = None  # for ``submit_blocking``
        # metrics: the writer's name (a bounded label: one per GroupCommit in the code)
        writer = getattr(commit, "__qualname__", None) or getattr(commit, "__name__", "commit")
        self._batch_sizes = GROUP_COMMIT_BATCH.labels(writer=writer)
        self._seconds = GROUP_COMMIT_SECONDS.labels(writer=writer)

    async def submit(self, item: In) -> Out:
        loop = asyncio.get_running_loop()
        if self._drainer is not None and self._drainer.get_loop() is not loop:
            # Used from a new event loop (a restarted server, the next test): what the
            # old loop left queued can never be answered there, and its drain is gone.
            self._queue, self._draining, self._drainer = [], False, None
        future: asyncio.Future[Out] = loop.create_future()
        self._queue.append((item, future))
        if not self._draining:
            self._draining = True
            self._drainer = loop.create_task(self._drain())
        return await future

    def bind(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Let threads' ``submit_blocking`` join the queue on ``loop`` (``None``: stop)."""
        self._loop = loop

    def submit_blocking(self, item: In) -> Out:
        """``submit(item)`` from a thread that is not the event loop's: queued on the bound
        loop with everything else, waiting for the result. Committed alone, in this
        thread, when no running loop is bound, or when called on an event loop's thread
        or inside a commit (where waiting on the queue could never end)."""
        loop = self._loop
        if (loop is None or not loop.is_running() or _on_event_loop()
                or getattr(_committing, "active", False)):
            [result] = self._commit([item])
            if isinstance(result, Exception):
                raise result
            return result
        future = asyncio.run_coroutine_threadsafe(self.submit(item), loop)
        while True:
            try:
                return future.result(_POLL_SECONDS)
            except TimeoutError:
                if not loop.is_running():
                    future.cancel()
                    raise LoopGone("the hub stopped before this write was confirmed") \
                        from None

    async def _drain(self) -> None:
        try:
            while self._queue:
                for _ in range(GATHER_TURNS):
                    await asyncio.sleep(0)
                batch, self._queue = self._queue[: self._max], self._queue[self._max:]
                self._batch_sizes.observe(len(batch))
                started = time.perf_counter()
                try:
                    results = await self._write(batch)
                except Exception as exc:
                    self._seconds.observe(time.perf_counter() - started)
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                self._seconds.observe(time.perf_counter() - started)
                for (_, future), result in zip(batch, results, strict=True):
                    if future.done():  # the request went away; its write is stored anyway
                        continue
                    if isinstance(result, Exception):
                        future.set_exception(result)
                    else:
                        future.set_result(result)
        finally:
            self._draining = False

    def _commit_batch(self, loop: asyncio.AbstractEventLoop, items: list[In]
                      ) -> tuple[Sequence[Out | Exception] | Exception,
                                 list[tuple[Callable[..., object], tuple[object, ...]]]]:
        """``commit(items)`` in a drain thread, with what it queued by
        ``call_after_batch`` for ``loop`` (its exception in place of the results)."""
        _committing.after, _committing.loop = [], loop
        try:
            return self._commit(items), _committing.after
        except Exception as exc:
            return exc, _committing.after
        finally:
            _committing.after = _committing.loop = None

    async def _write(self, batch: list[tuple[In, asyncio.Future[Out]]]
                     ) -> Sequence[Out | Exception]:
        items = [item for item, _ in batch]
        if self._inline is not None:
            # On the loop itself, when it can start at once (else it raises WouldBlock,
            # having stored nothing): the batch's commit blocks the loop for its own
            # duration only, never for a lock held elsewhere.
            try:
                return self._inline(items)
            except WouldBlock:
                pass
        # A plain executor thread (lighter than anyio's worker threads); one drain at a
        # time needs one thread.
        loop = asyncio.get_running_loop()
        results, after = await loop.run_in_executor(_DRAINS, self._commit_batch, loop, items)
        _run_all(after)
        if isinstance(results, BaseException):
            raise results
        return results


def _run_all(callbacks: list[tuple[Callable[..., object], tuple[object, ...]]]) -> None:
    for callback, args in callbacks:
        callback(*args)


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
