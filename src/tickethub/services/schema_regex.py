"""Regular expressions of caller-supplied JSON Schemas, on RE2.

A schema's ``pattern``, ``patternProperties`` keys and values checked with ``format:
regex`` come from whoever opened the ticket. Python's ``re`` backtracks: ``^(a+)+$``
against thirty ``a`` and a ``!`` runs for minutes and holds the GIL, so one agent could
freeze the hub. RE2 matches in time linear in the text and refuses the constructs that
need backtracking (back-references, look-around); such a pattern is refused when the
ticket is opened (:func:`compile_pattern` raises :class:`BadPattern`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no type hints

_CACHE_SIZE = 1024
_MAX_PATTERN_LENGTH = 4096  # characters; RE2 also caps a compiled program's memory

_options = re2.Options()
_options.log_errors = False  # a refused pattern is the caller's error, not ours to log


class BadPattern(ValueError):
    """A pattern RE2 cannot compile (with RE2's reason)."""


_compiled: OrderedDict[str, Any] = OrderedDict()
_lock = threading.Lock()


def compile_pattern(pattern: str) -> Any:
    """The compiled RE2 of ``pattern`` (cached); :class:`BadPattern` if RE2 refuses it."""
    with _lock:
        found = _compiled.get(pattern)
        if found is not None:
            _compiled.move_to_end(pattern)
            return found
    if len(pattern) > _MAX_PATTERN_LENGTH:
        raise BadPattern(f"longer than {_MAX_PATTERN_LENGTH} characters")
    try:
        regex = re2.compile(pattern, _options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise BadPattern(str(reason)) from None
    with _lock:
        _compiled[pattern] = regex
        if len(_compiled) > _CACHE_SIZE:
            _compiled.popitem(last=False)
    return regex


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches anywhere in ``text`` (JSON Schema's regex semantics:
    unanchored unless the pattern anchors itself)."""
    return compile_pattern(pattern).search(text) is not None


def is_regex(value: object) -> bool:
    """``format: regex``: true for anything that is not a string, or a string RE2 takes."""
    if not isinstance(value, str):
        return True
    try:
        compile_pattern(value)
    except BadPattern:
        return False
    return True
