"""The one write path of ticket commands: asks, changes (answer, approve, deny,
transition, assign, label, link) and messages, any mix in one transaction.

``TicketWriter.write(items)`` is the commit function of a group commit
(``tickethub.group_commit``): requests that arrive while a transaction runs go in
together in the next, so under load a command costs a share of one commit. Per batch:
one read of the tickets it changes (locked), one ``INSERT`` per table for new tickets,
labels, refs, messages and events, one ``UPDATE`` for changed tickets, and one wake-up
after commit. Nothing written is read back: results are built from what was written.

Every item succeeds or fails on its own. Its checks (readable, allowed, version,
transition, idempotency) run before anything is written, and an item that fails them
gets its error in its place and changes nothing. Should the transaction itself fail, the
items are written again one per transaction, so only the item that causes it fails;
unless the database is out of reach (``DatabaseUnavailable``): then every item of the
batch gets that error at once, and the writer takes the next batch as usual.
Items of one batch are concurrent requests; they are written in the order given, and
several changes of one ticket in a batch apply one after another, each on the state the
one before left.

Validation that needs no transaction (titles, schemas, NUL characters) is the caller's
(``TicketService``), before the item is queued: no check runs under the write lock.

Doors with records of their own join the same transactions instead of writing apart:

* an ``Ask`` may carry a ``companion``: rows written with its ticket (the Agent Protocol
  door's task row), by the companion's ``CompanionWriter``, once per batch for all the
  asks that carry one of its kind; the tickets of all asks are one ``INSERT``;
* a ``WritePart`` (added with ``TicketWriter.add_part``) writes items of kinds of its own
  (the Agent Protocol door's steps and in-hub replies) inside the batch's transaction,
  adding its events, tickets to wake and results to the batch's.

Order within a transaction: asks (and their companions), then each part's ``early``
items (replies to steps of earlier transactions), changes, messages, then each part's
other items; one ``INSERT`` of the events of all, one wake-up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from tickethub.domain.actors import Actor
from tickethub.domain.events import EventType, NewEvent
from tickethub.domain.messages import Message, MessageDraft, MessageKind
from tickethub.domain.tickets import Ticket, TicketDraft
from tickethub.errors import (
    DatabaseUnavailable,
    IdempotencyKeyReused,
    NotFound,
    StaleVersion,
    TickethubError,
    ValidationFailed,
    WouldBlock,
)
from tickethub.ops.request_id import current as current_request_id
from tickethub.services.ports import Clock, Notifier, Store, UnitOfWork
from tickethub.services.visibility import not_found, readable

MAX_TREE_DEPTH = 32

Describe = Callable[[Ticket, Ticket], tuple[EventType, dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Ask:
    """Open a ticket (``draft`` already checked). A repeated ``idempotency_key`` of the
    same actor returns the first ticket, if ``request_hash`` matches."""

    actor: Actor
    draft: TicketDraft
    idempotency_key: str | None = None
    request_hash: str | None = None
    # Taken where the item is made, in its request's context (the batch runs elsewhere).
    request_id: str | None = field(default_factory=current_request_id)
    # Rows written with the ticket (see the module doc); its result replaces ``Asked``.
    companion: Companion | None = None


class Companion(Protocol):
    """What an ``Ask`` carries for a door's own rows written with its ticket."""

    @property
    def writer(self) -> CompanionWriter:
        """Writes every companion of its kind in a batch (one object per kind)."""

    @property
    def event_data(self) -> Mapping[str, Any]:
        """More members for the ticket's ``ticket.created`` event."""


class CompanionWriter(Protocol):
    def write_companions(self, uow: UnitOfWork,
                         opened: Sequence[tuple[Any, Ticket]], now: datetime
                         ) -> Sequence[Any]:
        """Write the rows of these ``(companion, ticket)`` pairs (tickets just added, in
        this transaction); the result of each ask, in order."""


