"""Multi-row inserts for group commits, which write dozens of rows per table in one
transaction: one statement per table instead of one per row is most of their speed.

``update_rows`` does the same for many rows updated by key (a batch of changed
tickets).

``insert_ids`` hands back the new primary keys in the order of the rows:

* PostgreSQL: one ``INSERT ... RETURNING`` (SQLAlchemy's "insertmanyvalues", sorted by
  parameter order).
* SQLite: SQLAlchemy can not promise RETURNING order there and falls back to one
  statement per row, so instead one ``executemany`` and ``last_insert_rowid()``. Rows
  inserted without explicit ids by one statement, in a write transaction (SQLite has one
  writer at a time), get consecutive rowids, so the ids are the ``n`` up to the last.

On SQLite the rows go to the driver's ``executemany`` as driver SQL
(``Connection.exec_driver_sql``, inside the connection's transaction, so the driver's
errors are mapped as for any statement), converted by each
column's own bind processor, the same conversion SQLAlchemy applies. SQLAlchemy would
convert every value of every row anew; here a value that is the very same object as
the one before in its column (the batch's shared timestamp, an empty list) is converted
once, which halves the CPU of a batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from sqlalchemy import (
    Connection,
    CursorResult,
    Dialect,
    Insert,
    Table,
    bindparam,
    func,
    insert,
    select,
    text,
    update,
)

_returning: dict[str, Insert] = {}
_driver_sql: dict[tuple[str, tuple[str, ...]], tuple[str, list[Any]]] = {}


def insert_ids(connection: Connection, table: Table, rows: Sequence[dict[str, Any]]
               ) -> list[int]:
    """Insert ``rows`` (no primary key given, all with the same keys) and return their
    new integer primary keys, in the order of ``rows``."""
    if not rows:
        return []
    if connection.dialect.name == "sqlite":
        _sqlite_executemany(connection, table, rows)
        # The connection's own counter, read from the driver directly: it touches no
        # table and takes no lock, so it needs none of SQLAlchemy's per-statement work
        # or error mapping (this runs once per batch of asks, on the write path).
        driver: Any = connection.connection.driver_connection
        last = int(driver.execute("SELECT last_insert_rowid()").fetchone()[0])
        return list(range(last - len(rows) + 1, last + 1))
    if len(rows) == 1:
        return [inserted_id(connection.execute(insert(table), rows[0]))]
    statement = _returning.get(table.name)
    if statement is None:
        pk = next(iter(table.primary_key.columns))
        statement = _returning[table.name] = insert(table).returning(
            pk, sort_by_parameter_order=True)
    return [int(i) for i in connection.execute(statement, list(rows)).scalars()]


def inserted_id(result: CursorResult[Any]) -> int:
    """The primary key a one-row ``INSERT`` gave its row."""
    key = result.inserted_primary_key
    if key is None:  # only for statements that are no single-row INSERT
        raise TypeError("not the result of a one-row INSERT")
    return int(key[0])


def reserve_ids(connection: Connection, table: Table, count: int) -> list[int]:
    """``count`` new primary keys of ``table``, ascending, for rows that are better
    written with their id (e.g. a ticket's path holds its id): on SQLite the next
    rowids, which nobody else can take in this write transaction (one writer at a
    time; for ``AUTOINCREMENT`` tables past ``sqlite_sequence`` too); on PostgreSQL
    values of the column's sequence."""
    if count <= 0:
        return []
    pk = next(iter(table.primary_key.columns))
    if connection.dialect.name == "sqlite":
        top = connection.execute(select(func.max(pk))).scalar() or 0
        if table.kwargs.get("sqlite_autoincrement"):
            used = connection.execute(
                text("SELECT seq FROM sqlite_sequence WHERE name = :name"),
                {"name": table.name}).scalar()
            top = max(top, used or 0)
        return list(range(top + 1, top + 1 + count))
    rows = connection.execute(
        text("SELECT nextval(pg_get_serial_sequence(:table, :column)) "
             "FROM generate_series(1, :count)"),
        {"table": table.name, "column": pk.name, "count": count}).scalars()
    return sorted(int(i) for i in rows)


def insert_rows(connection: Connection, table: Table, rows: Sequence[dict[str, Any]]
                ) -> None:
    """Insert ``rows`` (all with the same keys) in one statement."""
    if not rows:
        return
    if connection.dialect.name == "sqlite":
        _sqlite_executemany(connection, table, rows)
    else:
        connection.execute(insert(table), list(rows))


def update_rows(connection: Connection, table: Table, rows: Sequence[dict[str, Any]]
                ) -> int:
    """``UPDATE table SET ... WHERE ...`` for each of ``rows`` (all with the same keys),
    in one statement: keys ``WHERE + column`` are matched, the others set. Returns how
    many rows changed (PostgreSQL may answer -1: unknown)."""
    if not rows:
        return 0
    columns = tuple(rows[0])
    if connection.dialect.name == "sqlite":
        return _sqlite_executemany(connection, table, rows).rowcount
    statement = _updates.get((table.name, columns))
    if statement is None:
        statement = _updates[(table.name, columns)] = (
            update(table)
            .where(*(table.c[c.removeprefix(WHERE)] == bindparam(c)
                     for c in columns if c.startswith(WHERE)))
            .values({c: bindparam(c, type_=table.c[c].type)
                     for c in columns if not c.startswith(WHERE)}))
    return int(connection.execute(statement, list(rows)).rowcount)


WHERE = "where_"  # ``update_rows``: a key naming a column to match, not to set
_updates: dict[tuple[str, tuple[str, ...]], Any] = {}


def _sqlite_executemany(connection: Connection, table: Table,
                        rows: Sequence[dict[str, Any]]) -> CursorResult[Any]:
    """Run the insert (or, with ``WHERE`` keys, the update) as one driver ``executemany``
    in this connection's transaction and return its (closed) result. A driver error
    comes out as SQLAlchemy raises it for its own statements: an ``IntegrityError``, a
    locked database as ``DatabaseUnavailable`` through the engine's ``handle_error``."""
    columns = tuple(rows[0])
    # An update's SET columns first, then its WHERE columns, as its SQL has them.
    columns = (*(c for c in columns if not c.startswith(WHERE)),
               *(c for c in columns if c.startswith(WHERE)))
    sql, processors = _prepared(table, columns, connection.dialect)
    values_of = itemgetter(*columns)
    converted = [(i, process) for i, process in enumerate(processors) if process is not None]
    last_in: list[Any] = [_UNSET] * len(columns)
    last_out: list[Any] = [None] * len(columns)
    params = []
    for row in rows:
        values = list(values_of(row)) if len(columns) > 1 else [row[columns[0]]]
        for i, process in converted:
            value = values[i]
            if value is not last_in[i]:
                last_in[i] = value
                last_out[i] = process(value)
            values[i] = last_out[i]
        params.append(tuple(values))
    # Driver SQL with already-converted tuples: SQLAlchemy hands them to the driver's
    # ``executemany`` as they are (no compiling, no bind processing).
    return connection.exec_driver_sql(sql, params)


_UNSET = object()


def _prepared(table: Table, columns: tuple[str, ...], dialect: Dialect
              ) -> tuple[str, list[Callable[[Any], Any] | None]]:
    """The driver SQL (qmark style) and the bind processors of ``columns``, made once:
    an INSERT, or an UPDATE when some are ``WHERE`` keys (those last)."""
    key = (table.name, columns)
    found = _driver_sql.get(key)
    if found is None:
        quote = dialect.identifier_preparer.quote
        names = [c.removeprefix(WHERE) for c in columns]
        keys = [n for c, n in zip(columns, names, strict=True) if c.startswith(WHERE)]
        if keys:
            sets = names[: len(names) - len(keys)]
            sql = (f"UPDATE {quote(table.name)} SET "
                   f"{', '.join(f'{quote(c)} = ?' for c in sets)} "
                   f"WHERE {' AND '.join(f'{quote(c)} = ?' for c in keys)}")
        else:
            sql = (f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in columns)}) "
                   f"VALUES ({', '.join('?' for _ in columns)})")
        # The dialect's own processors (e.g. SQLite's DATETIME text format), exactly
        # what SQLAlchemy applies to its own statements.
        processors: list[Callable[[Any], Any] | None] = [
            table.c[n].type.dialect_impl(dialect).bind_processor(dialect) for n in names]
        found = _driver_sql[key] = (sql, processors)
    return found


