"""The series read at scrape time: counts from the database and from the hub's memory.

Contracts:

* The database is read at most once per ``cache_seconds`` (a scrape inside that window
  gets the cached numbers), so scraping every second costs a few small queries every
  few seconds, whatever the scrape rate.
* Counters that come from the event log and the mail table (answers by channel, events
  by type, deadline expiries, mails ingested) are read incrementally: each read looks
  only at rows after the last one seen, so their cost follows the write rate, not the
  size of the database. They count everything in the database (the first scrape reads
  the whole log once), so they never go down across restarts.
* Every label is bounded: statuses, kinds and event types are the domain's enums,
  channels are the hub's outbound channel names, an answer's channel (which a client
  may name freely) is one of :data:`ANSWER_CHANNELS` or ``other``.
"""

from __future__ import annotations

import threading
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import Connection, Engine, func, select

from tickethub.domain.events import EventType
from tickethub.services.throttle import Throttles
from tickethub.store.mail_store import mail_messages, mail_quarantine
from tickethub.store.tables import channel_cursors, deliveries, events, tickets

#: Answer channels named as they are; anything else a client sends is ``other``.
ANSWER_CHANNELS = frozenset({
    "api", "cli", "web", "sdk", "github", "email", "mail", "matrix", "chat", "slack",
    "mattermost", "telegram", "ap", "agent-protocol", "openai", "mcp", "agent", "system",
})
_SCAN_BATCH = 10_000  # rows read per incremental step, so one scrape stays bounded


def answer_channel(via: object) -> str:
    text = str(via or "").lower()
    return text if text in ANSWER_CHANNELS else "other"


@dataclass
class _Snapshot:
    tickets: dict[tuple[str, str], int] = field(default_factory=dict)
    queue: dict[str, tuple[int, float]] = field(default_factory=dict)  # depth, oldest age
    dead: dict[str, int] = field(default_factory=dict)
    backlog: dict[str, int] = field(default_factory=dict)
    quarantined: int = 0


