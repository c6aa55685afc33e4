"""The inbox's "most urgent first" (due date ascending, undated last, then newest) is
served from ``ix_tickets_status_due_id`` without sorting every waiting ticket: one
index-ordered scan per status (and per side of the cursor), each stopped at the page's
limit, merged. The order and the keyset pages are the same as one sorted query's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text, update

from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketDraft
from tickethub.services.inbox import Cursor, InboxQuery
from tickethub.store.inbox_queries import SqlInboxReader, page_statement
from tickethub.store.tables import tickets

NOW = datetime(2026, 1, 1, tzinfo=UTC)
STATUSES = (Status.OPEN, Status.IN_PROGRESS, Status.DEFERRED, Status.DONE)


def _seed(runtime, count: int) -> list[tuple[int, str, str | None, datetime | None]]:
    """``count`` tickets over four statuses, due dates with many ties, a third undated;
    returns (id, status, assignee, due_at) of each."""
    rows = []
    with runtime.store.write() as uow:
        for n in range(count):
            due = None if n % 3 == 0 else NOW + timedelta(minutes=n % 7)
            assignee = ("me", "sam", None)[n % 3 if n % 5 else 2]
            ticket = uow.tickets.add(TicketDraft(Kind.TASK, f"t{n}", assignee=assignee,
                                                 due_at=due), "agent", NOW)
            status = STATUSES[n % 4]
            if status is not Status.OPEN:
                uow.connection.execute(update(tickets).where(tickets.c.id == ticket.id)
                                       .values(status=status.value))
            rows.append((ticket.id, status.value, assignee, due))
    return rows


def _expected(rows, statuses, team: bool) -> list[int]:
    chosen = [r for r in rows if r[1] in statuses and (not team or r[2] in (None, "me"))]
    chosen.sort(key=lambda r: (r[3] is None, r[3] or NOW, -r[0]))
    return [r[0] for r in chosen]


def _all_pages(reader: SqlInboxReader, query: InboxQuery) -> list[int]:
    seen: list[int] = []
    cursor = None
    while True:
        page = reader.page(InboxQuery(**{**_fields(query), "cursor": cursor}))
        seen.extend(t.id for t in page)
        if len(page) < query.limit:
            return seen
        cursor = Cursor(page[-1].id, page[-1].due_at)


def _fields(query: InboxQuery) -> dict:
    return {name: getattr(query, name) for name in query.__dataclass_fields__}


def test_urgent_pages_keep_the_sorted_order_through_ties_and_undated_tickets(runtime):
    rows = _seed(runtime, 120)
    reader = SqlInboxReader(runtime.store)
    waiting = {"open", "in_progress", "deferred"}
    for view, statuses, team in (("team", waiting, True), ("me", waiting, False),
                                 ("all", {s.value for s in Status}, False)):
        query = InboxQuery(me="me", view=view, sort="urgent", limit=7)
        got = _all_pages(reader, query)
        want = _expected(rows, statuses, team)
        if view == "me":
            want = [i for i in want if next(r for r in rows if r[0] == i)[2] == "me"]
        assert got == want, view
    done = _all_pages(reader, InboxQuery(me="me", view="all", status=(Status.DONE,),
                                         sort="urgent", limit=5))
    assert done == _expected(rows, {"done"}, False)


def _plan(runtime, query: InboxQuery) -> list[str]:
    stmt = page_statement(query)
    engine = runtime.store.engine
    compiled = stmt.compile(engine, compile_kwargs={"literal_binds": True})
    with engine.connect() as c:
        if engine.dialect.name == "sqlite":
            return [row[-1] for row in c.execute(text(f"EXPLAIN QUERY PLAN {compiled}"))]
        # A tiny table makes a sequential scan cheapest; what is checked here is that the
        # index *can* deliver each branch in order, so the planner may not pick others.
        for setting in ("enable_seqscan", "enable_bitmapscan"):
            c.execute(text(f"SET {setting} = off"))
        return [row[0] for row in c.execute(text(f"EXPLAIN {compiled}"))]


def test_the_urgent_page_reads_each_status_in_index_order_and_sorts_only_the_merge(runtime):
    _seed(runtime, 40)
    cursors = (None, Cursor(30, NOW + timedelta(minutes=3)), Cursor(30, None))
    for cursor in cursors:
        query = InboxQuery(me="me", view="team", sort="urgent", cursor=cursor, limit=50)
        plan = _plan(runtime, query)
        text_plan = "\n".join(plan)
        if runtime.store.engine.dialect.name == "sqlite":
            branches = [line for line in plan if "tickets" in line and "SEARCH" in line]
            assert branches and all("ix_tickets_status_due_id" in b for b in branches), (
                text_plan)
            assert not any(line.startswith("SCAN tickets") for line in plan), text_plan
            # One sort: the merge of at most (branches x limit) rows, not every ticket.
            assert sum("TEMP B-TREE" in line for line in plan) == 1, text_plan
        else:
            scans = [line for line in plan if " on tickets" in line]
            assert scans and all("Index Scan using ix_tickets_status_due_id" in s
                                 for s in scans), text_plan
            assert sum("Sort" in line and "Sort Key" not in line
                       for line in plan) == 1, text_plan
