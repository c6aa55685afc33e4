"""Migration 0013 gives installations made before it their identity rows (so routing by
identity finds them); it goes down and up again; on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text

from tickethub.store.engine import make_engine
from tickethub.store.migrate import downgrade, upgrade


def test_installations_made_before_it_are_routed_by_identity(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine)
        downgrade(engine, "0012_chat_conversations")
        at = {"at": datetime.now(UTC)}
        with engine.begin() as c:
            for owner, identities in (("alice", '{"github": "alice-gh", "chat": "@a:hs"}'),
                                      ("bob", "{}")):
                c.execute(text(
                    "INSERT INTO agent_installations (owner, agent, config, identities, "
                    "enabled, created_at, updated_at) VALUES (:owner, 'thread-summary', "
                    "'{}', :ids, :on, :at, :at)"), {**at, "owner": owner, "ids": identities,
                                                     "on": True})
        upgrade(engine)
        with engine.begin() as c:
            rows = c.execute(text(
                "SELECT i.owner, d.source, d.name FROM agent_identities d JOIN "
                "agent_installations i ON i.id = d.installation_id ORDER BY d.source")).all()
        assert [tuple(r) for r in rows] == [("alice", "chat", "@a:hs"),
                                            ("alice", "github", "alice-gh")]
    finally:
        engine.dispose()
