"""Waiting for a ticket to be resolved, woken by the bus within milliseconds.

The same pattern as the native ``/wait`` endpoint: register with the bus *before*
reading the ticket, so a change committed between the read and the sleep still wakes us.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Protocol

import anyio

from tickethub.domain.tickets import Moved, Ticket, state_after


class TicketSignals(Protocol):
    closing: bool  # the hub is shutting down: stop waiting

    def ticket_signal(self, ticket_id: int) -> AbstractContextManager[
            asyncio.Future[Ticket | Moved | None]]: ...


async def wait_resolved(
    get: Callable[[int], Ticket],
    bus: TicketSignals,
    ticket_id: int,
    timeout: float,
    *,
    tick: float | None = None,
    on_tick: Callable[[], Awaitable[None]] | None = None,
) -> Ticket:
    """The ticket once it leaves the waiting states, or its current state after
    ``timeout`` seconds or once the hub shuts down (``bus.closing``). ``get`` is the
    (blocking) service read, run in a worker thread. Every ``tick`` seconds of silence
    ``on_tick`` runs (keep-alives for a held stream)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(timeout, 0.0)
    read = functools.partial(anyio.to_thread.run_sync, functools.partial(get, ticket_id))
    while True:
        with bus.ticket_signal(ticket_id) as changed:
            ticket = await read()
            while True:
                remaining = deadline - loop.time()
                if not ticket.waiting or remaining <= 0 or bus.closing:
                    return ticket
                step = min(remaining, tick) if tick and on_tick else remaining
                try:
                    fresh = state_after(await asyncio.wait_for(asyncio.shield(changed), step),
                                        ticket)
                except TimeoutError:
                    if on_tick is not None and loop.time() < deadline:
                        await on_tick()
                    continue
                if fresh is not None and not fresh.waiting:
                    return fresh
                break  # changed but still waiting: register again and re-read


