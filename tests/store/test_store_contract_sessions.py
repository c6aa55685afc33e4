"""The store contract, people's sign-in: passwords, web sessions and one-time links
(``SessionStore``) on the in-memory store, SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.domain.records import Session
from tickethub.store.memory_sessions import MemorySessionStore
from tickethub.store.memory_store import MemoryStore
from tickethub.store.sessions_store import SqlSessionStore

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
ALICE = Actor("alice", Role.RESPONDER, ActorKind.PERSON)


@pytest.fixture
def sessions(store: Any) -> Any:
    return MemorySessionStore(store) if isinstance(store, MemoryStore) else SqlSessionStore(
        store)


def test_a_password_is_set_for_a_new_or_known_person(sessions: Any) -> None:
    assert sessions.get_actor("alice") is None and sessions.password_of("alice") is None
    alice = sessions.set_password(ALICE, "hash-1", NOW)
    assert alice.id is not None and alice.name == "alice" and alice.role is Role.RESPONDER
    again = sessions.set_password(Actor("alice", Role.AGENT), "hash-2", NOW)
    assert again == alice  # the known person, role unchanged
    assert sessions.password_of("alice") == (alice, "hash-2")
    assert sessions.get_actor("alice") == alice


def test_sessions_are_found_renewed_deleted_and_expire(sessions: Any) -> None:
    alice = sessions.set_password(ALICE, "h", NOW)
    for token, hours in (("t1", 1), ("t2", 5)):
        sessions.add_session(Session(token, alice, f"csrf-{token}", NOW,
                                     NOW + timedelta(hours=hours)))
    found = sessions.get_session("t1")
    assert found == Session("t1", alice, "csrf-t1", NOW, NOW + timedelta(hours=1))
    assert sessions.get_session("nope") is None
    sessions.renew_session("t1", NOW + timedelta(hours=9))
    assert sessions.get_session("t1").expires_at == NOW + timedelta(hours=9)
    assert sessions.delete_expired(NOW + timedelta(hours=6)) == 1  # t2 only
    assert sessions.get_session("t2") is None and sessions.get_session("t1") is not None
    sessions.delete_session("t1")
    sessions.delete_session("t1")  # twice: nothing
    assert sessions.get_session("t1") is None


def test_a_sign_in_link_is_taken_once_and_not_after_it_expired(sessions: Any) -> None:
    alice = sessions.set_password(ALICE, "h", NOW)
    sessions.add_link("l1", alice, NOW, NOW + timedelta(minutes=15))
    sessions.add_link("l2", alice, NOW, NOW + timedelta(minutes=1))
    assert sessions.take_link("l1", NOW + timedelta(minutes=5)) == alice
    assert sessions.take_link("l1", NOW + timedelta(minutes=5)) is None  # once
    assert sessions.take_link("l2", NOW + timedelta(minutes=2)) is None  # expired
    assert sessions.take_link("l2", NOW) is None  # and gone
    assert sessions.take_link("never", NOW) is None
