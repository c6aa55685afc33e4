"""An unreachable database is one problem, 503 ``database_unavailable`` with
``Retry-After``, which every door renders in its own wire format; the engine raises it for
a refused PostgreSQL connection and a SQLite database locked past its busy timeout."""

from __future__ import annotations

import json
import socket
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from tests.conftest import ADMIN_TOKEN, bearer
from tickethub.api.agent_protocol.errors import agent_protocol_json
from tickethub.api.openai.errors import openai_json
from tickethub.api.problems import problem_json, problem_of, render
from tickethub.errors import DatabaseUnavailable, TickethubError
from tickethub.server.runtime import HubRuntime
from tickethub.store.engine import WRITE_OPTION, make_engine

DOWN = DatabaseUnavailable("connection refused")


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """SQLite only: what is under test is the rendering, not the store."""
    return f"sqlite:///{tmp_path / 'hub.db'}"


def test_it_is_one_problem_with_retry_after() -> None:
    problem = problem_of(DOWN)
    assert (problem.status, problem.code) == (503, "database_unavailable")
    assert problem.headers == {"Retry-After": str(DOWN.retry_after)}
    assert "connection refused" not in problem.detail  # the driver's words stay in the log
    # Not a user's error: code that turns those into outcomes must let it pass.
    assert not isinstance(DOWN, TickethubError)


@pytest.mark.parametrize(("wire", "media_type", "code_of"), [
    (problem_json, "application/problem+json", lambda body: body["code"]),
    (agent_protocol_json, "application/json", lambda body: body["code"]),
    (openai_json, "application/json", lambda body: body["error"]["code"]),
])
def test_each_wire_format_keeps_status_and_retry_after(wire: Any, media_type: str,
                                                       code_of: Any) -> None:
    response = render(problem_of(DOWN), wire=wire)
    assert response.status_code == 503
    assert response.headers["retry-after"] == str(DOWN.retry_after)
    assert response.headers["content-type"].startswith(media_type)
    assert code_of(json.loads(bytes(response.body))) == "database_unavailable"


@pytest.fixture
def database_down(runtime: HubRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every token check reaches the database, which is away."""

    def refuse(*_: object, **__: object) -> None:
        raise DatabaseUnavailable("connection refused")

    monkeypatch.setattr(runtime.auth, "cached", lambda *_: None)
    monkeypatch.setattr(runtime.auth, "authenticate", refuse)


async def test_every_door_answers_503_in_its_own_shape(
    client: httpx.AsyncClient, database_down: None, caplog: pytest.LogCaptureFixture
) -> None:
    headers = bearer(ADMIN_TOKEN)
    native = await client.post("/api/v1/tickets", headers=headers,
                               json={"kind": "question", "title": "q"})
    listing = await client.get("/api/v1/tickets", headers=headers)
    ap = await client.post("/ap/v1/agent/tasks", headers=headers, json={"input": "x"})
    openai = await client.post("/v1/chat/completions", headers=headers, json={
        "model": "human", "messages": [{"role": "user", "content": "hi"}]})
    for response in (native, listing, ap, openai):
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == str(DOWN.retry_after)
    for response in (native, listing):
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == "database_unavailable"
    assert set(ap.json()) >= {"message", "code"} and ap.json()["code"] == "database_unavailable"
    assert openai.json()["error"]["code"] == "database_unavailable"
    # one warning line each, whether a direct route (the ask, the AP create) or the
    # router's handler answered
    warned = [r.getMessage() for r in caplog.records
              if r.getMessage().startswith("database unavailable on")]
    assert [w.split(":")[0] for w in warned] == [
        "database unavailable on POST /api/v1/tickets",
        "database unavailable on GET /api/v1/tickets",
        "database unavailable on POST /ap/v1/agent/tasks",
        "database unavailable on POST /v1/chat/completions"]


def test_a_refused_postgresql_connection_is_unavailable() -> None:
    pytest.importorskip("psycopg")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    engine = make_engine(f"postgresql+psycopg://hub:x@127.0.0.1:{port}/hub")
    try:
        with pytest.raises(DatabaseUnavailable), engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    finally:
        engine.dispose()


def test_sqlite_locked_past_the_busy_timeout_is_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    engine = make_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE t (x INTEGER)"))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA busy_timeout=0")  # (30 s in the hub)
            connection.commit()
            writing = connection.execution_options(**{WRITE_OPTION: True})
            with pytest.raises(DatabaseUnavailable), writing.begin():
                connection.execute(text("INSERT INTO t VALUES (1)"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        engine.dispose()


def test_other_database_errors_stay_what_they_are(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        with pytest.raises(Exception) as raised, engine.connect() as connection:
            connection.execute(text("SELECT * FROM no_such_table"))
        assert not isinstance(raised.value, DatabaseUnavailable)
        assert problem_of(raised.value).status == 500
    finally:
        engine.dispose()
