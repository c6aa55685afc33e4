"""The event cursor never skips an event committed while a page is read. On PostgreSQL
each statement of a read sees the commits made before it, so a commit can land between
two statements of one page; the cursor a page hands back must still come before it (an
event stream resuming from that cursor would otherwise never send it)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event

from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.services.events import EventService
from tickethub.services.tickets import TicketService
from tickethub.store.memory_store import MemoryStore
from tickethub.testing import FakeClock, RecordingNotifier

AGENT = Actor("bot", Role.AGENT)
ADMIN = Actor("root", Role.ADMIN)


@pytest.mark.parametrize("viewer", [None, ADMIN, AGENT], ids=["service", "admin", "agent"])
def test_a_commit_between_a_pages_reads_is_in_the_next_page(store: Any,
                                                            viewer: Actor | None) -> None:
    if isinstance(store, MemoryStore):
        pytest.skip("one lock orders every transaction: nothing commits inside a read")
    tickets = TicketService(store, FakeClock(), RecordingNotifier())
    events = EventService(store)
    tickets.ask(AGENT, TicketDraft(Kind.QUESTION, "first"))
    cursor = events.last_seq()
    late: list[int] = []

    def commit_once_after_the_page(conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        # Right after the page's own query came back empty, another writer commits.
        if not late and statement.lstrip().startswith("SELECT events.seq"):
            late.append(tickets.ask(AGENT, TicketDraft(Kind.QUESTION, "late"))[0].id)

    event.listen(store.engine, "after_cursor_execute", commit_once_after_the_page)
    try:
        page, cursor = events.page(cursor, viewer=viewer)
    finally:
        event.remove(store.engine, "after_cursor_execute", commit_once_after_the_page)
    assert late and page == []
    following, _ = events.page(cursor, viewer=viewer)
    assert [e.ticket_id for e in following] == late
