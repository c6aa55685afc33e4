"""The libpq connection string for the server an engine's URL names, for the hub's own
psycopg connections beside the engine's pool (the bus's LISTEN/NOTIFY, the leader lock)."""

from __future__ import annotations

from sqlalchemy.engine import URL


def libpq_conninfo(url: URL) -> str:
    """libpq key/value conninfo for the same server and options as ``url``.

    Built from the parsed parts, not by re-rendering the URL: a rendered URL writes a
    space as ``+``, which libpq does not decode, so ``?options=-c%20x%3Dy`` would reach
    the server as ``-c+x=y`` and the connection would never open. Needs the
    ``postgres`` extra (psycopg), imported here so a hub on SQLite runs without it."""
    from psycopg.conninfo import make_conninfo

    parts: dict[str, object] = {"host": url.host, "port": url.port, "user": url.username,
                                "password": url.password, "dbname": url.database}
    for key, value in url.query.items():
        parts[key] = value[-1] if isinstance(value, tuple) else value
    return make_conninfo(**{k: str(v) for k, v in parts.items() if v is not None})
