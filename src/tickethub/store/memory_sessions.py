"""People's passwords, web sessions and one-time sign-in links in memory: the
``SessionStore`` port over a ``MemoryStore``, with ``store/sessions_store.py``'s
contracts (``tests/store/test_store_contract_sessions.py`` runs on every store)."""

from __future__ import annotations

from datetime import datetime

from tickethub.domain.actors import Actor
from tickethub.domain.records import Session
from tickethub.store.memory_records import MemoryActorRepository
from tickethub.store.memory_state import ConstraintViolation, MemoryState, as_utc
from tickethub.store.memory_store import MemoryStore


def _name_of(state: MemoryState, actor: Actor) -> str:
    for stored, _ in state.actors.values():
        if stored.id == actor.id:
            return stored.name
    raise ConstraintViolation(f"no actor with id {actor.id}")


class MemorySessionStore:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def get_actor(self, name: str) -> Actor | None:
        with self._store.read() as uow:
            return uow.actors.get(name)

    def set_password(self, actor: Actor, password_hash: str, at: datetime) -> Actor:
        state = self._store.state
        with self._store.transaction() as changes:
            actors = MemoryActorRepository(state, changes)
            stored = actors.get(actor.name) or actors.add(actor, at)
            changes.put(state.passwords, stored.name, password_hash)
            return stored

    def password_of(self, name: str) -> tuple[Actor, str] | None:
        state = self._store.state
        with self._store.transaction():
            found, digest = state.actors.get(name), state.passwords.get(name)
            return (found[0], digest) if found and digest is not None else None

    def add_session(self, session: Session) -> None:
        state = self._store.state
        with self._store.transaction() as changes:
            if session.token_hash in state.sessions:
                raise ConstraintViolation("a session with this token hash exists")
            changes.put(state.sessions, session.token_hash, (
                _name_of(state, session.actor), session.csrf, as_utc(session.created_at),
                as_utc(session.expires_at)))

    def get_session(self, token_hash: str) -> Session | None:
        state = self._store.state
        with self._store.transaction():
            found = state.sessions.get(token_hash)
            if found is None:
                return None
            name, csrf, created_at, expires_at = found
            return Session(token_hash, state.actors[name][0], csrf, created_at, expires_at)

    def renew_session(self, token_hash: str, expires_at: datetime) -> None:
        state = self._store.state
        with self._store.transaction() as changes:
            found = state.sessions.get(token_hash)
            if found is not None:
                changes.put(state.sessions, token_hash, (*found[:3], as_utc(expires_at)))

    def delete_session(self, token_hash: str) -> None:
        state = self._store.state
        with self._store.transaction() as changes:
            if token_hash in state.sessions:
                changes.drop(state.sessions, token_hash)

    def add_link(self, token_hash: str, actor: Actor, at: datetime,
                 expires_at: datetime) -> None:
        state = self._store.state
        with self._store.transaction() as changes:
            for stale in [k for k, (_, _, until) in state.links.items() if until <= at]:
                changes.drop(state.links, stale)
            if token_hash in state.links:
                raise ConstraintViolation("a link with this token hash exists")
            changes.put(state.links, token_hash,
                        (_name_of(state, actor), as_utc(at), as_utc(expires_at)))

    def take_link(self, token_hash: str, now: datetime) -> Actor | None:
        state = self._store.state
        with self._store.transaction() as changes:
            found = state.links.get(token_hash)
            if found is None:
                return None
            changes.drop(state.links, token_hash)
            name, _, expires_at = found
            return state.actors[name][0] if expires_at > now else None

    def delete_expired(self, now: datetime) -> int:
        state = self._store.state
        with self._store.transaction() as changes:
            gone = [k for k, (*_, expires_at) in state.sessions.items() if expires_at <= now]
            for token_hash in gone:
                changes.drop(state.sessions, token_hash)
            return len(gone)