class WritePart(Protocol):
    """Writes a door's own kinds of items in the ticket writer's transactions."""

    @property
    def kinds(self) -> tuple[type, ...]:
        """The item types it writes."""

    def early(self, item: Any) -> bool:
        """Written before the batch's ticket changes (e.g. a reply to an earlier step)."""

    def write_part(self, uow: UnitOfWork, items: Sequence[tuple[int, Any]],
                   batch: WriteBatch) -> None:
        """Write ``(index, item)`` pairs: each result into ``batch.results[index]`` (an
        error for an item that changes nothing), new events into ``batch.events``,
        changed tickets into ``batch.states`` or their ids into ``batch.touched``; what
        can only be known after the events are stored (their seq) in ``batch.after``."""


@dataclass(frozen=True, slots=True)
class Asked:
    ticket: Ticket
    created: bool


@dataclass(frozen=True, slots=True)
class Change:
    """Change a ticket the actor reads: ``apply`` makes the new state from the current
    one (raising a ``TickethubError`` to refuse), ``describe`` names its event;
    ``message``, if given, makes a message stored with it (a decision), whose id joins the
    event's data as ``message_id``."""

    actor: Actor
    ticket_id: int
    apply: Callable[[Ticket, datetime], Ticket]
    describe: Describe
    expected_version: int | None = None
    message: Callable[[Ticket], MessageDraft] | None = None
    # Taken where the item is made, in its request's context (the batch runs elsewhere).
    request_id: str | None = field(default_factory=current_request_id)


@dataclass(frozen=True, slots=True)
class Post:
    """Add a message to a ticket the actor reads. A repeated ``(via, external_id)``
    returns the stored message and changes nothing. ``trusted`` may only lower what the
    actor's role allows."""

    actor: Actor
    ticket_id: int
    body: str
    via: str
    external_id: str | None = None
    trusted: bool | None = None
    data: Any = None
    # Taken where the item is made, in its request's context (the batch runs elsewhere).
    request_id: str | None = field(default_factory=current_request_id)


TicketWrite = Ask | Change | Post
TicketWritten = Asked | Ticket | Message | Exception


@dataclass(slots=True)
class WriteBatch:
    """What one transaction collects: results by item, rows to write, whom to wake, and
    what to finish once the events are stored (called with the last event's seq)."""

    now: datetime
    results: list[Any]
    events: list[NewEvent]
    states: dict[int, Ticket]
    touched: set[int]
    after: list[Callable[[int], None]] = field(default_factory=list)


