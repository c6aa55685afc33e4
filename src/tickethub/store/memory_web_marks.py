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
            for ticket_id in ticket_ids:
                if ticket_id not in state.tickets:
                    raise ConstraintViolation(f"no ticket {ticket_id} to mark")
                if (actor_id, ticket_id) not in state.web_reads:  # the first mark stays
                    changes.put(state.web_reads, (actor_id, ticket_id), as_utc(at))

    def read_among(self, actor_id: int, ticket_ids: list[int]) -> set[int]:
        with self._store.transaction():
            return {i for i in ticket_ids if (actor_id, i) in self._store.state.web_reads}


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
