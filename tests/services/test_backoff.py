"""A background loop's backoff: doubling waits after failures in a row, capped, reset by
a round that works; an unreachable database logged as one line, other errors with their
traceback."""

from __future__ import annotations

import logging

import pytest

from tickethub.errors import DatabaseUnavailable
from tickethub.services.backoff import Backoff

log = logging.getLogger("tests.backoff")


def test_waits_double_up_to_the_longest_and_start_over_after_success() -> None:
    backoff = Backoff(log, "round", first=0.5, longest=3.0)
    waits = [backoff.failed(DatabaseUnavailable("down")) for _ in range(5)]
    assert waits == [0.5, 1.0, 2.0, 3.0, 3.0]
    backoff.succeeded()
    assert backoff.failures == 0
    assert backoff.failed(RuntimeError("bug")) == 0.5


def test_an_outage_is_one_line_a_bug_has_its_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    backoff = Backoff(log, "round")
    with caplog.at_level(logging.INFO, logger="tests.backoff"):
        backoff.failed(DatabaseUnavailable("connection refused"))
        try:
            raise RuntimeError("bug")
        except RuntimeError as exc:
            backoff.failed(exc)
        backoff.succeeded()
    outage, bug, back = caplog.records
    assert outage.levelno == logging.WARNING and outage.exc_info is None
    assert "connection refused" in outage.getMessage()
    assert bug.levelno == logging.ERROR and bug.exc_info is not None
    assert "works again after 2" in back.getMessage()
