"""Hub processes started together on one new database (two `serve`s, or `serve --workers`
restarting workers) must not fail each other's start: the first admin is created once."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import _PgDatabases, require_server
from tickethub.services.auth import AuthService
from tickethub.store.engine import make_engine
from tickethub.store.migrate import upgrade
from tickethub.store.sql_store import SqlStore
from tickethub.testing import CountingTokens, FakeClock

ADMIN = "th_start_race_admin_token_0123456789"


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
@pytest.mark.parametrize("configured", [ADMIN, None])
def test_admins_bootstrapped_at_once_by_four_processes_make_one_admin(
        database: str, configured: str | None, tmp_path: Path,
        pg_databases: _PgDatabases | None) -> None:
    if database == "sqlite":
        url = f"sqlite:///{tmp_path / 'hub.db'}"
    else:
        require_server("PostgreSQL", pg_databases is not None)
        assert pg_databases is not None
        url = pg_databases.fresh()
    engines = [make_engine(url) for _ in range(4)]  # one per "process"
    upgrade(engines[0])
    start = threading.Barrier(len(engines))
    outcomes: list[Any] = [None] * len(engines)

    def boot(i: int) -> None:
        auth = AuthService(SqlStore(engines[i]), FakeClock(), CountingTokens())
        start.wait()
        try:
            outcomes[i] = ("ok", auth.bootstrap_admin(configured))
        except Exception as error:
            outcomes[i] = ("raised", repr(error))

    threads = [threading.Thread(target=boot, args=(i,)) for i in range(len(engines))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert [o[0] for o in outcomes] == ["ok"] * 4, outcomes
        generated = [o[1] for o in outcomes if o[1] is not None]
        assert len(generated) == (0 if configured else 1)  # one start shows a new token
        with SqlStore(engines[0]).read() as uow:
            assert uow.actors.count_admins() == 1
            assert len(uow.actors.tokens()) == 1
    finally:
        for engine in engines:
            engine.dispose()
        if database == "postgresql":
            assert pg_databases is not None
            pg_databases.drop(url)
