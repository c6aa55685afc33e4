"""The hub's own connections (LISTEN/NOTIFY, the leader lock) reach the same server, with
the same options, as the engine."""

from __future__ import annotations

from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.engine import make_url

from tickethub.store.conninfo import libpq_conninfo


def test_query_options_with_spaces_reach_libpq_decoded() -> None:
    url = make_url("postgresql+psycopg://hub:p%40ss@db.example:6543/hub"
                   "?options=-c%20synchronous_commit%3Don&sslmode=require")
    assert conninfo_to_dict(libpq_conninfo(url)) == {
        "host": "db.example", "port": "6543", "user": "hub", "password": "p@ss",
        "dbname": "hub", "options": "-c synchronous_commit=on", "sslmode": "require"}


def test_missing_parts_are_left_to_libpq_defaults() -> None:
    url = make_url("postgresql+psycopg:///hub")
    assert conninfo_to_dict(libpq_conninfo(url)) == {"dbname": "hub"}
