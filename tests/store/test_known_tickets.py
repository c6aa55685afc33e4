"""``KnownTickets`` (``store/known_tickets.py``) on its own: what it keeps, for how
long, and what makes it forget. The hub's use of it, on the event loop's SQLite write
connection, is tested with ``write_now`` (``tests/services/test_inline_commit.py``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket
from tickethub.store.known_tickets import KnownTickets

_AT = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _ticket(ticket_id: int, version: int = 1) -> Ticket:
    return Ticket(ticket_id, Kind.QUESTION, "t", "", Status.OPEN, "bot", _AT, _AT, version)


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
