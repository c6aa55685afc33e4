"""The JSON Schema validator classes the hub checks callers' values with.

They are jsonschema's own classes for drafts 4, 6, 7, 2019-09 and 2020-12, extended
(``jsonschema.validators.extend``) so that no caller-supplied schema can make a check
run away:

* ``pattern``, ``patternProperties`` and ``additionalProperties`` (which consults
  ``patternProperties``) match with RE2 (``schema_regex``), never with backtracking ``re``;
  ``format: regex`` is asserted with RE2 too (other formats stay annotations, as before);
* ``uniqueItems`` compares canonical keys in a set instead of every pair of items;
* every keyword spends one step of a per-check budget (:func:`budget`); a check that
  runs out raises :class:`OverBudget` instead of running on (a schema whose ``$ref``\\ s
  fan out can cost exponential time on a small value).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from jsonschema import (
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
    FormatChecker,
    ValidationError,
)
from jsonschema.validators import extend

from tickethub.services import schema_regex

Keyword = Callable[[Any, Any, Any, Any], Any]

DEFAULT_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_BASES: dict[str, Any] = {
    "https://json-schema.org/draft/2020-12/schema": Draft202012Validator,
    "https://json-schema.org/draft/2019-09/schema": Draft201909Validator,
    "http://json-schema.org/draft-07/schema": Draft7Validator,
    "http://json-schema.org/draft-06/schema": Draft6Validator,
    "http://json-schema.org/draft-04/schema": Draft4Validator,
}


class OverBudget(Exception):
    """A check used up its step budget."""


_local = threading.local()


@contextmanager
def budget(steps: int) -> Iterator[None]:
    """Allow at most ``steps`` keyword evaluations in this thread while the block runs."""
    outer = getattr(_local, "left", None)
    _local.left = steps
    try:
        yield
    finally:
        _local.left = outer


def _spend() -> None:
    left: int | None = getattr(_local, "left", None)
    if left is None:
        return  # not a budgeted check (e.g. the meta-schema check of a bounded schema)
    if left <= 0:
        raise OverBudget
    _local.left = left - 1


def _counted(keyword: Keyword) -> Keyword:
    @functools.wraps(keyword)
    def counted(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _spend()
        return keyword(validator, value, instance, schema)

    return counted


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not schema_regex.search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any
                        ) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if schema_regex.search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any
                           ) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = sorted(
        (key for key in instance
         if key not in properties and not any(schema_regex.search(p, key) for p in patterns)),
        key=str,
    )
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        joined = ", ".join(repr(each) for each in extras)
        if patterns:
            listed = ", ".join(repr(each) for each in sorted(patterns))
            yield ValidationError(f"{joined} do(es) not match any of the regexes: {listed}")
        else:
            yield ValidationError(f"Additional properties are not allowed ({joined} "
                                  f"{'was' if len(extras) == 1 else 'were'} unexpected)")


def _canonical(value: Any) -> Any:
    """A hashable key equal for JSON values JSON Schema calls equal (``1 == 1.0``,
    ``true != 1``, objects regardless of key order)."""
    if isinstance(value, bool) or value is None:
        return ("const", value)
    if isinstance(value, float):
        return ("number", int(value) if value.is_integer() else value)
    if isinstance(value, int):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list | tuple):
        return ("array", tuple(_canonical(v) for v in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, _canonical(v)) for k, v in value.items()))
    return ("other", repr(value))


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if unique and validator.is_type(instance, "array"):
        keys = {_canonical(item) for item in instance}
        if len(keys) != len(instance):
            yield ValidationError(f"{instance!r} has non-unique elements")


FORMATS = FormatChecker(formats=())
FORMATS.checks("regex")(schema_regex.is_regex)

_OVERRIDES: dict[str, Keyword] = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}


@functools.cache
def validator_class(dialect: str) -> Any:
    """The bounded validator class of a known ``$schema`` (see :func:`dialect_of`)."""
    base = _BASES[dialect]
    keywords = {**base.VALIDATORS, **_OVERRIDES}
    return extend(  # type: ignore[no-untyped-call]
        base, {name: _counted(fn) for name, fn in keywords.items()}, format_checker=FORMATS)


def dialect_of(schema: dict[str, Any]) -> str | None:
    """The dialect a schema's ``$schema`` names (2020-12 when absent); ``None`` if the
    hub does not know it."""
    named = schema.get("$schema", DEFAULT_DIALECT)
    if not isinstance(named, str):
        return None
    normal = named.rstrip("#").replace("https://json-schema.org/draft-0",
                                       "http://json-schema.org/draft-0")
    return normal if normal in _BASES else None
