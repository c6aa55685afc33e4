"""Reading the event log: since a sequence number, for a ticket or a subtree."""

from __future__ import annotations

from tickethub.domain.actors import Actor
from tickethub.domain.events import Event
from tickethub.domain.visibility import reader
from tickethub.errors import CursorAhead, ValidationFailed
from tickethub.services.ports import Store
from tickethub.services.visibility import not_found, readable

MAX_PAGE = 1000


class EventService:
    def __init__(self, store: Store) -> None:
        self._store = store

    def since(
        self,
        seq: int,
        *,
        limit: int = 100,
        ticket_id: int | None = None,
        subtree_of: int | None = None,
        field: str = "since",
        viewer: Actor | None = None,
    ) -> list[Event]:
        """Events after ``seq``, oldest first. A ``seq`` ahead of the log is a client bug
        (it would silently miss everything up to it), so it raises ``CursorAhead``.
        With a ``viewer``, only events about tickets it reads (``domain.visibility``)."""
        return self.page(seq, limit=limit, ticket_id=ticket_id, subtree_of=subtree_of,
                         field=field, viewer=viewer)[0]

    def page(
        self,
        seq: int,
        *,
        limit: int = 100,
        ticket_id: int | None = None,
        subtree_of: int | None = None,
        field: str = "since",
        viewer: Actor | None = None,
    ) -> tuple[list[Event], int]:
        """``since``, and the cursor to resume from: the last event's seq, or — when a
        viewer's filter left events out and the page is not full — the end of the log
        as read, so the next read does not scan the left-out events again."""
        if seq < 0:
            raise ValidationFailed("must be 0 or more", field=field)
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationFailed(f"limit must be between 1 and {MAX_PAGE}", field="limit")
        name = reader(viewer) if viewer is not None else None
        with self._store.read() as uow:
            prefix = None
            if subtree_of is not None:
                root = uow.tickets.get(subtree_of)
                if root is None or (viewer is not None and not readable(
                        uow.tickets, viewer, root, root.assignee)):
                    raise not_found(subtree_of, "subtree")
                prefix = root.path
            # A filtered page reads the log's end first: every event up to it is
            # committed (commit order is seq order), so the page may skip to it.
            last = uow.events.last_seq() if name is not None else None
            events = uow.events.since(seq, limit=limit, ticket_id=ticket_id,
                                      path_prefix=prefix, reader=name, until=last)
            if not events:
                # Nothing after the cursor: is it ahead of the log? (A page with events
                # proves it is not.) Read after the page, this end only checks the
                # cursor and is never the next one: on PostgreSQL each statement sees
                # the commits made before it, so events committed between the two reads
                # are after it but were not in the page.
                end = last if last is not None else uow.events.last_seq()
                if seq > end:
                    raise CursorAhead(
                        f"{field}={seq} is ahead of the log, which ends at {end}",
                        field=field, last_seq=end,
                    )
            if len(events) == limit or last is None:
                return events, events[-1].seq if events else seq
            return events, max(last, seq)

    def last_seq(self) -> int:
        with self._store.read() as uow:
            return uow.events.last_seq()

    def ticket_seqs(self, after: int, until: int, limit: int) -> list[tuple[int, int]]:
        """``(seq, ticket_id)`` of the events after ``after`` up to ``until``, oldest
        first, at most ``limit``."""
        with self._store.read() as uow:
            return uow.events.ticket_seqs(after, until, limit)
