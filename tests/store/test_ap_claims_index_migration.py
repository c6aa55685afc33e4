"""Migration 0019 indexes the claimed Agent Protocol steps only: the in-hub worker's
search for lapsed claims (every third of a lease, in every process) probes that index
instead of scanning every step ever stored; it goes down and up again; on SQLite and
PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import inspect, select, text

from tickethub.store.ap_tables import ap_steps
from tickethub.store.engine import make_engine
from tickethub.store.migrate import downgrade, upgrade

BEFORE = "0018_chat_sync_tokens"


def _claim_indexes(engine) -> list[dict]:
    return [i for i in inspect(engine).get_indexes("ap_steps")
            if i["name"] == "ix_ap_steps_claimed"]


def test_the_claims_index_covers_claimed_steps_and_comes_and_goes(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        upgrade(engine)
        downgrade(engine, BEFORE)
        assert _claim_indexes(engine) == []
        upgrade(engine)
        [index] = _claim_indexes(engine)
        assert index["column_names"] == ["claimed_until"]
        if engine.dialect.name == "sqlite":
            # The lapsed-claims query, as the store sends it, is answered from the index.
            lapsed = (select(ap_steps.c.task_id).where(ap_steps.c.claimed_until
                                                       < datetime.now(UTC))
                      .order_by(ap_steps.c.claimed_until).limit(10))
            with engine.connect() as c:
                sql = str(lapsed.compile(c, compile_kwargs={"literal_binds": True}))
                plan = " ".join(str(row[-1]) for row in c.execute(
                    text("EXPLAIN QUERY PLAN " + sql)))
            assert "USING INDEX ix_ap_steps_claimed" in plan
    finally:
        engine.dispose()
