"""``store``: one ``Store`` per test, of each kind the hub has: the in-memory fake, SQLite
and (when a server is there) PostgreSQL. Tests taking it are the store contract: the
same test functions run on all three (``test_store_contract*.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import IntegrityError

from tests.conftest import _PgDatabases, require_server
from tickethub.store.engine import make_engine
from tickethub.store.memory_state import ConstraintViolation
from tickethub.store.memory_store import MemoryStore
from tickethub.store.migrate import upgrade
from tickethub.store.sql_store import SqlStore

STORES = ["memory", "sqlite", "postgresql"]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path,
          pg_databases: _PgDatabases | None) -> Iterator[Any]:
    if request.param == "memory":
        yield MemoryStore()
        return
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'hub.db'}"
    else:
        require_server("PostgreSQL", pg_databases is not None)
        assert pg_databases is not None
        url = pg_databases.fresh()
    engine = make_engine(url)
    upgrade(engine)
    yield SqlStore(engine)
    engine.dispose()
    if request.param == "postgresql":
        assert pg_databases is not None
        pg_databases.drop(url)


def on_store(store: Any, memory: Any, sql: Any) -> Any:
    """The side store of ``store``'s kind: ``memory(store)`` on the in-memory store,
    ``sql(store)`` on SQLite and PostgreSQL."""
    return memory(store) if isinstance(store, MemoryStore) else sql(store)


# What a store raises for a broken unique key or reference.
REFUSED = (ConstraintViolation, IntegrityError)