class TicketWriter:
    """Writes ticket commands, any mix in one transaction (see the module doc)."""

    def __init__(self, store: Store, clock: Clock, notifier: Notifier,
                 parts: Sequence[WritePart] = ()) -> None:
        self._store = store
        self._clock = clock
        self._notifier = notifier
        self._parts: dict[type, WritePart] = {}
        for part in parts:
            self.add_part(part)

    def add_part(self, part: WritePart) -> None:
        """Write items of ``part.kinds`` with ``part`` from now on (replacing whatever
        wrote those kinds before)."""
        for kind in part.kinds:
            self._parts[kind] = part

    def write_one(self, item: TicketWrite) -> TicketWritten:
        """``write([item])``'s result, raising the item's error."""
        [result] = self.write([item])
        if isinstance(result, Exception):
            raise result
        written: TicketWritten = result
        return written

    def write(self, items: Sequence[Any]) -> list[Any]:
        """Write ``items`` in one transaction; each result in its item's place: ``Asked``
        (or its companion's result) for an ``Ask``, the new ``Ticket`` for a ``Change``,
        the ``Message`` for a ``Post``, a part's result for a part's item, or the error
        that kept the item out."""
        try:
            batch, written = self._transaction(items, self._store.write)
        except Exception as exc:  # nothing of the batch is stored
            if len(items) == 1 or isinstance(exc, DatabaseUnavailable):
                return [exc] * len(items)  # (an outage fails them all alike)
            # Try each alone, so only what broke the transaction fails.
            return [self.write([item])[0] for item in items]
        self._notify(batch, written)
        return batch.results  # every place filled, replays resolved (``_asks``)

    def write_now(self, items: Sequence[Any]) -> list[Any]:
        """``write(items)`` without waiting for the database's write lock, for the event
        loop's own commits (``group_commit``): raises :class:`WouldBlock` when the store
        cannot write at once (not SQLite, the lock held elsewhere) or when the
        transaction failed (then ``write`` sorts out, on a thread, which item broke it).
        Either way nothing of ``items`` is stored."""
        write_now = getattr(self._store, "write_now", None)
        if write_now is None:
            raise WouldBlock("the store has no write_now")
        try:
            batch, written = self._transaction(items, write_now)
        except WouldBlock:
            raise
        except Exception as exc:  # rolled back: nothing stored
            raise WouldBlock(f"the transaction failed: {exc!r}") from exc
        self._notify(batch, written)
        return batch.results

    def _notify(self, batch: WriteBatch, written: Sequence[Any]) -> None:
        if written:
            self._notifier.notify(written[-1].seq, list(batch.states.values()),
                                  touched=sorted(batch.touched - set(batch.states)))

    def _transaction(self, items: Sequence[Any],
                     open_write: Callable[[], AbstractContextManager[UnitOfWork]]
                     ) -> tuple[WriteBatch, Sequence[Any]]:
        """Write ``items`` in one transaction opened by ``open_write``: the batch and the
        events written (the caller notifies, once it is committed)."""
        batch = WriteBatch(self._clock.now(), [None] * len(items), [], {}, set())
        asks: list[tuple[int, Ask]] = []
        changes: list[tuple[int, Change]] = []
        posts: list[tuple[int, Post]] = []
        early: dict[int, tuple[WritePart, list[tuple[int, Any]]]] = {}
        late: dict[int, tuple[WritePart, list[tuple[int, Any]]]] = {}
        for i, x in enumerate(items):
            if isinstance(x, Ask):
                asks.append((i, x))
            elif isinstance(x, Change):
                changes.append((i, x))
            elif isinstance(x, Post):
                posts.append((i, x))
            else:
                part = self._parts.get(type(x))
                if part is None:
                    raise TypeError(f"no writer for {type(x).__name__}")
                into = early if part.early(x) else late
                into.setdefault(id(part), (part, []))[1].append((i, x))
        with open_write() as uow:
            if asks:
                self._asks(uow, asks, batch)
            for part, some in early.values():
                part.write_part(uow, some, batch)
            if changes or posts:
                ids = {x.ticket_id for _, x in changes} | {x.ticket_id for _, x in posts}
                current = uow.tickets.get_many(sorted(ids), for_update=bool(changes))
                if changes:
                    self._changes(uow, changes, current, batch)
                if posts:
                    self._posts(uow, posts, current, batch)
            for part, some in late.values():
                part.write_part(uow, some, batch)
            written = uow.events.append_many(batch.events, batch.now) if batch.events else []
            for finish in batch.after:
                finish(written[-1].seq if written else 0)
        return batch, written

    # -- asks ----------------------------------------------------------------------------

    def _asks(self, uow: UnitOfWork, asks: list[tuple[int, Ask]], batch: WriteBatch) -> None:
        accepted: list[tuple[int, Ask]] = []
        keyed: dict[tuple[str, str], int] = {}  # (actor, key) -> index of the first ask
        parents: dict[int, Ticket | None] = {}
        stored = self._stored_keys(uow, asks)
        for index, item in asks:
            try:
                if item.idempotency_key:
                    key = (item.actor.name, item.idempotency_key)
                    if key in keyed:  # the same key twice in one batch: as the first goes
                        batch.results[index] = _Replay(keyed[key], item.request_hash)
                        continue
                    found = stored.get(key)
                    if found is not None:
                        batch.results[index] = _replayed(found[0], found[1], item.request_hash)
                        continue
                    keyed[key] = index
                self._check_parent(uow, item, parents)
            except TickethubError as exc:
                batch.results[index] = exc
                continue
            accepted.append((index, item))
        if accepted:
            tickets = uow.tickets.add_many(
                [(item.draft, item.actor.name) for _, item in accepted], batch.now,
                [(item.idempotency_key, item.request_hash) for _, item in accepted])
            companions: dict[int, tuple[CompanionWriter, list[tuple[int, Any, Ticket]]]] = {}
            for (index, item), ticket in zip(accepted, tickets, strict=True):
                batch.results[index] = Asked(ticket, True)
                batch.states[ticket.id] = ticket
                data = {"kind": ticket.kind.value, "title": ticket.title,
                        "parent_id": ticket.parent_id, "status": ticket.status.value}
                if item.companion is not None:
                    data.update(item.companion.event_data)
                    writer = item.companion.writer
                    companions.setdefault(id(writer), (writer, []))[1].append(
                        (index, item.companion, ticket))
                batch.events.append(NewEvent(EventType.TICKET_CREATED, ticket.id, ticket.path,
                                             item.actor.name, data, item.request_id))
            for writer, opened in companions.values():
                results = writer.write_companions(
                    uow, [(companion, ticket) for _, companion, ticket in opened], batch.now)
                for (index, _, _), result in zip(opened, results, strict=True):
                    batch.results[index] = result
        for index, _ in asks if keyed else ():  # replays exist only with keys
            replay = batch.results[index]
            if isinstance(replay, _Replay):
                first = batch.results[replay.first]
                first_hash = next(x.request_hash for i, x in asks if i == replay.first)
                batch.results[index] = (
                    _replayed(first.ticket, first_hash, replay.request_hash)
                    if isinstance(first, Asked) else first)

    @staticmethod
    def _stored_keys(uow: UnitOfWork, asks: list[tuple[int, Ask]]
                     ) -> dict[tuple[str, str], tuple[Ticket, str | None]]:
        """The stored tickets of the asks' idempotency keys, by (actor, key): one query
        per actor of the batch, not one per ask."""
        keys: dict[str, list[str]] = {}
        for _, item in asks:
            if item.idempotency_key:
                keys.setdefault(item.actor.name, []).append(item.idempotency_key)
        return {(name, key): found for name, wanted in keys.items()
                for key, found in uow.tickets.find_idempotent_many(name, wanted).items()}

    @staticmethod
    def _check_parent(uow: UnitOfWork, item: Ask, parents: dict[int, Ticket | None]) -> None:
        parent_id = item.draft.parent_id
        if parent_id is None:
            return
        if parent_id not in parents:
            parents[parent_id] = uow.tickets.get(parent_id)
        parent = parents[parent_id]
        if parent is None or not readable(uow.tickets, item.actor, parent, parent.assignee):
            raise NotFound(f"parent ticket {parent_id} does not exist", field="parent_id")
        if parent.path.count("/") - 1 >= MAX_TREE_DEPTH:
            raise ValidationFailed("the ticket tree is too deep", field="parent_id")

    # -- changes -------------------------------------------------------------------------

    def _changes(self, uow: UnitOfWork, changes: list[tuple[int, Change]],
                 current: dict[int, Ticket], batch: WriteBatch) -> None:
        stored_version = {ticket_id: t.version for ticket_id, t in current.items()}
        state = dict(current)  # each ticket as the changes before left it
        drafts: list[tuple[int, MessageDraft]] = []  # (index into batch.events, draft)
        changed: set[int] = set()
        for index, item in changes:
            before = state.get(item.ticket_id)
            try:
                if before is None or not readable(uow.tickets, item.actor, before,
                                                  before.assignee):
                    raise not_found(item.ticket_id)
                if item.expected_version is not None and item.expected_version != before.version:
                    raise StaleVersion(item.expected_version, before.version)
                after = item.apply(before, batch.now)
                kind, data = item.describe(before, after)
            except TickethubError as exc:
                batch.results[index] = exc
                continue
            state[after.id] = after
            changed.add(after.id)
            batch.results[index] = after
            batch.states[after.id] = after
            if item.message is not None:
                drafts.append((len(batch.events), item.message(after)))
            batch.events.append(NewEvent(kind, after.id, after.path, item.actor.name, data,
                                         item.request_id))
        if not changed:
            return
        uow.tickets.update_many([(state[i], stored_version[i]) for i in sorted(changed)])
        if drafts:
            messages = uow.messages.add_many([d for _, d in drafts], batch.now)
            for (at, _), message in zip(drafts, messages, strict=True):
                event = batch.events[at]
                batch.events[at] = NewEvent(event.type, event.ticket_id, event.ticket_path,
                                            event.actor,
                                            {**event.data, "message_id": message.id},
                                            event.request_id)

    # -- messages ------------------------------------------------------------------------

    @staticmethod
    def _stored_messages(uow: UnitOfWork, posts: list[tuple[int, Post]]
                         ) -> dict[tuple[str, str], Message]:
        """The stored messages of the posts' outside ids, by (via, external_id): one
        query per ``via`` of the batch, not one per post."""
        ids: dict[str, list[str]] = {}
        for _, item in posts:
            if item.external_id is not None:
                ids.setdefault(item.via, []).append(item.external_id)
        return {(via, external_id): found for via, wanted in ids.items()
                for external_id, found in uow.messages.find_external_many(via, wanted).items()}

    def _posts(self, uow: UnitOfWork, posts: list[tuple[int, Post]],
               current: dict[int, Ticket], batch: WriteBatch) -> None:
        accepted: list[tuple[int, Post, Ticket]] = []
        seen: dict[tuple[str, str], int] = {}
        stored = self._stored_messages(uow, posts)
        for index, item in posts:
            ticket = batch.states.get(item.ticket_id) or current.get(item.ticket_id)
            try:
                if ticket is None or not readable(uow.tickets, item.actor, ticket,
                                                  ticket.assignee):
                    raise not_found(item.ticket_id)
            except TickethubError as exc:
                batch.results[index] = exc
                continue
            if item.external_id is not None:
                key = (item.via, item.external_id)
                existing = stored.get(key)
                if existing is not None:
                    batch.results[index] = existing
                    continue
                if key in seen:  # the same outside message twice in one batch
                    batch.results[index] = _Replay(seen[key], None)
                    continue
                seen[key] = index
            accepted.append((index, item, ticket))
        if not accepted:
            return
        messages = uow.messages.add_many([
            MessageDraft(ticket.id, item.actor.name, item.via, item.body, MessageKind.COMMENT,
                         (item.actor.can_steer or item.actor.name == ticket.created_by)
                         and item.trusted is not False, item.external_id, item.data)
            for _, item, ticket in accepted], batch.now)
        for (index, item, ticket), message in zip(accepted, messages, strict=True):
            batch.results[index] = message
            batch.touched.add(ticket.id)
            batch.events.append(NewEvent(
                EventType.MESSAGE_POSTED, ticket.id, ticket.path, item.actor.name,
                {"message_id": message.id, "via": item.via, "trusted": message.trusted},
                item.request_id))
        for index, _ in posts:
            replay = batch.results[index]
            if isinstance(replay, _Replay):
                batch.results[index] = batch.results[replay.first]


@dataclass(frozen=True, slots=True)
class _Replay:
    """Placeholder: the same idempotency key (or outside message) as item ``first`` of
    the batch, resolved once that one is written."""

    first: int
    request_hash: str | None


def _replayed(ticket: Ticket, stored_hash: str | None, request_hash: str | None
              ) -> Asked | TickethubError:
    if stored_hash != request_hash:
        return IdempotencyKeyReused("this Idempotency-Key was used for a different request",
                                    field="Idempotency-Key")
    return Asked(ticket, False)

