"""Engines: SQLite tuned for one busy process (WAL, one writer at a time), or PostgreSQL.

Both raise :class:`~tickethub.errors.DatabaseUnavailable` (chained to the driver's error)
when the database cannot be reached, drops the connection, or (SQLite) stays locked past
the busy timeout; the doors answer that with 503 and ``Retry-After``. A dropped
connection also invalidates the pool, and PostgreSQL connections are pinged at checkout,
so the first request after the database is back gets a fresh connection.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.exc import OperationalError

from tickethub import json_codec
from tickethub.errors import DatabaseUnavailable, ValidationFailed

WRITE_OPTION = "tickethub_write"
BUSY_TIMEOUT_MS = 30000  # SQLite: how long a connection waits for a lock held elsewhere


def make_engine(url: str, *, echo: bool = False) -> Engine:
    """An engine for ``url``; for SQLite files the parent folder is created. A URL whose
    driver is not installed (PostgreSQL on a plain install) raises
    :class:`~tickethub.errors.ValidationFailed` naming ``database_url``."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = _sqlite_engine(url, parsed.database, echo)
    else:
        try:
            engine = create_engine(url, echo=echo, pool_size=10, max_overflow=40,
                                   pool_pre_ping=True, json_serializer=json_codec.dumps,
                                   json_deserializer=json_codec.loads)
        except ModuleNotFoundError as exc:  # the driver: a plain install has SQLite's only
            raise ValidationFailed(
                f"the database URL needs the driver {exc.name!r}, which is not installed; "
                "for PostgreSQL: pip install 'tickethub[postgres]'",
                field="database_url") from exc
    event.listen(engine, "handle_error", _unavailable)
    return engine


# SQLSTATE classes of an unreachable server: connection exception, insufficient
# resources (too many connections), operator intervention (shutting down, starting up).
_UNAVAILABLE_SQLSTATE = ("08", "53", "57")
_SQLITE_BUSY = ("database is locked", "database is busy", "database table is locked")


def unavailable(context: ExceptionContext) -> bool:
    """True when the error in ``context`` means the database is out of reach for now,
    not that the statement is wrong."""
    if context.is_disconnect:
        return True
    error = context.sqlalchemy_exception
    if not isinstance(error, OperationalError):
        return False
    original = context.original_exception
    sqlstate = getattr(original, "sqlstate", None)
    if context.dialect.name == "sqlite":
        return any(text in str(original) for text in _SQLITE_BUSY)
    # No SQLSTATE: the server never answered (refused, reset, timed out).
    return sqlstate is None or sqlstate[:2] in _UNAVAILABLE_SQLSTATE


def _unavailable(context: ExceptionContext) -> DatabaseUnavailable | None:
    # A failed pre-ping is the pool's own business: it reconnects.
    if context.is_pre_ping or not unavailable(context):
        return None
    original = context.original_exception
    first_line = str(original).strip().partition("\n")[0]
    return DatabaseUnavailable(first_line or type(original).__name__)


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
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        write = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine
