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
from typing import Protocol

from tickethub.domain.inbox import SORTS as SORTS
from tickethub.domain.inbox import VIEWS as VIEWS
from tickethub.domain.inbox import Cursor as Cursor
from tickethub.domain.inbox import InboxQuery as InboxQuery
from tickethub.domain.inbox import Sort as Sort
from tickethub.domain.inbox import View as View
from tickethub.domain.tickets import Ticket
from tickethub.errors import ValidationFailed

MAX_LIMIT = 200


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
