"""The whole suite's logs, scanned for the tokens the suite created (docs/operations.md:
secrets are never logged). ``tests/conftest.py`` runs it over every test session.

Every token the hub's generators make (``TokenGenerator``, the tests' ``CountingTokens``)
is remembered; every log record of the run at INFO and above, whichever logger wrote it,
is checked against them (its message, its arguments and its traceback) as it is emitted,
except the records of loggers the hub keeps quiet (``ops.logs.QUIET_LOGGERS``), which
``tickethub serve`` never writes.
At the end of the session the leaks, if any, fail the run.
"""

from __future__ import annotations

import logging
import re
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

from tickethub.ops.logs import QUIET_LOGGERS
from tickethub.server.system import TokenGenerator
from tickethub.testing import CountingTokens

_TOKENISH = re.compile(r"th_[A-Za-z0-9_-]{16,}")


class TokenLeakWatch(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.INFO)
        self.created: set[str] = set()
        self.leaks: list[str] = []
        self.records = 0

    def remember(self, token: str) -> str:
        self.created.add(token)
        return token

    def emit(self, record: logging.LogRecord) -> None:
        quiet = QUIET_LOGGERS.get(record.name.split(".")[0])
        if quiet is not None and record.levelno < quiet:
            return  # the hub keeps these loggers quiet (ops/logs.py): never written
        self.records += 1
        try:
            text = record.getMessage()
        except Exception:  # a bad format string: look at its parts
            text = f"{record.msg} {record.args}"
        if record.exc_info and record.exc_info[1] is not None:
            text += "".join(traceback.format_exception(record.exc_info[1]))
        for candidate in _TOKENISH.findall(text):
            if candidate in self.created:
                self.leaks.append(f"{record.name} {record.levelname}: {text[:300]}")


@contextmanager
def watching(extra_tokens: tuple[str, ...] = ()) -> Iterator[TokenLeakWatch]:
    """Remember every token made and watch every log record while the block runs."""
    watch = TokenLeakWatch()
    for token in extra_tokens:
        watch.remember(token)
    originals = TokenGenerator.token, CountingTokens.token

    def real(self: TokenGenerator) -> str:
        return watch.remember(originals[0](self))

    def counting(self: CountingTokens) -> str:
        return watch.remember(originals[1](self))

    TokenGenerator.token = real  # type: ignore[method-assign]
    CountingTokens.token = counting  # type: ignore[method-assign]
    root = logging.getLogger()
    level = root.level
    root.addHandler(watch)
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)  # what `tickethub serve` logs by default
    try:
        yield watch
    finally:
        root.removeHandler(watch)
        root.setLevel(level)
        TokenGenerator.token, CountingTokens.token = originals  # type: ignore[method-assign]
