"""Migrations that reshape indexes for the write path, on SQLite and PostgreSQL: each
goes down and up again, and on SQLite the queries they serve are answered from them.

- 0019 indexes only the claimed Agent Protocol steps: the in-hub worker's search for
  lapsed claims (every third of a lease, in every process) probes that index instead of
  scanning every step ever stored.
- 0020 indexes only the deferred tickets by when they come back: the changes of status
  of all the others (asks, answers) no longer write to that index. (Which index SQLite's
  planner then picks for the look-ups depends on its statistics; either reads only the
  deferred tickets.)

And the statistics that choice rests on reach every connection of the hub."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, inspect, select, text

from tickethub.store.ap_tables import ap_steps
from tickethub.store.engine import make_engine
from tickethub.store.migrate import downgrade, upgrade
from tickethub.store.sql_store import SqlStore
from tickethub.store.ticket_repository import _EARLIEST_DEADLINES, SqlTicketRepository

NOW = datetime(2026, 11, 25, tzinfo=UTC)


def _index(engine: Engine, table: str, name: str) -> dict[str, Any] | None:
    return next((i for i in inspect(engine).get_indexes(table) if i["name"] == name), None)


def _plan(engine: Engine, sql: str, parameters: Any = ()) -> str:
    with engine.connect() as c:
        return " ".join(str(row[-1]) for row in
                        c.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, parameters))


def _literal(engine: Engine, statement: Any) -> str:
    return str(statement.compile(engine, compile_kwargs={"literal_binds": True}))


def test_the_claims_index_covers_claimed_steps_and_comes_and_goes(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine)
        downgrade(engine, "0018_chat_sync_tokens")
        assert _index(engine, "ap_steps", "ix_ap_steps_claimed") is None
        upgrade(engine)
        index = _index(engine, "ap_steps", "ix_ap_steps_claimed")
        assert index is not None and index["column_names"] == ["claimed_until"]
        if engine.dialect.name == "sqlite":
            lapsed = (select(ap_steps.c.task_id).where(ap_steps.c.claimed_until < NOW)
                      .order_by(ap_steps.c.claimed_until).limit(10))
            assert "USING INDEX ix_ap_steps_claimed" in _plan(engine, _literal(engine, lapsed))
    finally:
        engine.dispose()


def _add_tickets(engine: Engine, statuses: list[str]) -> None:
    with engine.begin() as c:
        c.execute(text(
            "INSERT INTO tickets (kind, title, body, status, created_by, labels, refs, "
            "created_at, updated_at, version, path, depth, next_attention_at) VALUES "
            "('question', 't', '', :status, 'bot', '[]', '{}', :now, :now, 1, '', 0, :back)"),
            [{"status": s, "now": NOW, "back": NOW - timedelta(minutes=1) if s == "deferred"
              else None} for s in statuses])


def test_the_deferred_index_covers_deferred_tickets_and_comes_and_goes(
        database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine)
        downgrade(engine, "0019_ap_step_claims_index")
        assert _index(engine, "tickets", "ix_tickets_status_attention") is not None
        assert _index(engine, "tickets", "ix_tickets_deferred_until") is None
        _add_tickets(engine, ["deferred", "open", "answered"])
        upgrade(engine)
        assert _index(engine, "tickets", "ix_tickets_status_attention") is None
        index = _index(engine, "tickets", "ix_tickets_deferred_until")
        assert index is not None and index["column_names"] == ["next_attention_at"]
        where = str(index["dialect_options"][f"{engine.dialect.name}_where"])
        assert "status" in where and "deferred" in where
        # The deferred ticket made before the migration is still found by what it serves.
        with engine.connect() as c:
            [back] = SqlTicketRepository(c).defer_elapsed(NOW, 10)
            assert back.status.value == "deferred"
            earliest = [row.at for row in c.execute(_EARLIEST_DEADLINES)]
            assert NOW - timedelta(minutes=1) in earliest
    finally:
        engine.dispose()


def test_after_the_start_analyze_even_connections_opened_before_plan_with_statistics(
        tmp_path: Path) -> None:
    """SQLite reads the planner's statistics when a connection opens: the hub's ANALYZE
    at start must not leave the pool's earlier connections planning without them."""
    store = SqlStore(make_engine(f"sqlite:///{tmp_path / 'hub.db'}"))

    def plans() -> list[str]:
        """The deferred tickets' part of the earliest-deadline plan, on three pooled
        connections at once."""
        with store.engine.connect() as a, store.engine.connect() as b, \
                store.engine.connect() as c:
            return [" ".join(str(row[-1]) for row in connection.exec_driver_sql(
                "EXPLAIN QUERY PLAN " + _literal(store.engine, _EARLIEST_DEADLINES))
            ).rsplit("UNION ALL", 1)[1] for connection in (a, b, c)]

    try:
        upgrade(store.engine)
        _add_tickets(store.engine, ["open", "answered"] * 1000 + ["deferred"] * 3)
        assert not any("ix_tickets_deferred_until" in p for p in plans())  # no statistics
        store.analyze()
        # With statistics the deferred tickets' minimum comes from their own index.
        assert all("ix_tickets_deferred_until" in p for p in plans())
    finally:
        store.close()
        store.engine.dispose()
