"""Reading the event log: since a sequence number, for a ticket or a subtree."""

from __future__ import annotations

from tickethub.domain.events import Event
from tickethub.errors import CursorAhead, NotFound, ValidationFailed
from tickethub.services.ports import Store

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
    ) -> list[Event]:
        """Events after ``seq``, oldest first. A ``seq`` ahead of the log is a client bug
        (it would silently miss everything up to it), so it raises ``CursorAhead``."""
        if seq < 0:
            raise ValidationFailed("must be 0 or more", field=field)
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationFailed(f"limit must be between 1 and {MAX_PAGE}", field="limit")
        with self._store.read() as uow:
            prefix = None
            if subtree_of is not None:
                root = uow.tickets.get(subtree_of)
                if root is None:
                    raise NotFound(f"ticket {subtree_of} does not exist", field="subtree")
                prefix = root.path
            events = uow.events.since(seq, limit=limit, ticket_id=ticket_id,
                                      path_prefix=prefix)
            if not events:  # found some: the cursor is within the log, no need to look
                last = uow.events.last_seq()
                if seq > last:
                    raise CursorAhead(
                        f"{field}={seq} is ahead of the log, which ends at {last}",
                        field=field, last_seq=last,
                    )
            return events

    def last_seq(self) -> int:
        with self._store.read() as uow:
            return uow.events.last_seq()
