"""The in-process bus: wakes waiters of one server process within microseconds.

``notify`` may be called from any thread (services run in a thread pool); waiting happens
on the event loop the bus is bound to. Registration comes before the waiter reads the
state, so a change that commits between the read and the sleep still wakes it.

At shutdown ``close()`` wakes every waiter and sets ``closing``: long-polls and streams
check it when woken and finish (a long-poll answers with the ticket as it is, a stream
ends), so the server is not held open by connections that would wait for minutes.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from tickethub.domain.tickets import Moved, Ticket
from tickethub.group_commit import call_after_batch
from tickethub.ops.series import WAKE_LATENCY

_TICKET_SEQS = 100_000  # tickets whose latest notification the bus remembers
MESSAGE_MAX = 7000  # bytes of a ``broadcast`` message (PostgreSQL's NOTIFY takes 8,000)


class LogSignal:
    """Set whenever new events are committed; a stream clears it before reading."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    async def wait(self, timeout: float) -> bool:
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancellation
        # that arrives as the event is set, and the loop waiting here never stops.
        try:
            async with asyncio.timeout(timeout):
                await self.event.wait()
        except TimeoutError:
            return False
        self.event.clear()
        return True


class InProcessBus:
    shared = False  # whether other processes notify this bus (``bus/postgres.py``)

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._ticket_waiters: dict[int, set[asyncio.Future[Ticket | Moved | None]]] = {}
        self._log_signals: set[LogSignal] = set()
        self._state_signals: set[LogSignal] = set()
        # The seq of the latest notification of each recently notified ticket.
        self._ticket_seqs: OrderedDict[int, int] = OrderedDict()
        self.last_seq = 0
        self.rechecks = 0  # times ``recheck_all`` woke everyone
        self.closing = False
        self._topics: dict[str, Callable[[str], None]] = {}

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Serve waiters on ``loop`` (again open after an earlier ``close``)."""
        self.closing = False
        self._loop = loop
        self._loop_thread = threading.get_ident()

    def unbind(self) -> None:
        self._loop = None

    async def start(self) -> None:
        """Hook for buses that connect to something; the in-process bus needs nothing."""

    async def stop(self) -> None:
        """Hook for buses that connect to something."""

    def close(self) -> None:
        """The hub is shutting down: wake every waiter now and every later one at once
        (``closing`` tells them why). Call on the bound event loop."""
        self.closing = True
        for futures in self._ticket_waiters.values():
            for future in futures:
                if not future.done():
                    future.set_result(None)
        for signal in self._log_signals | self._state_signals:
            signal.event.set()

    def recheck_all(self) -> None:
        """Changes may have gone by unannounced (a bus that lost its connection to other
        processes): wake every waiter to read its ticket back (state ``None``), set every
        signal so streams and loops re-read, and forget which tickets were quiet. Call on
        the bound event loop."""
        self._ticket_seqs.clear()
        self.rechecks += 1
        waiters, self._ticket_waiters = self._ticket_waiters, {}
        for futures in waiters.values():
            for future in futures:
                if not future.done():
                    future.set_result(None)
        for signal in self._log_signals | self._state_signals:
            signal.event.set()

    def unheard(self, changes: Iterable[tuple[int, int]]) -> set[int]:
        """The tickets among ``changes`` (``(seq, ticket_id)`` pairs read from the log)
        whose change at that seq this bus was not notified of. Forgotten tickets count
        as unheard (waking a waiter for nothing costs one read). Call on the bound
        event loop."""
        seqs = self._ticket_seqs
        return {ticket_id for seq, ticket_id in changes if seqs.get(ticket_id, 0) < seq}

    def wake_unheard(self, seq: int, ticket_ids: Iterable[int]) -> None:
        """Changes up to ``seq`` to ``ticket_ids`` were committed but never announced
        here: their waiters read the tickets back, streams and loops re-read. Call on
        the bound event loop."""
        self._wake(seq, dict.fromkeys(ticket_ids))

    @property
    def waiter_count(self) -> int:
        return sum(len(futures) for futures in self._ticket_waiters.values())

    def notify(self, seq: int, tickets: Sequence[Ticket | Moved], touched: Sequence[int] = ()
               ) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        committed = time.perf_counter()  # services notify right after their commit
        if threading.get_ident() == self._loop_thread:
            self._dispatch(seq, tickets, touched, committed)
        elif not call_after_batch(loop, self._dispatch, seq, tickets, touched, committed):
            loop.call_soon_threadsafe(self._dispatch, seq, tickets, touched, committed)

    def _dispatch(self, seq: int, tickets: Sequence[Ticket | Moved], touched: Sequence[int],
                  committed: float | None = None) -> None:
        states: dict[int, Ticket | Moved | None] = dict.fromkeys(touched)
        states.update((ticket.id, ticket) for ticket in tickets)
        self._wake(seq, states, states_changed=any(_has_deadline(t) for t in tickets),
                   committed=committed)

    def _wake(self, seq: int, states: dict[int, Ticket | Moved | None], *,
              states_changed: bool = True, committed: float | None = None) -> None:
        """Resolve the waiters of each ticket with its new state (``None``: read it back)
        and set every log signal; the state signals too unless no new state can bring a
        deadline closer (``states_changed`` false: only messages were added, or no
        ticket written has a deadline). Runs on the bound event loop."""
        self.last_seq = max(self.last_seq, seq)
        seqs = self._ticket_seqs
        for ticket_id, state in states.items():
            seqs[ticket_id] = max(seq, seqs.pop(ticket_id, 0))
            for future in self._ticket_waiters.pop(ticket_id, ()):
                if not future.done():
                    future.set_result(state)
                    if committed is not None:  # the wake latency, as the waiter sees it
                        WAKE_LATENCY.observe(time.perf_counter() - committed)
        for signal in self._log_signals:
            signal.event.set()
        if states_changed:
            for signal in self._state_signals:
                signal.event.set()
        while len(seqs) > _TICKET_SEQS:
            seqs.popitem(last=False)

    def subscribe(self, topic: str, handler: Callable[[str], None]) -> None:
        """Have ``handler`` called (on the bound event loop) with each message another
        process ``broadcast`` on ``topic``, e.g. the sign-in throttles' failures. Topics
        are a few fixed names (``[a-z_]+``); subscribe before ``start``."""
        self._topics[topic] = handler

    def broadcast(self, topic: str, message: str) -> None:
        """Send ``message`` (text, at most ``MESSAGE_MAX`` bytes) to the other processes
        serving the same database, best effort and without blocking the caller: there
        are none with this bus."""

    def quiet_since(self, ticket_id: int, seq: int) -> bool:
        """True when this bus has seen the notification of ``seq`` for the ticket and
        none after it: nothing about the ticket changed since. False when it can not
        tell (not seen, or forgotten): read the ticket back."""
        return self._ticket_seqs.get(ticket_id) == seq

    @contextmanager
    def ticket_signal(self, ticket_id: int) -> Iterator[asyncio.Future[Ticket | Moved | None]]:
        """A future resolved with the ticket's new state at its next change: a
        ``Ticket``, a ``Moved`` (``domain.tickets.state_after`` makes it one), or
        ``None`` (read it back)."""
        future: asyncio.Future[Ticket | Moved | None] = asyncio.get_running_loop().create_future()
        if self.closing:
            future.set_result(None)
        waiters = self._ticket_waiters.setdefault(ticket_id, set())
        waiters.add(future)
        try:
            yield future
        finally:
            left = self._ticket_waiters.get(ticket_id)
            if left is not None:
                left.discard(future)
                if not left:
                    del self._ticket_waiters[ticket_id]

    def log_signal(self) -> AbstractContextManager[LogSignal]:
        """Set at every new event."""
        return _registered(self._log_signals, set_now=self.closing)

    def state_signal(self) -> AbstractContextManager[LogSignal]:
        """Set when a change may bring a deadline closer: a ticket written with a
        ``due_at`` or a deferral end (``next_attention_at``), or a change whose state is
        not known here (another process's, a re-check). Not when only messages were
        added, nor for tickets without deadlines (an answer to one): a burst of those
        costs the deadline loop no reads."""
        return _registered(self._state_signals, set_now=self.closing)


def _has_deadline(ticket: Ticket | Moved) -> bool:
    """Whether this change may bring a deadline closer. A ``Moved`` (a status change
    alone, e.g. an expiry) does not carry the deadline columns, so it counts as a state
    not known here: the deadline loop re-reads."""
    if isinstance(ticket, Moved):
        return True
    return ticket.due_at is not None or ticket.next_attention_at is not None


@contextmanager
def _registered(signals: set[LogSignal], *, set_now: bool) -> Iterator[LogSignal]:
    """A new signal in ``signals`` for the ``with`` block (already set if ``set_now``)."""
    signal = LogSignal()
    if set_now:
        signal.event.set()
    signals.add(signal)
    try:
        yield signal
    finally:
        signals.discard(signal)
