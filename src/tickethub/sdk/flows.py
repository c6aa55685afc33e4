"""The SDK's multi-step operations (wait, paging, the event stream), written once.

A flow is a generator that yields *instructions* (:class:`Send`, :class:`Open`,
:class:`ReadLine`, :class:`Sleep`, :class:`Emit`) and receives their results. It does no
I/O itself: the sync :class:`~tickethub.sdk.client.Hub` and the async
:class:`~tickethub.sdk.async_client.AsyncHub` each run flows with a small driver, so
retry, backoff, resume and paging rules exist in exactly one place. A transport failure
is thrown into the flow at the instruction that caused it (as ``httpx.TransportError``).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from tickethub.sdk.calls import Call, Endpoints
from tickethub.sdk.errors import RETRYABLE_STATUSES, HubError, unreachable
from tickethub.sdk.models import Event, Ticket
from tickethub.sdk.sse import SSEDecoder

T = TypeVar("T")


@dataclass(frozen=True)
class Send:
    """Send ``call``; the result is its ``httpx.Response`` (body read)."""

    call: Call[Any]


@dataclass(frozen=True)
class Open:
    """Send ``call`` as a stream; the result is the response with the body unread
    (read when status >= 400). The driver closes it on the next ``Open`` or at the end."""

    call: Call[Any]


@dataclass(frozen=True)
class ReadLine:
    """The next line of the open stream, or ``None`` when the server closed it."""


@dataclass(frozen=True)
class Sleep:
    """Pause before a retry; ``error`` is what went wrong (``None``: a routine
    reconnection, e.g. the server closed an event stream)."""

    seconds: float
    error: HubError | None = None


@dataclass(frozen=True)
class Emit:
    """Hand ``item`` to whoever iterates the flow."""

    item: Any


Instruction = Send | Open | ReadLine | Sleep | Emit
Flow = Generator[Instruction, Any, T]


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter: attempt ``n`` sleeps ``first * factor**n`` capped
    at ``cap`` seconds, times a random factor in ``[1 - jitter, 1]`` so that many clients
    do not hammer a restarting hub in step."""

    first: float = 0.25
    factor: float = 2.0
    cap: float = 5.0
    jitter: float = 0.5

    def delay(self, attempt: int, rng: Callable[[], float] = random.random) -> float:
        base = min(self.cap, self.first * self.factor ** min(attempt, 64))
        return base * (1 - self.jitter * rng())


def request(call: Call[T]) -> Flow[T]:
    """Send one call and parse the reply; any failure raises a :class:`HubError`."""
    try:
        response = yield Send(call)
    except httpx.TransportError as exc:
        raise unreachable(exc) from exc
    return call.parse(response)


def _attempt(call: Call[T]) -> Flow[tuple[T | None, HubError | None]]:
    """Like :func:`request`, but a failure worth retrying (no response, 429, 502-504) is
    returned as ``(None, error)`` instead of raised."""
    try:
        response = yield Send(call)
    except httpx.TransportError as exc:
        return None, unreachable(exc)
    try:
        return call.parse(response), None
    except HubError as err:
        if err.status in RETRYABLE_STATUSES:
            return None, err
        raise


def wait(api: Endpoints, ticket_id: int, timeout: float | None, poll_seconds: float,
         backoff: Backoff, clock: Callable[[], float] = time.monotonic) -> Flow[Ticket]:
    """Long-poll until the ticket leaves the waiting states; return it.

    Each poll asks the hub to hold the request up to ``poll_seconds``. When the hub cannot
    be reached or answers 502/503/504 (it is restarting, say), sleep with ``backoff`` and
    poll again by ticket id: a restart costs a delay, never the wait. When ``timeout``
    seconds pass first, return the last state seen (still waiting); if the hub was never
    reached, raise :class:`HubUnavailable`. Errors that a retry cannot fix (404, 401...)
    are raised at once.
    """
    deadline = None if timeout is None else clock() + max(0.0, timeout)
    last: Ticket | None = None
    failures = 0
    while True:
        remaining = None if deadline is None else deadline - clock()
        poll = poll_seconds if remaining is None else max(0.0, min(poll_seconds, remaining))
        ticket, error = yield from _attempt(api.wait(ticket_id, poll))
        if ticket is not None:
            failures, last = 0, ticket
            if not ticket.waiting:
                return ticket
        remaining = None if deadline is None else deadline - clock()
        if remaining is not None and remaining <= 0:
            if last is not None:
                return last
            assert error is not None
            raise error
        if error is not None:
            delay = backoff.delay(failures)
            failures += 1
            yield Sleep(delay if remaining is None else min(delay, remaining), error)


def ask_and_wait(api: Endpoints, ask: Call[Ticket], timeout: float | None, poll_seconds: float,
                 backoff: Backoff) -> Flow[Ticket]:
    ticket: Ticket = yield from request(ask)
    return (yield from wait(api, ticket.id, timeout, poll_seconds, backoff))


def tickets(api: Endpoints, filters: dict[str, Any], limit: int) -> Flow[None]:
    """Emit every ticket matching ``filters``, following ``next_cursor`` page by page."""
    cursor = None
    while True:
        items, cursor = yield from request(api.tickets(**filters, cursor=cursor, limit=limit))
        for item in items:
            yield Emit(item)
        if not cursor:
            return


def events(api: Endpoints, since: int, ticket_id: int | None, subtree: int | None,
           limit: int = 100) -> Flow[None]:
    """Emit every event after ``since`` up to the current end of the log."""
    while True:
        items, last_seq = yield from request(
            api.events(since, ticket_id=ticket_id, subtree=subtree, limit=limit))
        for item in items:
            yield Emit(item)
        if len(items) < limit:
            return
        since = last_seq


def event_stream(api: Endpoints, since: int | None, ticket_id: int | None,
                 subtree: int | None, backoff: Backoff, read_timeout: float = 60.0
                 ) -> Flow[None]:
    """Emit live events forever, reconnecting after any drop.

    Without ``since`` it starts at the current end of the log (read from ``/healthz``)
    so that even the first reconnection knows where to resume. Reconnections send
    ``Last-Event-ID`` with the seq of the last event emitted: nothing is missed or
    repeated across a hub restart. A refusal a retry cannot fix (401, 409 cursor ahead of
    the log) is raised.
    """
    if since is None:
        since = int((yield from request(api.health()))["last_seq"])
    resume, failures = False, 0
    while True:
        call = api.event_stream(since, resume=resume, ticket_id=ticket_id, subtree=subtree,
                                read_timeout=read_timeout)
        error: HubError | None = None
        try:
            response = yield Open(call)
            api.check(response)
        except httpx.TransportError as exc:
            error = unreachable(exc)
        except HubError as err:
            if err.status not in RETRYABLE_STATUSES:
                raise
            error = err
        else:
            resume, failures = True, 0
            decoder = SSEDecoder()
            while True:
                try:
                    line = yield ReadLine()
                except httpx.TransportError as exc:
                    error = unreachable(exc)
                    break
                if line is None:
                    break
                message = decoder.feed(line)
                if message is None:
                    continue
                event = Event.from_json(json.loads(message.data))
                since = event.seq
                yield Emit(event)
        yield Sleep(backoff.delay(failures), error)
        failures += 1
