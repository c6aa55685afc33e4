"""Tickets in memory: ``SqlTicketRepository``'s contract over a dict (``memory_store``).

Filters are the SQL ones restated in Python: labels and refs match the lookup rows SQL
writes (a label as given, a ref per scalar value, lists item by item, at most 500
characters), ``q`` is a case-insensitive substring of title, body or a message body,
and the read rule is ``domain.visibility``'s (created, assigned, or below a ticket the
reader created)."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from tickethub.domain.status import WAITING, Status
from tickethub.domain.tickets import Answer, Overdue, Ticket, TicketDraft, TicketQuery
from tickethub.store.memory_state import (
    Changes,
    ConstraintViolation,
    MemoryState,
    TicketRow,
    as_json,
    as_utc,
)


def ref_values(refs: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """The ``(name, value)`` pairs a ticket is found by (SQL's ``ticket_refs`` rows)."""
    for name, value in refs.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str | int) and not isinstance(item, bool):
                yield name, str(item)[:500]


def readable_row(state: MemoryState, row: TicketRow, name: str) -> bool:
    """``domain.visibility``: created by, assigned to, or below a ticket of ``name``."""
    t = row.ticket
    if t.created_by == name or t.assignee == name:
        return True
    ancestors = [int(part) for part in t.path.strip("/").split("/")[:-1]]
    return any(a in state.tickets and state.tickets[a].ticket.created_by == name
               for a in ancestors)


def _stored(ticket: Ticket) -> Ticket:
    """``ticket`` as its row reads back: JSON copied, datetimes in UTC, labels a tuple."""
    answer = ticket.answer
    if answer is not None:
        answer = Answer(answer.text, as_json(answer.data), answer.by, answer.via,
                        as_utc(answer.at))
    return replace(
        ticket, labels=tuple(as_json(list(ticket.labels))), due_at=as_utc(ticket.due_at),
        next_attention_at=as_utc(ticket.next_attention_at), answer=answer,
        response_schema=as_json(ticket.response_schema), proposal=as_json(ticket.proposal),
        refs=as_json(ticket.refs) or {}, created_at=as_utc(ticket.created_at),
        updated_at=as_utc(ticket.updated_at))


def _copy(ticket: Ticket) -> Ticket:
    """A stored ticket handed out: its JSON values are the caller's own."""
    answer = ticket.answer
    if answer is not None and answer.data is not None:
        answer = replace(answer, data=as_json(answer.data))
    return replace(ticket, response_schema=as_json(ticket.response_schema),
                   proposal=as_json(ticket.proposal), refs=as_json(ticket.refs),
                   answer=answer)


