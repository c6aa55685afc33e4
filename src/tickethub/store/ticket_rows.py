"""A ticket as the ``tickets`` table holds it: reading a row into a ``Ticket``, the
column values a ``Ticket`` is written as, and which columns a change of one touches
(for ``SqlTicketRepository``'s updates and every query that reads whole tickets)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import Any

from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Answer, Ticket
from tickethub.store.tables import tickets

KINDS = {kind.value: kind for kind in Kind}
STATUSES = {status.value: status for status in Status}


# Where each field ``row_to_ticket`` reads sits in a ``tickets`` row: by position, ten
# times cheaper than by name on SQLAlchemy's rows, and a row is read per ticket returned.
_AT = {column.name: i for i, column in enumerate(tickets.c)}
_ROW_FIELDS = itemgetter(*(_AT[name] for name in (
    "id", "parent_id", "path", "kind", "title", "body", "status", "created_by", "assignee",
    "labels", "due_at", "next_attention_at", "answer_text", "answer_data", "answer_by",
    "answer_via", "answer_at", "response_schema", "proposal", "refs", "created_at",
    "updated_at", "version")))


def row_to_ticket(row: Any) -> Ticket:
    """A row whose first columns are all of ``tickets``' in the table's order (what
    ``select(tickets)`` returns, also with more columns after them) as a ``Ticket``;
    shared by every query that reads whole tickets (``inbox_queries``, ``ap_records``)."""
    (ticket_id, parent_id, path, kind, title, body, status, created_by, assignee, labels,
     due_at, next_attention_at, answer_text, answer_data, answer_by, answer_via, answer_at,
     response_schema, proposal, refs, created_at, updated_at, version) = _ROW_FIELDS(row)
    return Ticket(
        id=ticket_id,
        parent_id=parent_id,
        path=path,
        kind=KINDS[kind],
        title=title,
        body=body,
        status=STATUSES[status],
        created_by=created_by,
        assignee=assignee,
        labels=tuple(labels or ()),
        due_at=due_at,
        next_attention_at=next_attention_at,
        answer=None if answer_at is None else Answer(answer_text, answer_data, answer_by,
                                                     answer_via, answer_at),
        response_schema=response_schema,
        proposal=proposal,
        refs=dict(refs or {}),
        created_at=created_at,
        updated_at=updated_at,
        version=version,
    )


def ticket_values(ticket: Ticket) -> dict[str, Any]:
    answer = ticket.answer
    return {
        "status": ticket.status.value,
        "title": ticket.title,
        "body": ticket.body,
        "assignee": ticket.assignee,
        "labels": list(ticket.labels),
        "due_at": ticket.due_at,
        "next_attention_at": ticket.next_attention_at,
        "answer_text": answer.text if answer else None,
        "answer_data": answer.data if answer else None,
        "answer_by": answer.by if answer else None,
        "answer_via": answer.via if answer else None,
        "answer_at": answer.at if answer else None,
        "response_schema": ticket.response_schema,
        "proposal": ticket.proposal,
        "refs": ticket.refs,
        "updated_at": ticket.updated_at,
        "version": ticket.version,
    }


# Which columns each changeable field of a ``Ticket`` is stored in (``ticket_values``).
FIELD_COLUMNS: dict[str, tuple[str, ...]] = {
    "status": ("status",), "title": ("title",), "body": ("body",),
    "assignee": ("assignee",), "labels": ("labels",), "due_at": ("due_at",),
    "next_attention_at": ("next_attention_at",),
    "answer": ("answer_text", "answer_data", "answer_by", "answer_via", "answer_at"),
    "response_schema": ("response_schema",), "proposal": ("proposal",), "refs": ("refs",),
    "updated_at": ("updated_at",), "version": ("version",),
}
ALL_COLUMNS = [c for columns in FIELD_COLUMNS.values() for c in columns]


def changed_columns(before: Ticket, after: Ticket) -> Iterator[str]:
    for name, columns in FIELD_COLUMNS.items():
        old, new = getattr(before, name), getattr(after, name)
        if old is not new and old != new:
            yield from columns


def common_values(pairs: Sequence[tuple[Ticket, Ticket]],
                   all_values: Sequence[dict[str, Any]], columns: Sequence[str]
                   ) -> dict[str, Any] | None:
    """The values of ``columns`` (``version`` aside) when every ticket of ``pairs``
    gets the same ones and its version goes up by one: then one ``UPDATE ... WHERE id
    IN (...)`` writes them all. ``None`` when they differ (one row each)."""
    if len(pairs) < 2:
        return None
    for before, ticket in pairs:
        if ticket.version != before.version + 1:
            return None
    first = all_values[0]
    common = {c: first[c] for c in columns if c != "version"}
    for values in all_values[1:]:
        for column, value in common.items():
            if values[column] != value:
                return None
    return common


def ref_rows(ticket_id: int, refs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """One lookup row per scalar ref value (lists give one row per item)."""
    for name, value in refs.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str | int) and not isinstance(item, bool):
                yield {"ticket_id": ticket_id, "name": name, "value": str(item)[:500]}
