"""The people's inbox: which tickets wait on whom, most urgent or newest first, in pages.

Views (``InboxQuery.view``):

* ``team`` (default): waiting tickets nobody took yet, plus those assigned to me;
* ``me``: waiting tickets assigned to me;
* ``all``: every ticket.

Explicit filters (status, kind, label, assignee, agent, search) narrow the view further; an
explicit status replaces the view's "waiting" status. Sorting is ``newest`` (id
descending) or ``urgent`` (due date ascending, tickets without one last, then newest).
Pagination is by keyset (an opaque cursor naming the last row), so page 200 costs what
page 1 costs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal, Protocol

from tickethub.domain.ids import parse_id
from tickethub.domain.status import WAITING, Kind, Status
from tickethub.domain.tickets import Ticket
from tickethub.errors import ValidationFailed

View = Literal["team", "me", "all"]
Sort = Literal["newest", "urgent"]
VIEWS: tuple[View, ...] = ("team", "me", "all")
SORTS: tuple[Sort, ...] = ("newest", "urgent")
MAX_LIMIT = 200


@dataclass(frozen=True, slots=True)
class Cursor:
    """The last row of a page: its id and, for ``urgent``, its due date."""

    id: int
    due_at: datetime | None = None

    def encode(self, sort: Sort) -> str:
        if sort == "newest":
            return str(self.id)
        return f"{self.id}~{self.due_at.isoformat() if self.due_at else '-'}"

    @classmethod
    def decode(cls, text: str, sort: Sort) -> Cursor:
        ident, _, due = text.partition("~") if sort != "newest" else (text, "", "")
        row = parse_id(ident)
        try:
            if row is None:
                raise ValueError(text)
            return cls(row, None if due in ("", "-") else datetime.fromisoformat(due))
        except ValueError:
            raise ValidationFailed("not a cursor from this inbox", field="cursor") from None


@dataclass(frozen=True, slots=True)
class InboxQuery:
    me: str
    view: View = "team"
    status: tuple[Status, ...] = ()
    kind: Kind | None = None
    label: str | None = None
    assignee: str | None = None
    agent: str | None = None
    q: str | None = None
    sort: Sort = "newest"
    cursor: Cursor | None = None
    limit: int = 50
    # Only tickets this name reads (``domain.visibility``); ``None``: all.
    readable_by: str | None = None

    @property
    def statuses(self) -> tuple[Status, ...]:
        if self.status:
            return self.status
        return () if self.view == "all" else tuple(sorted(WAITING))

    def matches(self, ticket: Ticket) -> bool:
        """Whether ``ticket`` belongs in this inbox (used for live updates)."""
        statuses = self.statuses
        if statuses and ticket.status not in statuses:
            return False
        if self.view == "me" and ticket.assignee != self.me:
            return False
        if self.view == "team" and ticket.assignee not in (None, self.me):
            return False
        if self.kind is not None and ticket.kind is not self.kind:
            return False
        if self.label and self.label.strip().lower() not in ticket.labels:
            return False
        if self.assignee and ticket.assignee != self.assignee:
            return False
        if self.agent and ticket.created_by != self.agent:
            return False
        if self.q:
            needle = self.q.lower()
            return needle in ticket.title.lower() or needle in ticket.body.lower()
        return True


@dataclass(frozen=True, slots=True)
class InboxPage:
    items: list[Ticket]
    next_cursor: str | None
    total: int
    query: InboxQuery = field(repr=False)

    @property
    def total_text(self) -> str:
        return f"{self.total:,}"


class InboxReader(Protocol):
    """The read port (adapter: ``store/inbox_queries.py``)."""

    def page(self, query: InboxQuery) -> list[Ticket]:
        """Up to ``query.limit`` matching tickets after ``query.cursor``, in sort order."""
        ...

    def count(self, query: InboxQuery) -> int:
        """How many tickets match, ignoring cursor and limit (an exact count: one
        indexed ``COUNT`` without loading rows)."""
        ...


class _Counts:
    """Counts per query, kept while the event log stands still. Every change to a ticket
    appends an event in its own transaction, so an unchanged last ``seq`` means unchanged
    counts; the log's position is shared, so several hub processes stay right too."""

    SIZE = 512

    def __init__(self, reader: InboxReader, log_position: Callable[[], int]) -> None:
        self._reader = reader
        self._position = log_position
        self._seq = -1
        self._known: dict[InboxQuery, int] = {}
        self._lock = threading.Lock()

    def count(self, query: InboxQuery) -> int:
        key = replace(query, cursor=None, limit=1)
        seq = self._position()  # read before counting: a later change is not hidden
        with self._lock:
            if seq != self._seq:
                self._known, self._seq = {}, seq
            elif key in self._known:
                return self._known[key]
        total = self._reader.count(key)
        with self._lock:
            if seq == self._seq and len(self._known) < self.SIZE:
                self._known[key] = total
        return total


class InboxService:
    def __init__(self, reader: InboxReader,
                 log_position: Callable[[], int] | None = None) -> None:
        """``log_position``: the event log's last ``seq``; given, counts are kept until
        it moves (else each page counts anew)."""
        self._reader = reader
        self._counts = _Counts(reader, log_position) if log_position else None

    def _count(self, query: InboxQuery) -> int:
        return self._counts.count(query) if self._counts else self._reader.count(query)

    def page(self, query: InboxQuery) -> InboxPage:
        if not 1 <= query.limit <= MAX_LIMIT:
            raise ValidationFailed(f"limit must be between 1 and {MAX_LIMIT}", field="limit")
        rows = self._reader.page(replace(query, limit=query.limit + 1))
        items = rows[: query.limit]
        next_cursor = None
        if len(rows) > query.limit and items:
            last = items[-1]
            next_cursor = Cursor(last.id, last.due_at).encode(query.sort)
        return InboxPage(items, next_cursor, self._count(query), query)

    def view_counts(self, query: InboxQuery) -> dict[View, int]:
        """How many tickets each view holds under ``query``'s other filters."""
        return {view: self._count(replace(query, view=view, cursor=None)) for view in VIEWS}
