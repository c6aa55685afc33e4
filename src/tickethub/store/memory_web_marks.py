"""A person's read marks and saved views in memory: the ``ReadMarkStore`` and
``SavedViewStore`` ports over a ``MemoryStore``, with ``store/web_marks.py``'s
contracts (tested on all stores by ``tests/store/test_store_contract_web_marks.py``)."""

from __future__ import annotations

from datetime import datetime

from tickethub.domain.records import SavedView
from tickethub.store.memory_state import ConstraintViolation, MemoryState, as_utc
from tickethub.store.memory_store import MemoryStore


def _known_actor(state: MemoryState, actor_id: int) -> None:
    if not any(a.id == actor_id for a, _ in state.actors.values()):
        raise ConstraintViolation(f"no actor with id {actor_id}")


class MemoryReadMarks:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def mark(self, actor_id: int, ticket_ids: list[int], read: bool, at: datetime) -> None:
        state = self._store.state
        with self._store.transaction() as changes:
            if not read:
                for ticket_id in ticket_ids:
                    if (actor_id, ticket_id) in state.web_reads:
                        changes.drop(state.web_reads, (actor_id, ticket_id))
                return
            _known_actor(state, actor_id)
            seen = state.events[-1].seq if state.events else 0
            for ticket_id in ticket_ids:
                if ticket_id not in state.tickets:
                    raise ConstraintViolation(f"no ticket {ticket_id} to mark")
                # Read again: what happened since the old mark is seen now.
                changes.put(state.web_reads, (actor_id, ticket_id), (as_utc(at), seen))

    def read_among(self, actor_id: int, ticket_ids: list[int]) -> set[int]:
        """Marked read, and nobody else wrote an event on the ticket after the mark."""
        with self._store.transaction():
            state = self._store.state
            me = next((a.name for a, _ in state.actors.values() if a.id == actor_id), None)
            marks = {i: state.web_reads[(actor_id, i)][1] for i in ticket_ids
                     if (actor_id, i) in state.web_reads}
            newer = {e.ticket_id for e in state.events
                     if e.ticket_id in marks and e.seq > marks[e.ticket_id] and e.actor != me}
            return set(marks) - newer


class MemorySavedViews:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def views_of(self, actor_id: int) -> list[SavedView]:
        with self._store.transaction():
            return sorted((SavedView(name, query) for (owner, name), (query, _)
                           in self._store.state.saved_views.items() if owner == actor_id),
                          key=lambda view: view.name)

    def put(self, actor_id: int, view: SavedView, at: datetime, limit: int) -> bool:
        state = self._store.state
        with self._store.transaction() as changes:
            _known_actor(state, actor_id)
            others = sum(1 for owner, name in state.saved_views
                         if owner == actor_id and name != view.name)
            if others >= limit:
                return False
            changes.put(state.saved_views, (actor_id, view.name), (view.query, as_utc(at)))
            return True

    def delete(self, actor_id: int, name: str) -> None:
        state = self._store.state
        with self._store.transaction() as changes:
            if (actor_id, name) in state.saved_views:
                changes.drop(state.saved_views, (actor_id, name))
