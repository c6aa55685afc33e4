"""Tickets, their labels and their refs, in SQL."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    and_,
    bindparam,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy.exc import NoResultFound

from tickethub.domain.status import WAITING, Status
from tickethub.domain.tickets import Overdue, Ticket, TicketDraft, TicketQuery
from tickethub.store.bulk import WHERE, InList, insert_rows, reserve_ids, update_rows
from tickethub.store.known_tickets import KNOWN_TICKETS, KnownTickets
from tickethub.store.tables import (
    DEFERRED_ONLY,
    messages,
    ticket_labels,
    ticket_refs,
    tickets,
)
from tickethub.store.ticket_rows import (
    ALL_COLUMNS,
    KINDS,
    STATUSES,
    changed_columns,
    common_values,
    ref_rows,
    row_to_ticket,
    ticket_values,
)
from tickethub.store.visibility import readable_by

_WAITING_VALUES = [s.value for s in WAITING]
# Keys per ``IN (...)`` of a batched look-up: well under every driver's parameter limit.
_IN_CHUNK = 500
# Built once (a statement built per call costs a third of the query's time on SQLite).
_GET_MANY = InList(lambda ids_in: select(tickets).where(ids_in(tickets.c.id)))
_GET_MANY_LOCKED = InList(lambda ids_in: _GET_MANY.build(ids_in).with_for_update())
_STORED_KEYS = select(tickets.c.idempotency_key).where(
    tickets.c.created_by == bindparam("by"),
    tickets.c.idempotency_key.in_(bindparam("keys", expanding=True)))
# Statements built once: parameters go in at execute time, so SQLAlchemy's compiled
# cache is hit instead of keying every call on its literal values.
# The earliest deadline: one MIN per status, each a seek on (status, due_at) or on the
# deferred tickets' next_attention_at, instead of a walk over every waiting ticket, in one
# statement.
_EARLIEST_DEADLINES = union_all(
    *(select(func.min(tickets.c.due_at).label("at")).where(tickets.c.status == status)
      for status in _WAITING_VALUES),
    select(func.min(tickets.c.next_attention_at).label("at")).where(text(DEFERRED_ONLY)),
)

# A deadline round: the few columns of the overdue tickets its events and wakeups need
# (not whole rows), then one UPDATE of them all.
_OVERDUE = (
    select(tickets.c.id, tickets.c.path, tickets.c.kind, tickets.c.status, tickets.c.due_at,
           tickets.c.version)
    .where(tickets.c.due_at <= bindparam("now"), tickets.c.status.in_(_WAITING_VALUES))
    .order_by(tickets.c.due_at, tickets.c.id)
    .limit(bindparam("limit"))
)
_OVERDUE_SKIP_LOCKED = _OVERDUE.with_for_update(skip_locked=True)
_EXPIRE = (
    update(tickets)
    .where(tickets.c.id.in_(bindparam("ids", expanding=True)))
    .values(status=Status.EXPIRED.value, updated_at=bindparam("at"),
            version=tickets.c.version + 1)
)


# The compare-and-set UPDATE of ``update()``, built once per set of columns (in
# practice one): building and cache-keying it on every call cost
# about as much CPU as running it. Parameters are the column names prefixed ``v_``,
# plus ``w_id`` and ``w_version``.
_UPDATE_STATEMENTS: dict[tuple[str, ...], Any] = {}


def _update_statement(columns: tuple[str, ...]) -> Any:
    statement = _UPDATE_STATEMENTS.get(columns)
    if statement is None:
        statement = (
            update(tickets)
            .where(tickets.c.id == bindparam("w_id"),
                   tickets.c.version == bindparam("w_version"))
            .values({name: bindparam(f"v_{name}", type_=tickets.c[name].type)
                     for name in columns})
        )
        _UPDATE_STATEMENTS[columns] = statement
    return statement


# ``update_many``'s one ``UPDATE ... WHERE id IN (...)`` for tickets that all get the
# same values, built once per set of columns like ``_update_statement`` (a batch of a
# few answers built and cache-keyed a fresh one, as costly as running it). Parameters:
# the column names prefixed ``v_``, and the ids (``InList``).
_UPDATE_ALL_STATEMENTS: dict[tuple[str, ...], InList] = {}


def _update_all_statement(columns: tuple[str, ...]) -> InList:
    statement = _UPDATE_ALL_STATEMENTS.get(columns)
    if statement is None:
        statement = _UPDATE_ALL_STATEMENTS[columns] = InList(lambda ids_in: (
            update(tickets)
            .where(ids_in(tickets.c.id))
            .values({**{name: bindparam(f"v_{name}", type_=tickets.c[name].type)
                        for name in columns},
                     "version": tickets.c.version + 1})
        ))
    return statement


def like_pattern(text: str) -> str:
    """``text`` as a case-insensitive ``LIKE ... ESCAPE '\\'`` substring pattern."""
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class SqlTicketRepository:
    def __init__(self, connection: Connection) -> None:
        self._c = connection
        self._postgres = connection.dialect.name == "postgresql"
        # (version, labels, refs) of rows this transaction locked with get(for_update=True)
        # or wrote, so update() need not read them again to diff the lookup tables.
        self._locked: dict[int, tuple[int, tuple[str, ...], dict[str, Any]]] = {}
        # Tickets read for update in bulk (get_many, overdue, defer_elapsed), as last
        # read or written: update_many writes only the columns that differ from these.
        self._before: dict[int, Ticket] = {}
        # On the event loop's SQLite write connection: the tickets it knows as stored,
        # read from there instead of the database (``store/known_tickets.py``).
        known: KnownTickets | None = (None if self._postgres
                                      else connection.info.get(KNOWN_TICKETS))
        self._known = known if known is not None and known.active else None

    def add(self, draft: TicketDraft, created_by: str, at: datetime,
            idempotency_key: str | None = None, request_hash: str | None = None) -> Ticket:
        return self._insert([(draft, created_by, idempotency_key, request_hash)], at)[0]

    def add_many(self, drafts: Sequence[tuple[TicketDraft, str]], at: datetime,
                 keys: Sequence[tuple[str | None, str | None]] | None = None
                 ) -> list[Ticket]:
        """``add`` for several ``(draft, created_by)`` at once, in a handful of statements
        whatever their number (group commits); ``keys``: each one's
        ``(idempotency_key, request_hash)``."""
        pairs = keys if keys is not None else [(None, None)] * len(drafts)
        return self._insert([(draft, by, key, digest)
                             for (draft, by), (key, digest) in zip(drafts, pairs, strict=True)],
                            at)

    def _insert(self, items: Sequence[tuple[TicketDraft, str, str | None, str | None]],
                at: datetime) -> list[Ticket]:
        if not items:
            return []
        parents = self._parents({d.parent_id for d, *_ in items if d.parent_id is not None})
        # Ids first, so each row goes in with its path (which holds the id) at once.
        ids = reserve_ids(self._c, tickets, len(items))
        rows: list[dict[str, Any]] = []
        created: list[Ticket] = []
        labels: list[dict[str, Any]] = []
        refs: list[dict[str, Any]] = []
        for ticket_id, (draft, created_by, idempotency_key, request_hash) in zip(
                ids, items, strict=True):
            parent_path, depth = ("/", 0) if draft.parent_id is None else (
                parents[draft.parent_id][0], parents[draft.parent_id][1] + 1)
            path = f"{parent_path}{ticket_id}/"
            rows.append({
                "id": ticket_id,
                "parent_id": draft.parent_id,
                "kind": draft.kind.value,
                "title": draft.title,
                "body": draft.body,
                "status": Status.OPEN.value,
                "created_by": created_by,
                "assignee": draft.assignee,
                "labels": list(draft.labels),
                "due_at": draft.due_at,
                "response_schema": draft.response_schema,
                "proposal": draft.proposal,
                "refs": draft.refs,
                "created_at": at,
                "updated_at": at,
                "version": 1,
                "depth": depth,
                "path": path,
                "idempotency_key": idempotency_key,
                "request_hash": request_hash,
            })
            labels += [{"ticket_id": ticket_id, "label": x} for x in dict.fromkeys(draft.labels)]
            refs += {(r["name"], r["value"]): r
                     for r in ref_rows(ticket_id, draft.refs)}.values()
            created.append(Ticket(
                id=ticket_id, parent_id=draft.parent_id, path=path, kind=draft.kind,
                title=draft.title, body=draft.body, status=Status.OPEN, created_by=created_by,
                assignee=draft.assignee, labels=draft.labels, due_at=draft.due_at,
                response_schema=draft.response_schema, proposal=draft.proposal,
                refs=dict(draft.refs), created_at=at, updated_at=at, version=1,
            ))
        insert_rows(self._c, tickets, rows)
        insert_rows(self._c, ticket_labels, labels)
        insert_rows(self._c, ticket_refs, refs)
        if self._known is not None:
            for ticket in created:
                self._known.saw(ticket)
        return created

    def _parents(self, ids: set[int]) -> dict[int, tuple[str, int]]:
        """``{id: (path, depth)}`` of these parent tickets; ``NoResultFound`` if one is
        missing (callers check that parents exist first)."""
        if not ids:
            return {}
        rows = self._c.execute(
            select(tickets.c.id, tickets.c.path, tickets.c.depth).where(tickets.c.id.in_(ids))
        ).all()
        found = {row.id: (row.path, row.depth) for row in rows}
        if len(found) != len(ids):
            raise NoResultFound(f"no parent ticket {sorted(ids - set(found))}")
        return found

    def get(self, ticket_id: int, *, for_update: bool = False) -> Ticket | None:
        stmt = select(tickets).where(tickets.c.id == ticket_id)
        if for_update and self._postgres:
            stmt = stmt.with_for_update()
        row = self._c.execute(stmt).first()
        if row is None:
            return None
        ticket = row_to_ticket(row)
        if for_update:
            self._locked[ticket.id] = (ticket.version, ticket.labels, dict(ticket.refs))
        return ticket

    def get_many(self, ticket_ids: Sequence[int], *, for_update: bool = False
                 ) -> dict[int, Ticket]:
        """The tickets of ``ticket_ids`` that exist, by id, in one statement;
        ``for_update`` as in ``get`` (locked for this transaction, ready for
        ``update_many``)."""
        if not ticket_ids:
            return {}
        wanted = sorted(set(ticket_ids))
        found: dict[int, Ticket] = {}
        known = self._known if for_update else None
        if known is not None:
            missing = []
            for ticket_id in wanted:
                ticket = known.get(ticket_id)
                if ticket is None:
                    missing.append(ticket_id)
                else:
                    found[ticket_id] = ticket
            wanted = missing
        if wanted:
            statements = _GET_MANY_LOCKED if for_update and self._postgres else _GET_MANY
            for row in self._c.execute(*statements.bound(wanted)):
                ticket = row_to_ticket(row)
                found[ticket.id] = ticket
                if known is not None:
                    known.saw(ticket)
        if for_update:
            for ticket in found.values():
                self._locked[ticket.id] = (ticket.version, ticket.labels, dict(ticket.refs))
                self._before[ticket.id] = ticket
        return found

    def update_many(self, changes: Sequence[tuple[Ticket, int]]) -> None:
        """Write each ``(ticket, expected_version)`` of tickets this transaction locked
        with ``get_many(for_update=True)`` at that version, in one statement (nobody else
        can have changed them since: the write lock on SQLite, the row locks on
        PostgreSQL). ``StaleVersion`` cannot happen here; a row that did not match is
        an error that rolls the whole transaction back."""
        if not changes:
            return
        pairs = []
        for ticket, expected in changes:
            before = self._before.get(ticket.id)
            if before is None or before.version != expected:
                raise RuntimeError(f"ticket {ticket.id} was not locked at version {expected}")
            pairs.append((before, ticket))
        # Only what changed (an expiry sets three columns, not seventeen with their JSON).
        columns: set[str] = {"updated_at", "version"}
        for before, ticket in pairs:
            columns.update(changed_columns(before, ticket))
        ordered = [c for c in ALL_COLUMNS if c in columns]
        all_values = [ticket_values(ticket) for _, ticket in pairs]
        common = common_values(pairs, all_values, ordered)
        if common is not None:  # e.g. a deadline round: the same change of every ticket
            updated = self._c.execute(*_update_all_statement(tuple(common)).bound(
                [ticket.id for _, ticket in pairs],
                **{f"v_{name}": value for name, value in common.items()})).rowcount
        else:
            rows = [{**{c: values[c] for c in ordered}, WHERE + "id": ticket.id,
                     WHERE + "version": before.version}
                    for (before, ticket), values in zip(pairs, all_values, strict=True)]
            updated = update_rows(self._c, tickets, rows)
        if updated not in (-1, len(changes)):
            raise RuntimeError(f"{updated} of {len(changes)} locked tickets updated")
        for before, ticket in pairs:
            if ticket.labels != before.labels:
                self._write_labels(ticket.id, ticket.labels, before.labels)
            self._write_refs(ticket.id, ticket.refs, before.refs)
            self._locked[ticket.id] = (ticket.version, ticket.labels, dict(ticket.refs))
            self._before[ticket.id] = ticket
            if self._known is not None:
                self._known.saw(ticket)

    def find_idempotent(self, created_by: str, key: str) -> tuple[Ticket, str | None] | None:
        row = self._c.execute(
            select(tickets).where(
                tickets.c.created_by == created_by, tickets.c.idempotency_key == key
            )
        ).first()
        return (row_to_ticket(row), row.request_hash) if row else None

    def find_idempotent_many(self, created_by: str, keys: Sequence[str]
                             ) -> dict[str, tuple[Ticket, str | None]]:
        """``find_idempotent`` for many keys of one creator: the stored ones by key (the
        keys not stored are left out), one query per ``_IN_CHUNK`` keys."""
        found: dict[str, tuple[Ticket, str | None]] = {}
        wanted = sorted(set(keys))
        for start in range(0, len(wanted), _IN_CHUNK):
            # Which keys are stored, in a one-column query (a first run's keys are new);
            # then the rows of those there are.
            stored = self._c.execute(_STORED_KEYS, {
                "by": created_by, "keys": wanted[start:start + _IN_CHUNK]}).scalars().all()
            if not stored:
                continue
            rows = self._c.execute(select(tickets).where(
                tickets.c.created_by == created_by, tickets.c.idempotency_key.in_(stored)))
            for row in rows:
                found[row.idempotency_key] = (row_to_ticket(row), row.request_hash)
        return found

    def update(self, ticket: Ticket, expected_version: int) -> bool:
        locked = self._locked.pop(ticket.id, None)
        if locked is not None and locked[0] == expected_version:
            # Locked by this transaction at this version: nobody else changed it since.
            old_labels, old_refs = locked[1], locked[2]
        else:
            old = self._c.execute(
                select(tickets.c.labels, tickets.c.refs).where(tickets.c.id == ticket.id)
            ).first()
            if old is None:
                return False
            old_labels, old_refs = tuple(old.labels or ()), dict(old.refs or {})
        values = ticket_values(ticket)
        params = {f"v_{name}": value for name, value in values.items()}
        result = self._c.execute(
            _update_statement(tuple(values)),
            {**params, "w_id": ticket.id, "w_version": expected_version},
        )
        if self._known is not None:  # (not recorded: written from a state read apart)
            self._known.forget(ticket.id)
        if result.rowcount != 1:
            return False
        self._write_labels(ticket.id, ticket.labels, old_labels)
        self._write_refs(ticket.id, ticket.refs, old_refs)
        self._locked[ticket.id] = (ticket.version, ticket.labels, dict(ticket.refs))
        return True

    def list(self, query: TicketQuery) -> list[Ticket]:
        stmt = select(tickets)
        if query.status:
            stmt = stmt.where(tickets.c.status.in_([s.value for s in query.status]))
        if query.kind is not None:
            stmt = stmt.where(tickets.c.kind == query.kind.value)
        if query.assignee is not None:
            stmt = stmt.where(tickets.c.assignee == query.assignee)
        if query.parent_id is not None:
            stmt = stmt.where(tickets.c.parent_id == query.parent_id)
        if query.created_by is not None:
            stmt = stmt.where(tickets.c.created_by == query.created_by)
        if query.label is not None:
            stmt = stmt.where(
                tickets.c.id.in_(
                    select(ticket_labels.c.ticket_id).where(
                        ticket_labels.c.label == query.label.strip().lower()
                    )
                )
            )
        if query.ref is not None:
            name, value = query.ref
            stmt = stmt.where(
                tickets.c.id.in_(
                    select(ticket_refs.c.ticket_id).where(
                        ticket_refs.c.name == name, ticket_refs.c.value == value
                    )
                )
            )
        if query.q:
            pattern = like_pattern(query.q)
            stmt = stmt.where(
                or_(
                    func.lower(tickets.c.title).like(pattern, escape="\\"),
                    func.lower(tickets.c.body).like(pattern, escape="\\"),
                    exists(
                        select(messages.c.id).where(
                            messages.c.ticket_id == tickets.c.id,
                            func.lower(messages.c.body).like(pattern, escape="\\"),
                        )
                    ),
                )
            )
        if query.after is not None:
            stmt = stmt.where(tickets.c.id < query.after)
        if query.readable_by is not None:
            stmt = stmt.where(readable_by(query.readable_by))
        stmt = stmt.order_by(tickets.c.id.desc()).limit(query.limit)
        return [row_to_ticket(row) for row in self._c.execute(stmt)]

    def subtree(self, root: Ticket, depth: int, reader: str | None = None
                ) -> builtins.list[Ticket]:
        root_depth = root.path.count("/") - 2
        stmt = (
            select(tickets)
            .where(
                tickets.c.path.like(f"{root.path}%"),
                tickets.c.id != root.id,
                tickets.c.depth <= root_depth + depth,
            )
            .order_by(tickets.c.depth, tickets.c.id)
        )
        if reader is not None:
            stmt = stmt.where(readable_by(reader))
        return [row_to_ticket(row) for row in self._c.execute(stmt)]

    def readable(self, ticket_id: int, name: str) -> bool:
        """Whether ``name`` reads ticket ``ticket_id`` (``store.visibility``)."""
        return self._c.execute(
            select(tickets.c.id).where(tickets.c.id == ticket_id, readable_by(name))
        ).first() is not None

    def overdue(self, now: datetime, limit: int, *, for_update: bool = False
                ) -> builtins.list[Ticket]:
        """Waiting tickets past ``due_at``, earliest first; ``for_update`` locks them for
        ``update_many`` (on PostgreSQL skipping rows another transaction holds)."""
        stmt = (
            select(tickets)
            .where(tickets.c.due_at <= now, tickets.c.status.in_(_WAITING_VALUES))
            .order_by(tickets.c.due_at)
            .limit(limit)
        )
        return self._locking(stmt, for_update)

    def expire_overdue(self, now: datetime, limit: int) -> builtins.list[Overdue]:
        """Up to ``limit`` waiting tickets past ``due_at`` (earliest first) moved to
        ``expired`` at ``now``, their version bumped, in two statements; returned as they
        were before. On PostgreSQL rows another transaction holds are skipped (another
        hub process is expiring them), so each ticket expires once."""
        stmt = _OVERDUE_SKIP_LOCKED if self._postgres else _OVERDUE
        kinds, statuses = KINDS, STATUSES  # dict look-ups: cheaper than Enum calls
        found = [Overdue(id_, path, kinds[kind], statuses[status], due_at, version)
                 for id_, path, kind, status, due_at, version
                 in self._c.execute(stmt, {"now": now, "limit": limit})]
        if not found:
            return []
        updated = self._c.execute(_EXPIRE, {"ids": [o.id for o in found], "at": now}).rowcount
        if updated not in (-1, len(found)):
            raise RuntimeError(f"{updated} of {len(found)} overdue tickets expired")
        for overdue in found:  # what this transaction knew of them is out of date
            self._locked.pop(overdue.id, None)
            self._before.pop(overdue.id, None)
            if self._known is not None:
                self._known.forget(overdue.id)
        return found

    def defer_elapsed(self, now: datetime, limit: int, *, for_update: bool = False
                      ) -> builtins.list[Ticket]:
        """Deferred tickets whose time came, earliest first; ``for_update`` as in
        ``overdue``."""
        if limit <= 0:
            return []
        stmt = (
            select(tickets)
            .where(
                tickets.c.next_attention_at <= now,
                text(DEFERRED_ONLY),  # as the partial index says it
            )
            .order_by(tickets.c.next_attention_at)
            .limit(limit)
        )
        return self._locking(stmt, for_update)

    def _locking(self, stmt: Any, for_update: bool) -> builtins.list[Ticket]:
        if for_update and self._postgres:
            stmt = stmt.with_for_update(skip_locked=True)
        found = [row_to_ticket(row) for row in self._c.execute(stmt)]
        if for_update:
            for ticket in found:
                self._locked[ticket.id] = (ticket.version, ticket.labels, dict(ticket.refs))
                self._before[ticket.id] = ticket
        return found

    def next_deadline(self) -> datetime | None:
        present = [v for v in self._c.execute(_EARLIEST_DEADLINES).scalars() if v is not None]
        return min(present) if present else None

    def count(self) -> int:
        return int(self._c.execute(select(func.count()).select_from(tickets)).scalar() or 0)

    def _write_labels(self, ticket_id: int, new: tuple[str, ...], old: tuple[str, ...]) -> None:
        removed, added = set(old) - set(new), set(new) - set(old)
        if removed:
            self._c.execute(
                delete(ticket_labels).where(
                    and_(ticket_labels.c.ticket_id == ticket_id,
                         ticket_labels.c.label.in_(removed))
                )
            )
        if added:
            self._c.execute(
                insert(ticket_labels), [{"ticket_id": ticket_id, "label": x} for x in added]
            )

    def _write_refs(self, ticket_id: int, new: dict[str, Any], old: dict[str, Any]) -> None:
        if new == old:
            return
        self._c.execute(delete(ticket_refs).where(ticket_refs.c.ticket_id == ticket_id))
        rows = {(r["name"], r["value"]): r for r in ref_rows(ticket_id, new)}
        if rows:
            self._c.execute(insert(ticket_refs), list(rows.values()))
