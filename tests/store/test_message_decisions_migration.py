"""Migration ``0009_message_decisions`` on SQLite and PostgreSQL: it adds
``messages.decision`` to a database holding messages (older rows keep ``NULL``), it
steps back down cleanly, and afterwards the schema is exactly what ``tables.py``
declares for the column."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text

from tickethub.store.engine import make_engine
from tickethub.store.migrate import downgrade, upgrade
from tickethub.store.tables import metadata

BEFORE = "0008_token_scopes"
NOW = datetime(2026, 11, 23, tzinfo=UTC)


def test_the_decision_column_comes_and_goes_with_its_migration(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine)
        downgrade(engine, BEFORE)
        assert "decision" not in {c["name"] for c in inspect(engine).get_columns("messages")}
        with engine.begin() as c:
            c.execute(text(
                "INSERT INTO tickets (kind, title, body, status, created_by, labels, refs, "
                "path, depth, created_at, updated_at, version) VALUES ('question', 'q', '', "
                "'answered', 'a', '[]', '{}', '', 0, :now, :now, 1)"), {"now": NOW})
            ticket_id = c.execute(text("SELECT max(id) FROM tickets")).scalar()
            c.execute(text(
                "INSERT INTO messages (ticket_id, author, via, kind, body, trusted, "
                "created_at) VALUES (:t, 'alice', 'web', 'answer', 'yes', true, :now)"),
                {"t": ticket_id, "now": NOW})
        upgrade(engine)
        with engine.connect() as c:
            assert c.execute(text("SELECT body, decision FROM messages")).all() == [
                ("yes", None)]
            diff = compare_metadata(MigrationContext.configure(c), metadata)
        assert [d for d in diff if "decision" in repr(d)] == []
    finally:
        engine.dispose()
