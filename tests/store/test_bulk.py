"""Multi-row inserts (``store/bulk.py``), the SQL side of the repositories' batch
writes: ids come back in row order and match what is stored, ticket paths hold their ids
and depths, lookup rows are written, values are stored exactly as SQLAlchemy's own
insert stores them, ids are never handed out twice, and a rolled-back batch leaves no
row, and the driver's errors come out as SQLAlchemy's own statements raise them. What
every store promises (the memory one too) is in ``test_store_contract_*``."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import (
    Column,
    Integer,
    MetaData,
    String,
    Table,
    bindparam,
    func,
    insert,
    select,
    text,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from tickethub.domain.events import EventType, NewEvent
from tickethub.domain.messages import MessageDraft, MessageKind
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft, TicketQuery
from tickethub.errors import DatabaseUnavailable
from tickethub.server.runtime import HubRuntime
from tickethub.store.bulk import (
    IN_LIST_MAX,
    WHERE,
    InList,
    insert_ids,
    insert_rows,
    reserve_ids,
    update_rows,
)
from tickethub.store.engine import make_engine
from tickethub.store.tables import events, messages, ticket_labels, ticket_refs, tickets

NOW = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
DUE = datetime(2026, 5, 1, 12, 30, tzinfo=timezone(timedelta(hours=2)))
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"ok": {"type": "boolean"}},
                          "required": ["ok"]}
PROPOSAL: dict[str, Any] = {"plan": ["a", "b"], "cost": 1.5, "note": "größer ✓", "none": None}


class Rollback(Exception):
    """Raised inside a unit of work to roll it back."""


def _parent(runtime: HubRuntime) -> int:
    with runtime.store.write() as uow:
        return uow.tickets.add(TicketDraft(Kind.TASK, "parent"), "agent", NOW).id


def _counts(runtime: HubRuntime) -> dict[str, int]:
    with runtime.store.read() as uow:
        return {t.name: uow.connection.execute(select(func.count()).select_from(t)).scalar_one()
                for t in (tickets, ticket_labels, ticket_refs, messages, events)}


def _message_row(ticket_id: int, body: str) -> dict[str, Any]:
    return {"ticket_id": ticket_id, "author": "agent", "via": "api", "body": body,
            "kind": "comment", "trusted": False, "external_id": None,
            "data": {"body": body}, "created_at": NOW}


@pytest.mark.parametrize("count", [1, 2, 25])
def test_insert_ids_come_back_in_row_order_and_match_the_stored_rows(
    runtime: HubRuntime, count: int
) -> None:
    ticket_id = _parent(runtime)
    with runtime.store.write() as uow:
        first = insert_ids(uow.connection, messages, [_message_row(ticket_id, "before")])
        ids = insert_ids(uow.connection, messages,
                         [_message_row(ticket_id, f"m{i}") for i in range(count)])
    assert len(ids) == count
    assert ids == list(range(ids[0], ids[0] + count))  # consecutive, ascending
    assert ids[0] > first[0]
    with runtime.store.read() as uow:
        stored = uow.connection.execute(
            select(messages.c.id, messages.c.body, messages.c.data)
            .where(messages.c.id.in_(ids)).order_by(messages.c.id)).all()
    assert [tuple(r) for r in stored] == [
        (i, f"m{n}", {"body": f"m{n}"}) for n, i in enumerate(ids)]


def test_insert_ids_of_nothing_is_nothing(runtime: HubRuntime) -> None:
    before = _counts(runtime)
    with runtime.store.write() as uow:
        assert insert_ids(uow.connection, messages, []) == []
        insert_rows(uow.connection, messages, [])
        assert reserve_ids(uow.connection, tickets, 0) == []
    assert _counts(runtime) == before


def test_add_many_gives_paths_that_hold_the_ids(runtime: HubRuntime) -> None:
    parent = _parent(runtime)
    with runtime.store.write() as uow:
        grandparent_path = uow.tickets.get(parent).path
        child = uow.tickets.add(TicketDraft(Kind.QUESTION, "child", parent_id=parent),
                                "agent", NOW)
    drafts = [(TicketDraft(Kind.TASK, "root a"), "agent"),
              (TicketDraft(Kind.QUESTION, "under parent", parent_id=parent), "agent"),
              (TicketDraft(Kind.TASK, "root b"), "bob"),
              (TicketDraft(Kind.INFO, "under child", parent_id=child.id), "agent")]
    with runtime.store.write() as uow:
        added = uow.tickets.add_many(drafts, NOW)
    ids = [t.id for t in added]
    assert ids == list(range(child.id + 1, child.id + 5))
    assert [t.title for t in added] == ["root a", "under parent", "root b", "under child"]
    assert grandparent_path == f"/{parent}/"
    assert [t.path for t in added] == [
        f"/{ids[0]}/", f"/{parent}/{ids[1]}/", f"/{ids[2]}/", f"{child.path}{ids[3]}/"]
    assert child.path == f"/{parent}/{child.id}/"
    with runtime.store.read() as uow:
        stored = [uow.tickets.get(i) for i in ids]
        depths = dict(uow.connection.execute(
            select(tickets.c.id, tickets.c.depth).where(tickets.c.id.in_(ids))).all())
        subtree = {t.id for t in uow.tickets.list(TicketQuery(parent_id=parent))}
    assert stored == added
    assert [depths[i] for i in ids] == [0, 1, 0, 2]
    assert subtree == {child.id, ids[1]}


def test_add_many_writes_label_and_ref_rows(runtime: HubRuntime) -> None:
    drafts = [(TicketDraft(Kind.TASK, "a", labels=("red", "blue", "red"),
                           refs={"ap_task_id": "task-a", "mail": ["<1@x>", "<2@x>"],
                                 "flag": True, "nested": {"no": "row"}, "n": 7}), "agent"),
              (TicketDraft(Kind.TASK, "b", labels=("blue",), refs={"ap_task_id": "task-b"}),
               "agent"),
              (TicketDraft(Kind.TASK, "c"), "agent")]
    with runtime.store.write() as uow:
        a, b, c = uow.tickets.add_many(drafts, NOW)
    with runtime.store.read() as uow:
        def found(**query: Any) -> list[int]:
            return sorted(t.id for t in uow.tickets.list(TicketQuery(**query)))

        assert found(ref=("ap_task_id", "task-a")) == [a.id]
        assert found(ref=("ap_task_id", "task-b")) == [b.id]
        assert found(ref=("mail", "<2@x>")) == [a.id]
        assert found(ref=("n", "7")) == [a.id]
        assert found(label="blue") == [a.id, b.id]
        assert found(label="red") == [a.id]
        labels = uow.connection.execute(
            select(ticket_labels.c.ticket_id, ticket_labels.c.label)).all()
        refs = uow.connection.execute(
            select(ticket_refs.c.ticket_id, ticket_refs.c.name, ticket_refs.c.value)).all()
    assert sorted(tuple(r) for r in labels) == sorted(
        [(a.id, "red"), (a.id, "blue"), (b.id, "blue")])
    assert sorted(tuple(r) for r in refs) == sorted(
        [(a.id, "ap_task_id", "task-a"), (a.id, "mail", "<1@x>"), (a.id, "mail", "<2@x>"),
         (a.id, "n", "7"), (b.id, "ap_task_id", "task-b")])
    assert c.labels == () and c.refs == {}


def _raw(runtime: HubRuntime, table: str, key: str, value: Any) -> dict[str, Any]:
    """A row as the driver returns it, with no SQLAlchemy type processing."""
    with runtime.store.read() as uow:
        row = uow.connection.execute(
            text(f"SELECT * FROM {table} WHERE {key} = :v"), {"v": value}).mappings().one()
    return dict(row)


def _ticket_row(ticket_id: int, title: str) -> dict[str, Any]:
    return {"id": ticket_id, "parent_id": None, "kind": "approval", "title": title,
            "body": "b", "status": "open", "created_by": "agent", "assignee": None,
            "labels": ["x", "ü"], "due_at": DUE, "response_schema": SCHEMA,
            "proposal": PROPOSAL, "refs": {"a": ["1", 2, None]}, "created_at": NOW,
            "updated_at": NOW, "version": 1, "depth": 0, "path": f"/{ticket_id}/",
            "idempotency_key": None, "request_hash": None}


def test_rows_are_stored_exactly_as_sqlalchemys_own_insert_stores_them(runtime: HubRuntime
                                                                      ) -> None:
    """The batch path converts values itself on SQLite; compare raw stored values with
    a row that went through ``connection.execute(insert(table), row)``."""
    with runtime.store.write() as uow:
        mine, reference = reserve_ids(uow.connection, tickets, 2)
        insert_rows(uow.connection, tickets, [_ticket_row(mine, "t")])
        uow.connection.execute(insert(tickets), _ticket_row(reference, "t"))
        parent = mine
        [message_id] = insert_ids(uow.connection, messages, [_message_row(parent, "same")])
        reference_message = uow.connection.execute(
            insert(messages), _message_row(parent, "same")).inserted_primary_key[0]
        null_data = {**_message_row(parent, "null data"), "data": None}
        [null_id] = insert_ids(uow.connection, messages, [null_data])
        reference_null = uow.connection.execute(
            insert(messages), null_data).inserted_primary_key[0]
    ignore = {"id", "path"}
    ours = {k: v for k, v in _raw(runtime, "tickets", "id", mine).items() if k not in ignore}
    theirs = {k: v for k, v in _raw(runtime, "tickets", "id", reference).items()
              if k not in ignore}
    assert ours == theirs
    for a, b in ((message_id, reference_message), (null_id, reference_null)):
        ours = {k: v for k, v in _raw(runtime, "messages", "id", a).items() if k != "id"}
        theirs = {k: v for k, v in _raw(runtime, "messages", "id", b).items() if k != "id"}
        assert ours == theirs


def test_reserved_ids_are_not_handed_out_again_by_a_later_transaction(runtime: HubRuntime
                                                                      ) -> None:
    with runtime.store.write() as uow:
        first = [t.id for t in uow.tickets.add_many(
            [(TicketDraft(Kind.TASK, f"a{i}"), "agent") for i in range(3)], NOW)]
    with runtime.store.write() as uow:
        reserved = reserve_ids(uow.connection, tickets, 3)
        second = [t.id for t in uow.tickets.add_many(
            [(TicketDraft(Kind.TASK, f"b{i}"), "agent") for i in range(3)], NOW)]
    with runtime.store.write() as uow:
        third = [uow.tickets.add(TicketDraft(Kind.TASK, "c"), "agent", NOW).id]
    assert reserved == sorted(reserved) and len(set(reserved)) == 3
    assert min(reserved) > max(first)
    everything = first + second + third
    assert len(set(everything)) == len(everything)
    assert max(first) < min(second) and max(second) < min(third)


def test_concurrent_transactions_never_share_a_reserved_id(runtime: HubRuntime) -> None:
    """Two write transactions open at once (PostgreSQL; SQLite takes them one after the
    other) reserve and insert; every id is stored once."""
    barrier = threading.Barrier(2, timeout=10)
    results: dict[str, list[int]] = {}
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            with runtime.store.write() as uow:
                if runtime.store.engine.dialect.name == "postgresql":
                    barrier.wait()  # both transactions are open before either reserves
                results[name] = [t.id for t in uow.tickets.add_many(
                    [(TicketDraft(Kind.TASK, f"{name}{i}"), "agent") for i in range(20)],
                    NOW)]
                if runtime.store.engine.dialect.name == "postgresql":
                    barrier.wait()  # and both reserved before either commits
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in ("p", "q")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    ids = results["p"] + results["q"]
    assert len(set(ids)) == 40
    with runtime.store.read() as uow:
        stored = uow.connection.execute(select(tickets.c.id, tickets.c.title)).all()
    titles = dict(tuple(r) for r in stored)
    assert [titles[i] for i in results["p"]] == [f"p{i}" for i in range(20)]
    assert [titles[i] for i in results["q"]] == [f"q{i}" for i in range(20)]


def test_a_rolled_back_batch_stores_nothing(runtime: HubRuntime) -> None:
    parent = _parent(runtime)
    before = _counts(runtime)
    with pytest.raises(Rollback), runtime.store.write() as uow:
        added = uow.tickets.add_many(
            [(TicketDraft(Kind.TASK, f"t{i}", labels=("l",), refs={"r": f"v{i}"}), "agent")
             for i in range(3)], NOW)
        uow.messages.add_many([MessageDraft(t.id, "agent", "api", "m", MessageKind.COMMENT,
                                            False) for t in [*added, *added]], NOW)
        uow.events.append_many([NewEvent(EventType.TICKET_CREATED, t.id, t.path, "agent", {})
                                for t in added], NOW)
        assert len(uow.messages.for_ticket(added[0].id)) == 2  # visible inside
        raise Rollback
    assert _counts(runtime) == before
    with runtime.store.read() as uow:
        assert uow.tickets.list(TicketQuery(ref=("r", "v0"))) == []
        assert uow.tickets.list(TicketQuery(label="l")) == []

    # The next batch takes the places the rolled-back one left and reads back whole.
    with runtime.store.write() as uow:
        again = uow.tickets.add_many([(TicketDraft(Kind.TASK, "after", parent_id=parent),
                                       "agent")], NOW)
        seq = uow.events.append_many(
            [NewEvent(EventType.TICKET_CREATED, again[0].id, again[0].path, "agent", {})],
            NOW)
    with runtime.store.read() as uow:
        assert uow.tickets.get(again[0].id) == again[0]
        assert uow.events.since(seq[0].seq - 1, limit=10) == seq


_plain = Table("plain", MetaData(), Column("id", Integer, primary_key=True),
               Column("name", String(20), unique=True))

BULK_WRITES: dict[str, Callable[[Any], object]] = {
    "insert_rows": lambda c: insert_rows(c, _plain, [{"name": "a"}, {"name": "b"}]),
    "insert_ids": lambda c: insert_ids(c, _plain, [{"name": "a"}, {"name": "b"}]),
    "update_rows": lambda c: update_rows(c, _plain, [{"name": "z", WHERE + "id": 1}]),
}


@pytest.fixture
def plain_engine(tmp_path: Any) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'plain.db'}")
    _plain.metadata.create_all(engine)
    yield engine
    engine.dispose()


@pytest.mark.parametrize("write", BULK_WRITES.values(), ids=BULK_WRITES.keys())
def test_a_locked_sqlite_database_is_unavailable(tmp_path: Any, plain_engine: Engine,
                                                 write: Callable[[Any], object]) -> None:
    """Another process holding the write lock past the busy timeout: the hub's 503
    (``DatabaseUnavailable``, via the engine's ``handle_error``), not a bare
    ``sqlite3.OperationalError`` (a 500)."""
    holder = sqlite3.connect(tmp_path / "plain.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with plain_engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA busy_timeout=0")  # (30 s in the hub)
            connection.commit()
            with pytest.raises(DatabaseUnavailable) as raised, connection.begin():
                write(connection)
            assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_broken_constraint_is_sqlalchemys_integrity_error(plain_engine: Engine) -> None:
    with pytest.raises(IntegrityError), plain_engine.begin() as connection:
        insert_rows(connection, _plain, [{"name": "same"}, {"name": "same"}])
    with plain_engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(_plain)).scalar() == 0


@pytest.mark.parametrize("count", [0, 1, 3, IN_LIST_MAX, IN_LIST_MAX + 1, 130])
def test_an_in_list_statement_finds_exactly_the_values_given(
    runtime: HubRuntime, count: int
) -> None:
    with runtime.store.write() as uow:
        made = uow.tickets.add_many([(TicketDraft(Kind.TASK, f"t{i}"), "agent")
                                     for i in range(count + 5)], NOW)
    wanted = [t.id for t in made[5:]]  # not the first five
    titles = InList(lambda ids_in: select(tickets.c.title).where(ids_in(tickets.c.id))
                    .where(tickets.c.created_by == bindparam("by")).order_by(tickets.c.id))
    with runtime.store.read() as uow:
        found = uow.connection.execute(*titles.bound(wanted, by="agent")).scalars().all()
        assert not uow.connection.execute(*titles.bound(wanted, by="x")).scalars().all()
    assert found == [f"t{i}" for i in range(5, count + 5)]


def test_an_in_list_statement_is_built_once_per_length_up_to_the_maximum() -> None:
    built: list[int] = []

    def build(ids_in: Callable[[Any], Any]) -> Any:
        built.append(1)
        return select(tickets.c.id).where(ids_in(tickets.c.id))

    statements = InList(build)
    one, _ = statements.bound([1, 2])
    again, params = statements.bound([7, 8])
    assert one is again and params == {"in_0": 7, "in_1": 8}
    long_one, long_params = statements.bound(list(range(IN_LIST_MAX + 1)))
    longer, _ = statements.bound(list(range(IN_LIST_MAX + 9)))
    assert long_one is longer and long_params == {"in_list": list(range(IN_LIST_MAX + 1))}
    assert len(built) == 2
