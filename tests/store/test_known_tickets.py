"""``KnownTickets`` (``store/known_tickets.py``) on its own: what it keeps, for how
long, and what makes it forget. The hub's use of it, on the event loop's SQLite write
connection, is tested with ``write_now`` (``tests/services/test_inline_commit.py``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket
from tickethub.store.known_tickets import KnownTickets

_AT = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _ticket(ticket_id: int, version: int = 1, body: str = "", proposal: Any = None
            ) -> Ticket:
    return Ticket(ticket_id, Kind.QUESTION, "t", body, Status.OPEN, "bot", _AT, _AT, version,
                  proposal=proposal)


class _Driver:
    """A driver connection whose data version is set by the test."""

    def __init__(self) -> None:
        self.version = 1

    def execute(self, sql: str) -> Any:
        assert sql == "PRAGMA data_version"
        version = self.version

        class _Row:
            def fetchone(self) -> tuple[int]:
                return (version,)

        return _Row()


def test_known_tickets_keep_what_committed_and_drop_the_rest() -> None:
    known, driver = KnownTickets(limit=2), _Driver()
    assert known.get(1) is None  # outside a transaction: nothing
    known.begin(driver)
    known.saw(_ticket(1))
    assert known.get(1) is None  # not before it commits
    known.committed()
    known.begin(driver)
    assert known.get(1) == _ticket(1)
    known.forget(1)
    known.saw(_ticket(2))
    known.saw(_ticket(3))
    known.saw(_ticket(4))
    known.committed()
    assert len(known) == 2  # the limit: the most recent
    known.begin(driver)
    assert known.get(1) is None and known.get(2) is None and known.get(4) is not None
    known.rolled_back()
    known.begin(driver)
    assert len(known) == 0 and known.get(4) is None
    known.saw(_ticket(5))
    known.committed()
    driver.version = 2  # another connection committed
    known.begin(driver)
    assert known.get(5) is None and len(known) == 0


def test_known_tickets_weigh_what_they_keep() -> None:
    """A few large tickets push the older ones out; one whose JSON values hold too many
    items to weigh cheaply is not kept at all (it is read when needed)."""
    known, driver = KnownTickets(limit=100, limit_bytes=50_000), _Driver()
    known.begin(driver)
    for ticket_id in range(1, 6):
        known.saw(_ticket(ticket_id, body="x" * 20_000))
    known.saw(_ticket(6, proposal={"items": list(range(1000))}))
    known.saw(_ticket(7, proposal={"items": list(range(10))}))
    known.committed()
    known.begin(driver)
    assert [known.get(i) is not None for i in range(1, 8)] == [
        False, False, False, True, True, False, True]


def test_known_tickets_keep_json_values_as_the_database_gives_them_back() -> None:
    """A copy, and a tuple a Python caller proposed comes back as the list a read gives."""
    proposal = {"tool": "label", "arguments": {"add": ("done",)}}
    known, driver = KnownTickets(), _Driver()
    known.begin(driver)
    known.saw(_ticket(1, proposal=proposal))
    known.committed()
    proposal["arguments"] = {}
    known.begin(driver)
    kept = known.get(1)
    assert kept is not None
    assert kept.proposal == {"tool": "label", "arguments": {"add": ["done"]}}


def test_known_tickets_keep_no_time_in_another_zone() -> None:
    """The database gives times back in UTC: a state with a deadline (or a deferral)
    given at +02:00, as a change may write it, is not what a read gives, so not kept."""
    elsewhere = _AT.astimezone(timezone(timedelta(hours=2)))
    known, driver = KnownTickets(), _Driver()
    known.begin(driver)
    known.saw(replace(_ticket(1), due_at=elsewhere))
    known.saw(replace(_ticket(2), next_attention_at=elsewhere))
    known.saw(replace(_ticket(3), due_at=_AT))
    known.committed()
    known.begin(driver)
    assert [known.get(i) is not None for i in (1, 2, 3)] == [False, False, True]
