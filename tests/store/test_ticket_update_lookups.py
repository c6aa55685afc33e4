"""``SqlTicketRepository.update`` keeps the label and ref lookup tables in step with the
ticket, whether it diffs against a row this transaction locked (no second read) or
reads the row again (not locked here, or locked at another version)."""

from __future__ import annotations

from datetime import UTC, datetime

from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft, TicketQuery

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _ids(runtime, **query) -> set[int]:
    with runtime.store.read() as uow:
        return {t.id for t in uow.tickets.list(TicketQuery(**query))}


def test_updates_of_a_locked_row_keep_lookups_in_step(runtime):
    with runtime.store.write() as uow:
        ticket = uow.tickets.add(
            TicketDraft(Kind.TASK, "t", labels=("a", "b"), refs={"x": "1"}), "agent", NOW
        )
    with runtime.store.write() as uow:
        before = uow.tickets.get(ticket.id, for_update=True)
        first = before.changed(NOW, labels=("b", "c"), refs={"x": "2", "y": "3"})
        assert uow.tickets.update(first, before.version)
        second = first.changed(NOW, labels=("c",))
        assert uow.tickets.update(second, first.version)  # diffs against its own write
    assert _ids(runtime, label="c") == {ticket.id}
    assert _ids(runtime, label="a") == set() and _ids(runtime, label="b") == set()
    assert _ids(runtime, ref=("x", "2")) == {ticket.id} == _ids(runtime, ref=("y", "3"))
    assert _ids(runtime, ref=("x", "1")) == set()


def test_update_without_the_lock_reads_the_row_and_a_stale_version_fails(runtime):
    with runtime.store.write() as uow:
        ticket = uow.tickets.add(TicketDraft(Kind.TASK, "t", labels=("a",)), "agent", NOW)
    with runtime.store.write() as uow:
        locked = uow.tickets.get(ticket.id, for_update=True)
        assert not uow.tickets.update(locked.changed(NOW, labels=("z",)), locked.version + 7)
        assert uow.tickets.update(locked.changed(NOW, labels=("b",)), locked.version)
    with runtime.store.write() as uow:
        plain = uow.tickets.get(ticket.id)  # not locked: update reads labels itself
        assert uow.tickets.update(plain.changed(NOW, labels=("c",)), plain.version)
    assert _ids(runtime, label="c") == {ticket.id}
    assert _ids(runtime, label="a") == _ids(runtime, label="b") == _ids(runtime, label="z")
    assert _ids(runtime, label="z") == set()
