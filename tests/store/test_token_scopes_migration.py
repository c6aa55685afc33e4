"""Migration 0008 adds token scopes to a database that already has tokens: they keep
working, with no scope; it goes down and up again; on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select, text

from tickethub.domain.actors import Role
from tickethub.store.engine import make_engine
from tickethub.store.migrate import downgrade, upgrade
from tickethub.store.records import SqlActorRepository
from tickethub.store.tables import tokens


def test_tokens_made_before_scopes_keep_working_without_one(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine)
        downgrade(engine, "0007_deadline_indexes")
        at = {"at": datetime.now(UTC)}
        with engine.begin() as c:
            c.execute(text("INSERT INTO actors (name, kind, role, created_at) "
                           "VALUES ('old-bot', 'agent', 'agent', :at)"), at)
            c.execute(text("INSERT INTO tokens (actor_id, name, token_hash, prefix, created_at) "
                           "SELECT id, 'old-bot', 'h1', 'th_x', :at FROM actors "
                           "WHERE name = 'old-bot'"), at)
        upgrade(engine)
        with engine.begin() as c:
            actor = SqlActorRepository(c).by_token_hash("h1")
            assert actor is not None and actor.role is Role.AGENT
            assert actor.scopes == frozenset()
            assert c.execute(select(tokens.c.scopes)).scalar() == ""
    finally:
        engine.dispose()
