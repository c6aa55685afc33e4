"""The outbox side of channels: turn new events into durable deliveries, hand due ones
to the channel, and record success or schedule a retry with exponential backoff.

Each delivery has an idempotency key ``channel:target:seq``: a crash between sending and
recording means one resend with the same key, which receivers use to drop the repeat.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from datetime import timedelta

from tickethub.domain.events import Event
from tickethub.services.ports import Clock, Delivery, Store

_BATCH = 500
_CURSOR_LAG = 1000


class DeliveryService:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        max_attempts: int,
        backoff_seconds: float,
        backoff_max_seconds: float,
        attempt_seconds: float = 10.0,
    ) -> None:
        self._store = store
        self._clock = clock
        self._max_attempts = max_attempts
        self._backoff = backoff_seconds
        self._backoff_max = backoff_max_seconds
        self._claim_seconds = attempt_seconds  # the longest one attempt may take
        self._scanned: dict[str, int] = {}  # per channel: seen up to here, no targets
        self._has_cursor: set[str] = set()  # channels whose stored cursor exists

    def enqueue_new(self, channel: str, targets: Callable[[Event], Sequence[str]]) -> int:
        """Enqueue deliveries for events after the channel's cursor; a channel seen for the
        first time starts at the end of the log. Returns how many were enqueued.

        Events that no target wants are skipped with a read only: the stored cursor moves
        when deliveries are enqueued or every ``_CURSOR_LAG`` events, so an idle channel
        costs no write per event. After a crash the few skipped events are looked at
        again, which is harmless: enqueueing is idempotent by key."""
        with self._store.read() as uow:
            stored = uow.deliveries.cursor(channel)
            if stored is not None:
                self._has_cursor.add(channel)
                start = max(stored, self._scanned.get(channel, stored))
                events = uow.events.since(start, limit=_BATCH)
                wanted = [(event, target) for event in events for target in targets(event)]
                if not events:
                    return 0
                if not wanted and events[-1].seq - stored < _CURSOR_LAG:
                    self._scanned[channel] = events[-1].seq
                    return 0
        now = self._clock.now()
        with self._store.write() as uow:
            cursor = uow.deliveries.cursor(channel, for_update=True)
            if cursor is None:
                uow.deliveries.set_cursor(channel, uow.events.last_seq())
                self._has_cursor.add(channel)
                return 0
            events = uow.events.since(cursor, limit=_BATCH)
            count = 0
            for event in events:
                for target in targets(event):
                    key = f"{channel}:{target}:{event.seq}"
                    count += uow.deliveries.enqueue(channel, target, event.seq, key, now)
            if events:
                uow.deliveries.set_cursor(channel, events[-1].seq)
                self._scanned[channel] = events[-1].seq
        return count

    def skip_to(self, channel: str, seq: int) -> bool:
        """The channel wants none of the events up to ``seq`` (it has no targets): the
        next ``enqueue_new`` starts after them. No I/O; the stored cursor stays behind,
        and after a restart the skipped events are looked at once more. False (nothing
        skipped) until ``enqueue_new`` has seen the channel's stored cursor, which it
        sets on first use."""
        if channel not in self._has_cursor:
            return False
        self._scanned[channel] = max(self._scanned.get(channel, 0), seq)
        return True

    def due(self, channel: str, limit: int = 20) -> builtins.list[tuple[Delivery, Event]]:
        """Pending deliveries whose time has come, each with its event, claimed for this
        process (several hub processes never send one at once): the claim lasts long
        enough to try them all one after another; if this process dies first, they are
        tried again when it runs out."""
        now = self._clock.now()
        until = now + timedelta(seconds=self._claim_seconds * limit + 30)
        with self._store.read() as uow:  # most rounds find nothing: no write for that
            if not uow.deliveries.claim(channel, now, 1, None):
                return []
        with self._store.write() as uow:
            result = []
            for delivery in uow.deliveries.claim(channel, now, limit, until):
                found = uow.events.since(delivery.event_seq - 1, limit=1)
                if found and found[0].seq == delivery.event_seq:
                    result.append((delivery, found[0]))
            return result

    def succeeded(self, delivery: Delivery) -> None:
        with self._store.write() as uow:
            uow.deliveries.mark_delivered(delivery.id, self._clock.now())

    def failed(self, delivery: Delivery, error: str, retry_after: float | None = None) -> bool:
        """Record a failed attempt; returns True if it will be retried, False if dead."""
        attempts = delivery.attempts + 1
        retry_at = None
        if attempts < self._max_attempts:
            delay = min(self._backoff * 2 ** (attempts - 1), self._backoff_max)
            if retry_after is not None:
                delay = max(delay, retry_after)
            retry_at = self._clock.now() + timedelta(seconds=delay)
        with self._store.write() as uow:
            uow.deliveries.mark_failed(delivery.id, error, retry_at)
        return retry_at is not None

    def list(self, channel: str | None = None, status: str | None = None,
             limit: int = 100) -> builtins.list[Delivery]:
        with self._store.read() as uow:
            return uow.deliveries.list(channel, status, limit)
