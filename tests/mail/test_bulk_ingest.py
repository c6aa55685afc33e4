"""``SqlStore.batch()``, which bulk ingest writes in: a failing write inside the batch
changes nothing and the batch goes on; reads see the batch's writes; other connections
see them only after the batch commits; an error out of the batch keeps none of it."""

from __future__ import annotations

import pytest

from tickethub.domain.actors import SYSTEM
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft, TicketQuery
from tickethub.server.runtime import HubRuntime


def draft(title: str) -> TicketDraft:
    return TicketDraft(kind=Kind.QUESTION, title=title, body="")


def titles_seen_elsewhere(runtime: HubRuntime) -> set[str]:
    """Titles as a fresh connection (another transaction) sees them."""
    from sqlalchemy import text

    with runtime.store.engine.connect() as connection:
        return {row[0] for row in connection.execute(text("SELECT title FROM tickets"))}


def test_a_batch_commits_once_and_a_failed_write_in_it_changes_nothing(
        runtime: HubRuntime) -> None:
    tickets = runtime.tickets
    with runtime.store.batch():
        first, _ = tickets.ask(SYSTEM, draft("first"))
        with pytest.raises(RuntimeError), runtime.store.write() as uow:
            uow.tickets.get(first.id)
            tickets.ask(SYSTEM, draft("rolled back"))  # a nested write, then a failure
            raise RuntimeError("this write fails")
        second, _ = tickets.ask(SYSTEM, draft("second"))
        assert tickets.get(second.id).title == "second"  # reads see the batch
        assert "first" not in titles_seen_elsewhere(runtime)  # not committed yet
    seen = titles_seen_elsewhere(runtime)
    assert {"first", "second"} <= seen and "rolled back" not in seen


def test_an_error_out_of_a_batch_keeps_none_of_it(runtime: HubRuntime) -> None:
    with pytest.raises(KeyboardInterrupt), runtime.store.batch():
        runtime.tickets.ask(SYSTEM, draft("lost"))
        raise KeyboardInterrupt
    assert runtime.tickets.list(TicketQuery()).items == []
    runtime.tickets.ask(SYSTEM, draft("after"))  # the store works on after it
    assert [t.title for t in runtime.tickets.list(TicketQuery()).items] == ["after"]
