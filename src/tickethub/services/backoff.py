"""How a background loop (deadlines, deliveries) lives through failed rounds: it logs the
failure and waits longer after each failure in a row, then its usual pace once a round
succeeds. An unreachable database (``DatabaseUnavailable``) is logged as one line, not a
traceback a round, since it says nothing about the loop's code."""

from __future__ import annotations

import logging

from tickethub.errors import DatabaseUnavailable

FIRST_SECONDS = 0.5
LONGEST_SECONDS = 30.0


class Backoff:
    """Consecutive failures of one loop. ``failed`` logs ``exc`` and returns how long to
    wait before the next round (doubling from ``first`` up to ``longest``); ``succeeded``
    starts over."""

    def __init__(self, log: logging.Logger, what: str, *, first: float = FIRST_SECONDS,
                 longest: float = LONGEST_SECONDS) -> None:
        self._log = log
        self._what = what
        self._first = first
        self._longest = longest
        self.failures = 0

    def succeeded(self) -> None:
        if self.failures:
            self._log.info("%s works again after %d failed round(s)", self._what,
                           self.failures)
        self.failures = 0

    def failed(self, exc: BaseException) -> float:
        wait: float = min(self._first * 2.0 ** min(self.failures, 30), self._longest)
        self.failures += 1
        if isinstance(exc, DatabaseUnavailable):
            self._log.warning("%s: database unavailable (%s); retrying in %.1fs",
                              self._what, exc, wait)
        else:
            self._log.exception("%s failed; retrying in %.1fs", self._what, wait,
                                exc_info=exc)
        return wait
