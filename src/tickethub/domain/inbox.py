"""What the people's inbox asks the store for: a view, filters, a sort and a cursor
(``services.inbox`` serves it; ``store.inbox_queries`` answers it in SQL)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from tickethub.domain.ids import parse_id
from tickethub.domain.status import WAITING, Kind, Status
from tickethub.domain.tickets import Ticket
from tickethub.errors import ValidationFailed

View = Literal["team", "me", "all"]
Sort = Literal["newest", "urgent"]
VIEWS: tuple[View, ...] = ("team", "me", "all")
SORTS: tuple[Sort, ...] = ("newest", "urgent")


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
