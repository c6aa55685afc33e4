"""Engines: SQLite tuned for one busy process (WAL, one writer at a time), or PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from tickethub import json_codec

WRITE_OPTION = "tickethub_write"


def make_engine(url: str, *, echo: bool = False) -> Engine:
    """An engine for ``url``; for SQLite files the parent folder is created."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, parsed.database, echo)
    return create_engine(url, echo=echo, pool_size=10, max_overflow=40, pool_pre_ping=True,
                         json_serializer=json_codec.dumps,
                         json_deserializer=json_codec.loads)


def _sqlite_engine(url: str, database: str | None, echo: bool) -> Engine:
    if database and database != ":memory:":
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url,
        echo=echo,
        # Enough kept connections for the worker threads (else under load an overflow
        # connection is opened, its PRAGMAs run, for one query), handed out last-in
        # first-out so the few busy ones keep their page caches warm.
        pool_size=32,
        max_overflow=40,
        pool_use_lifo=True,
        connect_args={"check_same_thread": False, "timeout": 30},
        json_serializer=json_codec.dumps,
        json_deserializer=json_codec.loads,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take over transaction control from the sqlite3 module, so writes can begin
        # IMMEDIATE (no lock upgrade deadlocks) and reads stay DEFERRED.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        write = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine
