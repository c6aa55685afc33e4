"""What a person changed in an approval's proposal before approving it.

``diff(original, edited)`` compares two JSON values and lists the changes, deepest
first-differing path each: objects are compared key by key (recursively), anything else
(numbers, strings, lists, ``null``) as a whole value. ``summary(changes)`` is the one
line a person reads afterwards: ``replicas 4 → 6; region eu → us``. Pure functions of
their arguments; the web, the CLI and the channels can all say the same thing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

ChangeKind = Literal["changed", "added", "removed"]
_ABSENT: Any = object()
_MAX_TEXT = 40


@dataclass(frozen=True, slots=True)
class Change:
    """One difference: where (keys from the top), what it was and what it is now.
    ``before`` is ``None`` for an added key and ``after`` for a removed one (``kind``
    tells which, since a value may itself be ``null``)."""

    path: tuple[str, ...]
    kind: ChangeKind
    before: Any = None
    after: Any = None

    @property
    def where(self) -> str:
        """``arguments.replicas``, or ``value`` for a change of the whole proposal."""
        return ".".join(self.path) or "value"


def _same(a: Any, b: Any) -> bool:
    # 1 == 1.0 == True in Python; in a proposal those are three different answers.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return bool(a == b)
    if type(a) is not type(b) and not (isinstance(a, Mapping) and isinstance(b, Mapping)):
        return False
    if isinstance(a, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _walk(before: Any, after: Any, path: tuple[str, ...], out: list[Change]) -> None:
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for key in [*before, *(k for k in after if k not in before)]:
            _walk(before.get(key, _ABSENT), after.get(key, _ABSENT), (*path, str(key)), out)
        return
    if before is _ABSENT:
        out.append(Change(path, "added", None, after))
    elif after is _ABSENT:
        out.append(Change(path, "removed", before, None))
    elif not _same(before, after):
        out.append(Change(path, "changed", before, after))


def diff(original: Any, edited: Any) -> list[Change]:
    """Every change from ``original`` to ``edited``, in the original's key order (added
    keys after). Empty when the two are the same JSON value (``4`` and ``4.0`` are the
    same number; ``1`` and ``true`` are not)."""
    out: list[Change] = []
    _walk(original, edited, (), out)
    return out


def show(value: Any) -> str:
    """A value as a person reads it in one line: strings bare, the rest as compact JSON,
    cut at 40 characters."""
    text = value if isinstance(value, str) else json.dumps(
        value, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


def describe(change: Change) -> str:
    """``replicas 4 → 6``, ``notify added: true``, ``dry_run removed``."""
    if change.kind == "added":
        return f"{change.where} added: {show(change.after)}"
    if change.kind == "removed":
        return f"{change.where} removed"
    return f"{change.where} {show(change.before)} → {show(change.after)}"


def summary(changes: list[Change], limit: int = 5) -> str:
    """The changes in one line, at most ``limit`` of them then ``and N more``."""
    parts = [describe(c) for c in changes[:limit]]
    if len(changes) > limit:
        parts.append(f"and {len(changes) - limit} more")
    return "; ".join(parts)


def outcome(original: Any, decided: Any) -> str:
    """``approved with changes: replicas 4 → 6`` or ``approved as proposed``."""
    changes = diff(original, decided)
    return f"approved with changes: {summary(changes)}" if changes else "approved as proposed"