class MemoryTicketRepository:
    def __init__(self, state: MemoryState, changes: Changes) -> None:
        self._s = state
        self._changes = changes
        # Tickets read for update in bulk, as last read or written (``update_many``).
        self._before: dict[int, Ticket] = {}

    def add(self, draft: TicketDraft, created_by: str, at: datetime,
            idempotency_key: str | None = None, request_hash: str | None = None) -> Ticket:
        return self.add_many([(draft, created_by)], at, [(idempotency_key, request_hash)])[0]

    def add_many(self, drafts: Sequence[tuple[TicketDraft, str]], at: datetime,
                 keys: Sequence[tuple[str | None, str | None]] | None = None
                 ) -> builtins.list[Ticket]:
        pairs = keys if keys is not None else [(None, None)] * len(drafts)
        items = list(zip(drafts, pairs, strict=True))
        for (draft, created_by), (key, _) in items:  # check all before writing any
            if draft.parent_id is not None and draft.parent_id not in self._s.tickets:
                raise ConstraintViolation(f"no parent ticket {draft.parent_id}")
            if key is not None and (created_by, key) in self._s.idempotency:
                raise ConstraintViolation(f"idempotency key {key!r} of {created_by} is taken")
        keyed = [(by, key) for (_, by), (key, _) in items if key is not None]
        if len(set(keyed)) != len(keyed):
            raise ConstraintViolation("one idempotency key twice in one batch")
        created = []
        for ticket_id, ((draft, created_by), (key, digest)) in zip(
                self._s.next_ids("tickets", len(items)), items, strict=True):
            parent = None if draft.parent_id is None else self._s.tickets[draft.parent_id]
            path = f"{parent.ticket.path if parent else '/'}{ticket_id}/"
            ticket = Ticket(
                id=ticket_id, parent_id=draft.parent_id, path=path, kind=draft.kind,
                title=draft.title, body=draft.body, status=Status.OPEN, created_by=created_by,
                assignee=draft.assignee, labels=draft.labels, due_at=draft.due_at,
                response_schema=draft.response_schema, proposal=draft.proposal,
                refs=dict(draft.refs), created_at=at, updated_at=at, version=1)
            row = TicketRow(_stored(ticket), parent.depth + 1 if parent else 0, key, digest)
            self._changes.put(self._s.tickets, ticket_id, row)
            if key is not None:
                self._changes.put(self._s.idempotency, (created_by, key), ticket_id)
            created.append(ticket)
        return created

    def get(self, ticket_id: int, *, for_update: bool = False) -> Ticket | None:
        row = self._s.tickets.get(ticket_id)
        return _copy(row.ticket) if row else None

    def get_many(self, ticket_ids: Sequence[int], *, for_update: bool = False
                 ) -> dict[int, Ticket]:
        found = {}
        for ticket_id in sorted(set(ticket_ids)):
            row = self._s.tickets.get(ticket_id)
            if row is not None:
                found[ticket_id] = _copy(row.ticket)
                if for_update:
                    self._before[ticket_id] = row.ticket
        return found

    def update_many(self, changes: Sequence[tuple[Ticket, int]]) -> None:
        for ticket, expected in changes:
            before = self._before.get(ticket.id)
            if before is None or before.version != expected:
                raise RuntimeError(f"ticket {ticket.id} was not locked at version {expected}")
        for ticket, expected in changes:
            if not self.update(ticket, expected):
                raise RuntimeError(f"locked ticket {ticket.id} changed under the lock")
            self._before[ticket.id] = self._s.tickets[ticket.id].ticket

    def find_idempotent(self, created_by: str, key: str) -> tuple[Ticket, str | None] | None:
        ticket_id = self._s.idempotency.get((created_by, key))
        if ticket_id is None:
            return None
        row = self._s.tickets[ticket_id]
        return _copy(row.ticket), row.request_hash

    def find_idempotent_many(self, created_by: str, keys: Sequence[str]
                             ) -> dict[str, tuple[Ticket, str | None]]:
        found: dict[str, tuple[Ticket, str | None]] = {}
        for key in keys:
            hit = self.find_idempotent(created_by, key)
            if hit is not None:
                found[key] = hit
        return found

    def update(self, ticket: Ticket, expected_version: int) -> bool:
        row = self._s.tickets.get(ticket.id)
        if row is None or row.ticket.version != expected_version:
            return False
        old = row.ticket
        # The columns SQL's UPDATE sets; identity, tree and creation stay as stored.
        new = _stored(replace(ticket, id=old.id, parent_id=old.parent_id, path=old.path,
                              kind=old.kind, created_by=old.created_by,
                              created_at=old.created_at))
        self._changes.put(self._s.tickets, ticket.id,
                          TicketRow(new, row.depth, row.idempotency_key, row.request_hash))
        return True

    def list(self, query: TicketQuery) -> builtins.list[Ticket]:
        found: builtins.list[Ticket] = []
        for row in reversed(self._s.tickets.values()):  # newest first
            if len(found) >= query.limit:
                break
            if self._matches(row, query):
                found.append(_copy(row.ticket))
        return found

    def _matches(self, row: TicketRow, query: TicketQuery) -> bool:
        t = row.ticket
        if query.after is not None and t.id >= query.after:
            return False
        if query.status and t.status not in query.status:
            return False
        if query.kind is not None and t.kind is not query.kind:
            return False
        if query.assignee is not None and t.assignee != query.assignee:
            return False
        if query.parent_id is not None and t.parent_id != query.parent_id:
            return False
        if query.created_by is not None and t.created_by != query.created_by:
            return False
        if query.label is not None and query.label.strip().lower() not in t.labels:
            return False
        if query.ref is not None and query.ref not in set(ref_values(t.refs)):
            return False
        if query.q and not self._mentions(t, query.q.lower()):
            return False
        return query.readable_by is None or self._readable(row, query.readable_by)

    def _mentions(self, ticket: Ticket, text: str) -> bool:
        if text in ticket.title.lower() or text in ticket.body.lower():
            return True
        return any(m.ticket_id == ticket.id and text in m.body.lower()
                   for m in self._s.messages.values())

    def _readable(self, row: TicketRow, name: str) -> bool:
        return readable_row(self._s, row, name)

    def subtree(self, root: Ticket, depth: int, reader: str | None = None
                ) -> builtins.list[Ticket]:
        root_depth = root.path.count("/") - 2
        rows = [row for row in self._s.tickets.values()
                if row.ticket.path.startswith(root.path) and row.ticket.id != root.id
                and row.depth <= root_depth + depth
                and (reader is None or self._readable(row, reader))]
        rows.sort(key=lambda row: (row.depth, row.ticket.id))
        return [_copy(row.ticket) for row in rows]

    def readable(self, ticket_id: int, name: str) -> bool:
        row = self._s.tickets.get(ticket_id)
        return row is not None and self._readable(row, name)

    def overdue(self, now: datetime, limit: int, *, for_update: bool = False
                ) -> builtins.list[Ticket]:
        due = sorted((t.due_at, t.id) for t in self._tickets()
                     if t.due_at is not None and t.due_at <= now and t.status in WAITING)
        return self._locking([self._s.tickets[i].ticket for _, i in due[:limit]], for_update)

    def expire_overdue(self, now: datetime, limit: int) -> builtins.list[Overdue]:
        found = self.overdue(now, limit, for_update=True)
        self.update_many([(t.moved_to(Status.EXPIRED, now), t.version) for t in found])
        return [Overdue(t.id, t.path, t.kind, t.status, t.due_at, t.version)
                for t in found if t.due_at is not None]

    def defer_elapsed(self, now: datetime, limit: int, *, for_update: bool = False
                      ) -> builtins.list[Ticket]:
        if limit <= 0:
            return []
        due = sorted((t.next_attention_at, t.id) for t in self._tickets()
                     if t.next_attention_at is not None and t.next_attention_at <= now
                     and t.status is Status.DEFERRED)
        return self._locking([self._s.tickets[i].ticket for _, i in due[:limit]], for_update)

    def _locking(self, found: builtins.list[Ticket], for_update: bool
                 ) -> builtins.list[Ticket]:
        if for_update:
            for ticket in found:
                self._before[ticket.id] = ticket
        return [_copy(t) for t in found]

    def next_deadline(self) -> datetime | None:
        times = [t.due_at for t in self._tickets() if t.status in WAITING and t.due_at]
        times += [t.next_attention_at for t in self._tickets()
                  if t.status is Status.DEFERRED and t.next_attention_at]
        return min(times) if times else None

    def _tickets(self) -> Iterator[Ticket]:
        return (row.ticket for row in self._s.tickets.values())

    def count(self) -> int:
        return len(self._s.tickets)