class HubCollector(Collector):
    """A ``prometheus_client`` collector over one hub's database and memory."""

    def __init__(self, engine: Engine, *, now: Callable[[], datetime], waiters: Callable[[], int],
                 throttles: Throttles, channels: Callable[[], list[str]],
                 cache_seconds: float = 5.0) -> None:
        self._engine = engine
        self._now = now
        self._waiters = waiters
        self._throttles = throttles
        self._channels = channels
        self._cache_seconds = cache_seconds
        self._lock = threading.Lock()
        self._read_at = float("-inf")
        self._snapshot = _Snapshot()
        # incremental counters: cursor and totals
        self._event_seq = 0
        self._events: Tally[str] = Tally()
        self._answers: Tally[str] = Tally()
        self._mail_seq = 0
        self._mails = 0

    def refresh(self) -> None:
        """Read the database now if the cached numbers are older than ``cache_seconds``."""
        with self._lock:
            if time.monotonic() - self._read_at < self._cache_seconds:
                return
            with self._engine.connect() as conn:
                self._read_events(conn)
                self._read_mails(conn)
                self._snapshot = self._read_snapshot(conn)
            self._read_at = time.monotonic()

    def _read_events(self, conn: Connection) -> None:
        while True:
            last = conn.execute(select(func.max(events.c.seq)).where(
                events.c.seq > self._event_seq,
                events.c.seq <= self._event_seq + _SCAN_BATCH)).scalar()
            if last is None:
                # a gap longer than a batch (or nothing new): jump to the next seq if any
                nxt = conn.execute(select(func.min(events.c.seq)).where(
                    events.c.seq > self._event_seq)).scalar()
                if nxt is None:
                    return
                self._event_seq = int(nxt) - 1
                continue
            window = (events.c.seq > self._event_seq) & (events.c.seq <= last)
            for kind, count in conn.execute(
                    select(events.c.type, func.count()).where(window).group_by(events.c.type)):
                self._events[str(kind)] += int(count)
            for (data,) in conn.execute(select(events.c.data).where(
                    window, events.c.type == EventType.TICKET_ANSWERED.value)):
                self._answers[answer_channel((data or {}).get("via"))] += 1
            self._event_seq = int(last)

    def _read_mails(self, conn: Connection) -> None:
        row = conn.execute(select(func.count(), func.max(mail_messages.c.seq)).where(
            mail_messages.c.seq > self._mail_seq)).one()
        if row[1] is not None:
            self._mails += int(row[0])
            self._mail_seq = int(row[1])

    def _read_snapshot(self, conn: Connection) -> _Snapshot:
        snap = _Snapshot()
        for status, kind, count in conn.execute(
                select(tickets.c.status, tickets.c.kind, func.count())
                .group_by(tickets.c.status, tickets.c.kind)):
            snap.tickets[(str(status), str(kind))] = int(count)
        now = self._now()
        for channel, count, oldest in conn.execute(
                select(deliveries.c.channel, func.count(), func.min(deliveries.c.created_at))
                .where(deliveries.c.status == "pending").group_by(deliveries.c.channel)):
            age = max(0.0, (now - oldest).total_seconds()) if oldest is not None else 0.0
            snap.queue[str(channel)] = (int(count), age)
        for channel, count in conn.execute(
                select(deliveries.c.channel, func.count())
                .where(deliveries.c.status == "dead").group_by(deliveries.c.channel)):
            snap.dead[str(channel)] = int(count)
        last_seq = int(conn.execute(select(func.coalesce(func.max(events.c.seq), 0))).scalar()
                       or 0)
        cursors = dict(conn.execute(select(channel_cursors.c.channel,
                                           channel_cursors.c.last_seq)).all())
        for channel in self._channels():
            snap.backlog[channel] = max(0, last_seq - int(cursors.get(channel, last_seq)))
        snap.quarantined = int(conn.execute(
            select(func.count()).select_from(mail_quarantine)).scalar() or 0)
        return snap

    def collect(self) -> Iterator[Metric]:
        self.refresh()
        snap = self._snapshot
        g = GaugeMetricFamily("tickethub_tickets", "Tickets by status and kind (from the "
                              "database, cached briefly).", labels=["status", "kind"])
        for (status, kind), count in sorted(snap.tickets.items()):
            g.add_metric([status, kind], count)
        yield g
        c = CounterMetricFamily("tickethub_events", "Events written to the log, by type "
                                "(all processes on this database).", labels=["type"])
        for kind in EventType:
            c.add_metric([kind.value], self._events.get(kind.value, 0))
        yield c
        c = CounterMetricFamily("tickethub_answers", "Answers and decisions, by the channel "
                                "they came through.", labels=["channel"])
        for channel, count in sorted(self._answers.items()):
            c.add_metric([channel], count)
        yield c
        yield CounterMetricFamily("tickethub_deadline_expiries", "Tickets expired because "
                                  "their deadline passed.",
                                  value=self._events.get(EventType.TICKET_EXPIRED.value, 0))
        depth = GaugeMetricFamily("tickethub_delivery_queue_depth", "Deliveries waiting to "
                                  "be sent (pending), by channel.", labels=["channel"])
        age = GaugeMetricFamily("tickethub_delivery_queue_oldest_seconds", "Age of the "
                                "oldest pending delivery, by channel (0: none).",
                                labels=["channel"])
        dead = GaugeMetricFamily("tickethub_delivery_dead", "Deliveries given up on (dead), "
                                 "by channel.", labels=["channel"])
        backlog = GaugeMetricFamily("tickethub_delivery_backlog_events", "Events a channel "
                                    "has not looked at yet.", labels=["channel"])
        for channel in sorted(set(self._channels()) | set(snap.queue) | set(snap.dead)):
            count, oldest = snap.queue.get(channel, (0, 0.0))
            depth.add_metric([channel], count)
            age.add_metric([channel], oldest)
            dead.add_metric([channel], snap.dead.get(channel, 0))
            if channel in snap.backlog:
                backlog.add_metric([channel], snap.backlog[channel])
        yield from (depth, age, dead, backlog)
        yield CounterMetricFamily("tickethub_mail_ingested", "Mails the mailbox pipeline "
                                  "has processed (rate() of it is the ingest rate).",
                                  value=self._mails)
        yield GaugeMetricFamily("tickethub_mail_quarantined", "Mails kept in quarantine.",
                                value=snap.quarantined)
        yield GaugeMetricFamily("tickethub_bus_waiters", "Waiters registered on this "
                                "process's bus for a ticket's change (all doors).",
                                value=self._waiters())
        locked = GaugeMetricFamily("tickethub_signin_locked_keys", "Accounts or client "
                                   "addresses that must wait before their next attempt, by "
                                   "throttle.", labels=["throttle"])
        refused = CounterMetricFamily("tickethub_signin_throttled", "Sign-in, link and token "
                                      "attempts refused while locked, by throttle.",
                                      labels=["throttle"])
        for name, throttle in self._throttles.all().items():
            locked.add_metric([name], throttle.locked_keys())
            refused.add_metric([name], throttle.refused)
        yield locked
        yield refused

