"""Read/unread per person: which tickets a person has looked at in the web inbox.

A mark is a person's own bookkeeping, not a change to the ticket: it writes no event,
bumps no version and wakes nobody. A ticket is *unread* for a person until they open it
(or mark it read); marking it unread again removes the mark. A read ticket turns unread
again when someone else acts on it after the mark (any event on the ticket: a message,
an answer, a decision, a status change); the person's own actions keep it read.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol

from tickethub.domain.actors import Actor
from tickethub.errors import ValidationFailed
from tickethub.services.ports import Clock

MAX_MARKS = 500  # one request marks at most a page or a bulk selection


class ReadMarkStore(Protocol):
    """Adapter: ``store/web_marks.py``."""

    def mark(self, actor_id: int, ticket_ids: list[int], read: bool, at: datetime) -> None:
        """Add (``read``) or remove marks; a mark covers the events written so far, and
        marking again moves it to now."""
        ...

    def read_among(self, actor_id: int, ticket_ids: list[int]) -> set[int]:
        """Which of ``ticket_ids`` the person has marked read with no event by someone
        else on the ticket since the mark."""
        ...


class ReadMarkService:
    def __init__(self, store: ReadMarkStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    @staticmethod
    def _ids(ticket_ids: Iterable[int]) -> list[int]:
        ids = sorted(set(ticket_ids))
        if len(ids) > MAX_MARKS:
            raise ValidationFailed(f"at most {MAX_MARKS} tickets at once", field="id")
        return ids

    @staticmethod
    def _person(actor: Actor) -> int:
        if actor.id is None:
            raise ValidationFailed("read marks belong to a stored person", field="actor")
        return actor.id

    def mark(self, actor: Actor, ticket_ids: Iterable[int], read: bool = True) -> None:
        """Mark tickets read (or unread) for ``actor``. The caller has checked that the
        actor may read them (a mark on an unreadable id reveals nothing and shows nowhere)."""
        ids = self._ids(ticket_ids)
        if ids:
            self._store.mark(self._person(actor), ids, read, self._clock.now())

    def read_among(self, actor: Actor, ticket_ids: Iterable[int]) -> set[int]:
        ids = sorted(set(ticket_ids))
        if not ids or actor.id is None:
            return set()
        return self._store.read_among(actor.id, ids)
