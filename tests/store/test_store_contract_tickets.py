"""The store contract, tickets: every test runs on the in-memory store, SQLite and
PostgreSQL (``store`` in ``conftest.py``). Ids and paths, values that round-trip,
optimistic concurrency, bulk updates of locked tickets, idempotency keys, the list
filters, trees, the read rule and deadlines."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from tickethub.domain.messages import MessageDraft, MessageKind
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Answer, TicketDraft, TicketQuery

NOW = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
DUE = datetime(2026, 5, 1, 12, 30, tzinfo=timezone(timedelta(hours=2)))
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"ok": {"type": "boolean"}},
                          "required": ["ok"]}
PROPOSAL: dict[str, Any] = {"plan": ["a", "b"], "cost": 1.5, "note": "größer ✓", "none": None}


class Rollback(Exception):
    """Raised inside a unit of work to roll it back."""


def _add(store: Any, title: str = "t", by: str = "agent", **fields: Any) -> Any:
    with store.write() as uow:
        return uow.tickets.add(TicketDraft(fields.pop("kind", Kind.TASK), title, **fields),
                               by, NOW)


def _ids(store: Any, **query: Any) -> list[int]:
    with store.read() as uow:
        return [t.id for t in uow.tickets.list(TicketQuery(**query))]


def _rich_draft(title: str) -> TicketDraft:
    return TicketDraft(Kind.APPROVAL, title, "body ✓", assignee="alice",
                       labels=("x", "y"), due_at=DUE, response_schema=SCHEMA,
                       proposal=PROPOSAL, refs={"ap_task_id": title, "list": ["1", "2"]})


def test_a_ticket_reads_back_as_it_was_added_with_utc_times(store: Any) -> None:
    with store.write() as uow:
        single = uow.tickets.add(_rich_draft("single"), "agent", NOW)
    with store.write() as uow:
        batch = uow.tickets.add_many([(_rich_draft("batch"), "agent")], NOW)[0]
    with store.read() as uow:
        single_read, batch_read = uow.tickets.get(single.id), uow.tickets.get(batch.id)
        assert uow.tickets.get(10_000) is None
    assert single_read == single and batch_read == batch
    strip = {"id": 0, "path": "", "title": "", "refs": {}}
    assert replace(single_read, **strip) == replace(batch_read, **strip)
    assert batch_read.due_at == DUE and batch_read.due_at.utcoffset() == timedelta(0)
    assert batch_read.created_at == NOW and batch_read.created_at.tzinfo is not None
    assert batch_read.proposal == PROPOSAL and batch_read.response_schema == SCHEMA
    assert batch_read.status is Status.OPEN and batch_read.version == 1
    assert batch_read.labels == ("x", "y") and batch_read.path == f"/{batch.id}/"


def test_json_values_come_back_as_json_and_are_never_shared(store: Any) -> None:
    refs: dict[str, Any] = {"pair": ("a", "b"), "n": {"deep": [1]}}
    ticket = _add(store, refs=refs, proposal={"p": [1]})
    refs["n"]["deep"].append(2)  # the caller's dict changes after the write
    with store.read() as uow:
        read = uow.tickets.get(ticket.id)
        read.refs["n"]["deep"].append(3)  # and a reader's copy after the read
        again = uow.tickets.get(ticket.id)
    assert again.refs == {"pair": ["a", "b"], "n": {"deep": [1]}}
    assert again.proposal == {"p": [1]}


def test_a_naive_datetime_is_refused(store: Any) -> None:
    with pytest.raises(Exception, match="naive"), store.write() as uow:
        uow.tickets.add(TicketDraft(Kind.TASK, "t", due_at=datetime(2026, 1, 1)), "a", NOW)
    with store.read() as uow:
        assert uow.tickets.count() == 0


def test_ids_ascend_and_paths_hold_the_ancestry(store: Any) -> None:
    parent = _add(store, "parent")
    with store.write() as uow:
        child = uow.tickets.add(TicketDraft(Kind.QUESTION, "child", parent_id=parent.id),
                                "agent", NOW)
    drafts = [(TicketDraft(Kind.TASK, "root a"), "agent"),
              (TicketDraft(Kind.QUESTION, "under parent", parent_id=parent.id), "agent"),
              (TicketDraft(Kind.TASK, "root b"), "bob"),
              (TicketDraft(Kind.INFO, "under child", parent_id=child.id), "agent")]
    with store.write() as uow:
        added = uow.tickets.add_many(drafts, NOW)
    ids = [t.id for t in added]
    assert ids == sorted(ids) and len(set(ids)) == 4 and ids[0] > child.id
    assert [t.title for t in added] == ["root a", "under parent", "root b", "under child"]
    assert child.path == f"/{parent.id}/{child.id}/"
    assert [t.path for t in added] == [
        f"/{ids[0]}/", f"/{parent.id}/{ids[1]}/", f"/{ids[2]}/", f"{child.path}{ids[3]}/"]
    with store.read() as uow:
        assert [uow.tickets.get(i) for i in ids] == added
        assert uow.tickets.count() == 6
    assert sorted(_ids(store, parent_id=parent.id)) == [child.id, ids[1]]


def test_a_missing_parent_is_refused_and_nothing_is_stored(store: Any) -> None:
    with pytest.raises(Exception), store.write() as uow:  # noqa: B017 (each store its own)
        uow.tickets.add_many([(TicketDraft(Kind.TASK, "ok"), "agent"),
                              (TicketDraft(Kind.TASK, "orphan", parent_id=999), "agent")],
                             NOW)
    with store.read() as uow:
        assert uow.tickets.count() == 0


def test_update_is_a_compare_and_set_on_the_version(store: Any) -> None:
    ticket = _add(store, kind=Kind.QUESTION)
    answered = replace(ticket.moved_to(Status.ANSWERED, NOW + timedelta(seconds=1)),
                       answer=Answer("yes", {"ok": True}, "alice", "web", NOW))
    with store.write() as uow:
        assert uow.tickets.update(answered, ticket.version)
        assert not uow.tickets.update(answered.changed(NOW, title="late"), ticket.version)
        assert not uow.tickets.update(replace(answered, id=10_000), 1)  # no such ticket
    with store.read() as uow:
        stored = uow.tickets.get(ticket.id)
    assert stored == answered and stored.version == 2
    assert stored.answer == Answer("yes", {"ok": True}, "alice", "web", NOW)


def test_update_keeps_identity_and_tree_as_stored(store: Any) -> None:
    parent = _add(store, "p")
    child = _add(store, "c", parent_id=parent.id)
    forged = replace(child, kind=Kind.APPROVAL, created_by="mallory", path="/1/",
                     parent_id=None, created_at=NOW + timedelta(days=1), title="renamed",
                     version=child.version + 1)
    with store.write() as uow:
        assert uow.tickets.update(forged, child.version)
    with store.read() as uow:
        stored = uow.tickets.get(child.id)
    assert stored.title == "renamed" and stored.version == 2
    assert (stored.kind, stored.created_by, stored.path, stored.parent_id,
            stored.created_at) == (Kind.TASK, "agent", child.path, parent.id, NOW)


def test_labels_and_refs_are_found_and_follow_updates(store: Any) -> None:
    with store.write() as uow:
        a, b, c = uow.tickets.add_many([
            (TicketDraft(Kind.TASK, "a", labels=("red", "blue"),
                         refs={"ap_task_id": "task-a", "mail": ["<1@x>", "<2@x>"],
                               "flag": True, "nested": {"no": "row"}, "n": 7}), "agent"),
            (TicketDraft(Kind.TASK, "b", labels=("blue",), refs={"ap_task_id": "task-b"}),
             "agent"),
            (TicketDraft(Kind.TASK, "c"), "agent")], NOW)
    assert _ids(store, ref=("ap_task_id", "task-a")) == [a.id]
    assert _ids(store, ref=("mail", "<2@x>")) == [a.id]
    assert _ids(store, ref=("n", "7")) == [a.id]
    assert _ids(store, ref=("flag", "True")) == _ids(store, ref=("nested", "no")) == []
    assert _ids(store, label="blue") == [b.id, a.id]
    assert _ids(store, label=" RED ") == [a.id]  # the query is trimmed and lower-cased
    assert c.labels == () and c.refs == {}
    with store.write() as uow:
        locked = uow.tickets.get(a.id, for_update=True)
        first = locked.changed(NOW, labels=("blue", "green"), refs={"mail": "<3@x>"})
        assert uow.tickets.update(first, locked.version)
        assert uow.tickets.update(first.changed(NOW, labels=("green",)), first.version)
    with store.write() as uow:
        plain = uow.tickets.get(b.id)  # not locked: the store reads what it replaces
        assert uow.tickets.update(plain.changed(NOW, labels=("green",), refs={}),
                                  plain.version)
    assert _ids(store, label="green") == [b.id, a.id]
    assert _ids(store, label="blue") == _ids(store, label="red") == []
    assert _ids(store, ref=("mail", "<3@x>")) == [a.id]
    assert _ids(store, ref=("mail", "<1@x>")) == _ids(store, ref=("ap_task_id", "task-b")) == []


def test_update_many_writes_tickets_locked_in_this_transaction(store: Any) -> None:
    one, two = _add(store, "one"), _add(store, "two")
    with store.write() as uow:
        locked = uow.tickets.get_many([two.id, one.id, 10_000, one.id], for_update=True)
        assert sorted(locked) == [one.id, two.id]
        uow.tickets.update_many([
            (locked[one.id].moved_to(Status.DONE, NOW), one.version),
            (locked[two.id].changed(NOW, labels=("x",), assignee="bob"), two.version)])
        again = uow.tickets.get(one.id)
        # The same tickets again, at their new versions, in the same transaction.
        uow.tickets.update_many([(again.changed(NOW, title="one!"), again.version)])
    with store.read() as uow:
        stored = uow.tickets.get_many([one.id, two.id])
    assert stored[one.id].status is Status.DONE and stored[one.id].title == "one!"
    assert stored[one.id].version == 3
    assert stored[two.id].assignee == "bob" and stored[two.id].version == 2
    assert _ids(store, label="x") == [two.id]


def test_update_many_writes_one_change_shared_by_many_tickets(store: Any) -> None:
    """A deadline round's shape: every ticket gets the same new fields (one statement on
    the SQL stores), each its own next version; a ticket at another version is kept."""
    one, two, three = _add(store, "one"), _add(store, "two"), _add(store, "three")
    with store.write() as uow:
        locked = uow.tickets.get_many([one.id, two.id], for_update=True)
        uow.tickets.update_many([(locked[one.id].changed(NOW, title="one!"), one.version)])
    with store.write() as uow:
        locked = uow.tickets.get_many([one.id, two.id, three.id], for_update=True)
        uow.tickets.update_many([(t.moved_to(Status.EXPIRED, NOW + timedelta(hours=1)), t.version)
                                 for t in locked.values()])
    with store.read() as uow:
        stored = uow.tickets.get_many([one.id, two.id, three.id])
    assert {t.status for t in stored.values()} == {Status.EXPIRED}
    assert {t.updated_at for t in stored.values()} == {NOW + timedelta(hours=1)}
    assert [stored[i].version for i in (one.id, two.id, three.id)] == [3, 2, 2]
    assert stored[one.id].title == "one!" and stored[two.id].title == "two"


def test_update_many_refuses_what_was_not_locked_at_that_version(store: Any) -> None:
    one = _add(store, "one")
    with pytest.raises(RuntimeError), store.write() as uow:
        plain = uow.tickets.get(one.id)
        uow.tickets.update_many([(plain.changed(NOW, title="x"), plain.version)])
    with pytest.raises(RuntimeError), store.write() as uow:
        locked = uow.tickets.get_many([one.id], for_update=True)[one.id]
        uow.tickets.update_many([(locked.changed(NOW, title="x"), locked.version + 1)])
    with store.read() as uow:
        assert uow.tickets.get(one.id) == one


def test_idempotency_keys_find_the_ticket_and_its_request_hash(store: Any) -> None:
    with store.write() as uow:
        first = uow.tickets.add(TicketDraft(Kind.QUESTION, "q"), "agent", NOW,
                                idempotency_key="k1", request_hash="h1")
        a, b = uow.tickets.add_many(
            [(TicketDraft(Kind.TASK, "a"), "agent"), (TicketDraft(Kind.TASK, "b"), "other")],
            NOW, keys=[("k2", "h2"), ("k1", None)])  # a key is per creator
    with store.read() as uow:
        assert uow.tickets.find_idempotent("agent", "k1") == (first, "h1")
        assert uow.tickets.find_idempotent("agent", "k2") == (a, "h2")
        assert uow.tickets.find_idempotent("other", "k1") == (b, None)
        assert uow.tickets.find_idempotent("other", "k2") is None
    with pytest.raises(Exception), store.write() as uow:  # noqa: B017 (each store its own)
        uow.tickets.add(TicketDraft(Kind.TASK, "again"), "agent", NOW, idempotency_key="k1")
    with store.read() as uow:
        assert uow.tickets.count() == 3


def test_idempotency_keys_and_outside_ids_are_found_many_at_once(store: Any) -> None:
    # more keys than one ``IN (...)`` takes, asked twice and in any order
    count = 1_203
    with store.write() as uow:
        added = uow.tickets.add_many(
            [(TicketDraft(Kind.TASK, f"t{n}"), "agent" if n % 3 else "other")
             for n in range(count)], NOW,
            keys=[(f"k{n}", f"h{n}" if n % 2 else None) for n in range(count)])
        notes = uow.messages.add_many(
            [MessageDraft(t.id, "mail", "mail" if n % 4 else "email", f"note {n}",
                          MessageKind.COMMENT, False, external_id=f"k{n}")
             for n, t in enumerate(added)], NOW)
    wanted = [f"k{n}" for n in reversed(range(count + 50))] + ["k7", "k7"]
    with store.read() as uow:
        found = uow.tickets.find_idempotent_many("agent", wanted)
        other = uow.tickets.find_idempotent_many("other", ["k0", "k1", "k3", "nope"])
        outside = uow.messages.find_external_many("mail", wanted)
        singles = {k: uow.tickets.find_idempotent("agent", k) for k in found}
        assert uow.tickets.find_idempotent_many("agent", []) == {}
        assert uow.messages.find_external_many("chat", wanted) == {}
    assert found == singles and set(found) == {f"k{n}" for n in range(count) if n % 3}
    assert found["k7"] == (added[7], "h7") and found["k8"] == (added[8], None)
    assert other == {"k0": (added[0], None), "k3": (added[3], "h3")}
    assert set(outside) == {f"k{n}" for n in range(count) if n % 4}
    assert outside["k5"] == notes[5] and outside["k5"].data is None


def test_list_filters_newest_first_with_a_cursor_and_a_limit(store: Any) -> None:
    with store.write() as uow:
        q = uow.tickets.add(TicketDraft(Kind.QUESTION, "Deploy the API", "body"), "a", NOW)
        t = uow.tickets.add(TicketDraft(Kind.TASK, "other", "mentions DEPLOY",
                                        assignee="bob"), "b", NOW)
        x = uow.tickets.add(TicketDraft(Kind.TASK, "third", "100% sure_thing"), "a", NOW)
        uow.messages.add(x.id, "a", "api", "the deploy went fine", MessageKind.COMMENT,
                         False, NOW)
        done = uow.tickets.get(q.id)
        uow.tickets.update(done.moved_to(Status.ANSWERED, NOW), done.version)
    assert _ids(store) == [x.id, t.id, q.id]
    assert _ids(store, limit=2) == [x.id, t.id]
    assert _ids(store, after=t.id) == [q.id]
    assert _ids(store, status=(Status.OPEN,)) == [x.id, t.id]
    assert _ids(store, status=(Status.ANSWERED, Status.DONE)) == [q.id]
    assert _ids(store, kind=Kind.QUESTION) == [q.id]
    assert _ids(store, assignee="bob") == [t.id]
    assert _ids(store, created_by="a") == [x.id, q.id]
    assert _ids(store, q="deploy") == [x.id, t.id, q.id]  # title, body or a message
    assert _ids(store, q="100%") == [x.id] and _ids(store, q="0% s") == [x.id]
    assert _ids(store, q="e_t") == [x.id] and _ids(store, q="%") == [x.id]
    assert _ids(store, q="nowhere") == []


def _tree(store: Any) -> dict[str, Any]:
    """root (agent) > mid (agent) > leaf (other); loose (other, assigned to agent);
    alone (other)."""
    root = _add(store, "root", "agent")
    mid = _add(store, "mid", "agent", parent_id=root.id)
    leaf = _add(store, "leaf", "other", parent_id=mid.id)
    loose = _add(store, "loose", "other", assignee="agent")
    alone = _add(store, "alone", "other")
    under_alone = _add(store, "under alone", "agent", parent_id=alone.id)
    return {"root": root, "mid": mid, "leaf": leaf, "loose": loose, "alone": alone,
            "under_alone": under_alone}


def test_the_read_rule_created_assigned_or_below_ones_own(store: Any) -> None:
    tree = _tree(store)
    ids = {name: t.id for name, t in tree.items()}
    visible = set(_ids(store, readable_by="agent"))
    assert visible == {ids["root"], ids["mid"], ids["leaf"], ids["loose"],
                       ids["under_alone"]}
    assert set(_ids(store, readable_by="other")) == {ids["leaf"], ids["loose"], ids["alone"],
                                                     ids["under_alone"]}
    assert _ids(store, readable_by="nobody") == []
    with store.read() as uow:
        for name, ticket_id in ids.items():
            assert uow.tickets.readable(ticket_id, "agent") is (ticket_id in visible), name
        assert not uow.tickets.readable(10_000, "agent")


def test_subtree_by_depth_then_id_bounded_and_filtered(store: Any) -> None:
    tree = _tree(store)
    extra = _add(store, "second child", "other", parent_id=tree["root"].id)
    with store.read() as uow:
        whole = uow.tickets.subtree(tree["root"], 5)
        one_level = uow.tickets.subtree(tree["root"], 1)
        for_other = uow.tickets.subtree(tree["root"], 5, reader="other")
        below_mid = uow.tickets.subtree(tree["mid"], 5)
    assert [t.id for t in whole] == [tree["mid"].id, extra.id, tree["leaf"].id]
    assert [t.id for t in one_level] == [tree["mid"].id, extra.id]
    assert [t.id for t in for_other] == [extra.id, tree["leaf"].id]
    assert [t.id for t in below_mid] == [tree["leaf"].id]


def test_deadlines_overdue_deferred_and_the_next_one(store: Any) -> None:
    with store.read() as uow:
        assert uow.tickets.next_deadline() is None
    late = _add(store, "late", due_at=NOW - timedelta(minutes=5))
    later = _add(store, "later", due_at=NOW - timedelta(minutes=1))
    future = _add(store, "future", due_at=NOW + timedelta(hours=1))
    closed = _add(store, "closed", due_at=NOW - timedelta(hours=9))
    deferred = _add(store, "deferred")
    with store.write() as uow:
        uow.tickets.update(closed.moved_to(Status.DONE, NOW), closed.version)
        uow.tickets.update(replace(deferred.moved_to(Status.DEFERRED, NOW),
                                   next_attention_at=NOW - timedelta(hours=2)),
                           deferred.version)
    with store.write() as uow:
        assert [t.id for t in uow.tickets.overdue(NOW, 10)] == [late.id, later.id]
        assert [t.id for t in uow.tickets.overdue(NOW, 1)] == [late.id]
        assert [t.id for t in uow.tickets.defer_elapsed(NOW, 10)] == [deferred.id]
        assert uow.tickets.defer_elapsed(NOW, 0) == []
        assert uow.tickets.defer_elapsed(NOW - timedelta(hours=3), 10) == []
        assert uow.tickets.next_deadline() == NOW - timedelta(hours=2)
        # Locked for update_many, as the deadline loop uses them.
        due = uow.tickets.overdue(NOW, 10, for_update=True)
        uow.tickets.update_many([(t.moved_to(Status.EXPIRED, NOW), t.version) for t in due])
    with store.read() as uow:
        assert uow.tickets.overdue(NOW, 10) == []
        assert uow.tickets.get(late.id).status is Status.EXPIRED
        assert uow.tickets.get(future.id).status is Status.OPEN


def test_expire_overdue_moves_due_tickets_once_and_returns_them_as_they_were(
        store: Any) -> None:
    late = _add(store, "late", kind=Kind.APPROVAL, due_at=NOW - timedelta(minutes=5))
    started = _add(store, "started", due_at=NOW - timedelta(minutes=1))
    later = _add(store, "later", due_at=NOW - timedelta(seconds=1))
    future = _add(store, "future", due_at=NOW + timedelta(hours=1))
    with store.write() as uow:
        uow.tickets.update(started.moved_to(Status.IN_PROGRESS, NOW), started.version)
    at = NOW + timedelta(seconds=3)
    with store.write() as uow:
        first = uow.tickets.expire_overdue(at, 2)
    assert [(o.id, o.path, o.kind, o.status, o.due_at, o.version) for o in first] == [
        (late.id, late.path, Kind.APPROVAL, Status.OPEN, late.due_at, 1),
        (started.id, started.path, Kind.TASK, Status.IN_PROGRESS, started.due_at, 2)]
    with store.write() as uow:
        rest = uow.tickets.expire_overdue(at, 10)
        assert uow.tickets.expire_overdue(at, 10) == []  # each ticket expires once
    assert [o.id for o in rest] == [later.id]
    with store.read() as uow:
        stored = {t: uow.tickets.get(t) for t in (late.id, started.id, later.id, future.id)}
    assert stored[future.id] == future
    for before in (late, later):
        # The whole new state is the old one moved to expired: what ``Moved`` gives.
        assert stored[before.id] == before.moved_to(Status.EXPIRED, at)
    assert stored[started.id].status is Status.EXPIRED and stored[started.id].version == 3
    assert stored[late.id].outcome == "denied"
    with pytest.raises(Rollback), store.write() as uow:
        assert [o.id for o in uow.tickets.expire_overdue(at + timedelta(hours=2), 10)] == [
            future.id]
        raise Rollback
    with store.read() as uow:
        assert uow.tickets.get(future.id).status is Status.OPEN  # rolled back


def test_a_rolled_back_write_stores_nothing_and_ids_stay_unique(store: Any) -> None:
    parent = _add(store, "parent")
    with pytest.raises(Rollback), store.write() as uow:
        added = uow.tickets.add_many(
            [(TicketDraft(Kind.TASK, f"t{i}", labels=("l",), refs={"r": f"v{i}"}), "agent")
             for i in range(3)], NOW, keys=[("key", None), (None, None), (None, None)])
        uow.messages.add_many([MessageDraft(t.id, "agent", "api", "m", MessageKind.COMMENT,
                                            False, external_id=f"x{t.id}") for t in added],
                              NOW)
        changed = uow.tickets.get(parent.id)
        uow.tickets.update(changed.changed(NOW, title="changed"), changed.version)
        assert len(uow.messages.for_ticket(added[0].id)) == 1  # visible inside
        raise Rollback
    with store.read() as uow:
        assert uow.tickets.count() == 1 and uow.tickets.get(parent.id) == parent
        assert uow.tickets.list(TicketQuery(ref=("r", "v0"))) == []
        assert uow.tickets.list(TicketQuery(label="l")) == []
        assert uow.tickets.find_idempotent("agent", "key") is None
        assert uow.messages.find_external("api", f"x{added[0].id}") is None
    with store.write() as uow:  # the key and the outside ids are free again
        again = uow.tickets.add(TicketDraft(Kind.TASK, "after", parent_id=parent.id),
                                "agent", NOW, idempotency_key="key")
    with store.read() as uow:
        assert uow.tickets.get(again.id) == again
        assert uow.tickets.find_idempotent("agent", "key") == (again, None)