class InList:
    """A statement with one ``column IN (...)`` list of values given at execute time,
    built once per length of the list: ``build(values_in)`` makes it, where
    ``values_in(column)`` is the ``IN`` clause. Up to ``IN_LIST_MAX`` values, it has one
    plain parameter per value, so each length is compiled once; SQLAlchemy compiles a
    statement with one "expanding" list parameter again on every execution, which cost
    the group commits' batched look-ups and updates as much as running them. Longer
    lists (rare) share one statement with the expanding parameter."""

    def __init__(self, build: Callable[[Callable[[Any], Any]], Any]) -> None:
        self.build = build
        self._by_length: dict[int, Any] = {}

    def bound(self, values: Sequence[Any], **params: Any) -> tuple[Any, dict[str, Any]]:
        """``(statement, parameters)`` for ``values`` and the other ``params``."""
        length = min(len(values), IN_LIST_MAX + 1)
        statement = self._by_length.get(length)
        if statement is None:
            statement = self._by_length[length] = self.build(
                (lambda column: column.in_(bindparam("in_list", expanding=True)))
                if length > IN_LIST_MAX else
                (lambda column: column.in_([bindparam(f"in_{i}", type_=column.type)
                                            for i in range(length)])))
        if length > IN_LIST_MAX:
            params["in_list"] = list(values)
        else:
            params.update((f"in_{i}", value) for i, value in enumerate(values))
        return statement, params


IN_LIST_MAX = 64  # more values than a group commit's batch (``MAX_BATCH``) are rare
