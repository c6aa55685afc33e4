"""The one place a caller's JSON Schema is accepted and values are checked against it:
response schemas, structured answers, proposals and edited approvals, from every door.

A schema comes from whoever opened the ticket, so it is treated as hostile:

* it never causes network access: only local references (``#...``) are allowed, and the
  ``referencing`` registry the validators use refuses to retrieve anything;
* it is checked completely when the ticket is opened (:meth:`SchemaChecker.check_schema`):
  size and nesting limits, a known dialect, its meta-schema, every reference resolving,
  every regular expression compiling in RE2. A ticket accepted with a schema can always
  be answered without a server error;
* values are checked (:meth:`SchemaChecker.validate`) with validators whose regular
  expressions run on RE2 and whose work is bounded by a step budget
  (``schema_keywords``), so a check can fail but never hang the hub.

Failures are :class:`ValidationFailed` (422) naming the field. Compiled validators are
cached by the schema's bytes, so hot paths (the same tool schemas on every turn) skip
the checks and the compilation.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

from jsonschema.exceptions import best_match
from referencing.jsonschema import specification_with

from tickethub import json_codec
from tickethub.errors import ValidationFailed
from tickethub.services import schema_keywords, schema_walk

_CACHE_SIZE = 256


@dataclass(frozen=True)
class SchemaLimits:
    """How big a caller's schema and a checked value may be (``schema_*`` settings)."""

    max_bytes: int = 262_144
    max_depth: int = 64
    max_subschemas: int = 10_000
    max_steps: int = 50_000
    max_value_bytes: int = 1_048_576
    max_value_depth: int = 64


# A failed check as plain data, so it crosses a process boundary: (detail, field, errors).
Failure = tuple[str, str | None, list[dict[str, Any]] | None]


class Offload(Protocol):
    """Runs :func:`check_elsewhere` somewhere that does not hold this process's GIL (a
    worker process), and returns its result."""

    def __call__(self, limits: SchemaLimits, schema: dict[str, Any], instance: Any,
                 field: str, is_value: bool) -> Failure | None: ...


# Checks cheaper than this run in the calling thread; costlier ones go to the offload:
# those needing more keyword checks, and schemas or values bigger than this as JSON.
INLINE_STEPS = 2_000
INLINE_BYTES = 32_768


class SchemaChecker:
    """Checks caller schemas and values against them. Thread-safe; blocking (CPU only:
    call it from a worker thread, before any write transaction). With an ``offload``,
    the costly checks (a schema or value over ``INLINE_BYTES``, a value that needs more
    than ``INLINE_STEPS`` keyword checks) run there, never holding this process's GIL."""

    def __init__(self, limits: SchemaLimits | None = None, offload: Offload | None = None
                 ) -> None:
        self.limits = limits or SchemaLimits()
        self._offload = offload
        self._validators: OrderedDict[bytes, Any] = OrderedDict()
        self._lock = threading.Lock()

    def check_schema(self, schema: Any, field: str = "response_schema") -> None:
        """Raise :class:`ValidationFailed` unless ``schema`` is an acceptable JSON Schema."""
        self._validator(schema, field)

    def validate(self, instance: Any, schema: dict[str, Any] | None, field: str = "data"
                 ) -> None:
        """Raise :class:`ValidationFailed` naming the first failing field of ``instance``;
        its ``errors`` list every failure (``field``, ``message``, ``keyword``).
        A schema stored before these checks existed is checked here first (422 naming
        ``response_schema`` if it does not pass)."""
        if schema is None:
            return
        validator = self._validator(schema, "response_schema")
        encoded = self._check_size(instance, field, self.limits.max_value_bytes,
                                   self.limits.max_value_depth, "value")
        if self._offload is not None and len(encoded) > INLINE_BYTES:
            _raise(self._offload(self.limits, schema, instance, field, True))
            return
        steps = INLINE_STEPS if self._offload is not None else self.limits.max_steps
        try:
            with schema_keywords.budget(steps):
                errors = sorted(validator.iter_errors(instance),
                                key=lambda e: [str(p) for p in e.absolute_path])
        except (schema_keywords.OverBudget, RecursionError):
            if self._offload is not None:
                _raise(self._offload(self.limits, schema, instance, field, True))
                return
            raise ValidationFailed(
                f"checking {field} against this ticket's response_schema takes more than "
                f"{self.limits.max_steps} steps; the schema is too costly for this value",
                field=field) from None
        if not errors:
            return
        described = []
        for error in errors:
            path = ".".join([field, *(str(p) for p in error.absolute_path)])
            # ``keyword`` (``maximum``, ``pattern``...) lets a form say it in plain words.
            described.append({"field": path, "message": error.message,
                              "keyword": str(error.validator)})
        first = described[0]
        raise ValidationFailed(
            f"{first['field']}: {first['message']}", field=first["field"], errors=described
        )

    # -- internals -----------------------------------------------------------------------

    def _validator(self, schema: Any, field: str) -> Any:
        """The compiled validator of a schema that passed every check (cached)."""
        if not isinstance(schema, dict):
            raise ValidationFailed("a JSON Schema must be an object", field=field)
        encoded = self._check_size(schema, field, self.limits.max_bytes,
                                   self.limits.max_depth, "schema")
        key = hashlib.sha256(encoded).digest()
        with self._lock:
            found = self._validators.get(key)
            if found is not None:
                self._validators.move_to_end(key)
                return found
        if self._offload is not None and len(encoded) > INLINE_BYTES:
            _raise(self._offload(self.limits, schema, None, field, False))
            validator = self._build(schema)  # checked elsewhere: only build it here
        else:
            validator = self._compile(schema, field)
        with self._lock:
            self._validators[key] = validator
            if len(self._validators) > _CACHE_SIZE:
                self._validators.popitem(last=False)
        return validator

    def _compile(self, schema: dict[str, Any], field: str) -> Any:
        dialect = schema_keywords.dialect_of(schema)
        if dialect is None:
            raise ValidationFailed(
                "unknown $schema; use JSON Schema 2020-12, 2019-09, draft-07, -06 or -04",
                field=f"{field}.$schema")
        cls = schema_keywords.validator_class(dialect)
        # Refs and patterns first: their errors are clearer than the meta-schema's.
        keywords = schema_walk.walk(schema, specification_with(dialect), field,
                                    self.limits.max_subschemas)
        meta = cls(cls.META_SCHEMA, format_checker=schema_keywords.FORMATS)
        error = best_match(meta.iter_errors(schema))
        if error is not None:
            raise ValidationFailed(f"not a valid JSON Schema: {error.message}",
                                   field=schema_walk.field_name(
                                       field, tuple(str(p) for p in error.absolute_path)))
        if "unevaluatedProperties" in keywords and "patternProperties" in keywords:
            # jsonschema matches patternProperties with backtracking ``re`` while it works
            # out which properties were evaluated; refuse the combination instead.
            raise ValidationFailed("patternProperties cannot be combined with "
                                   "unevaluatedProperties", field=f"{field}.patternProperties")
        return self._build(schema)

    @staticmethod
    def _build(schema: dict[str, Any]) -> Any:
        dialect = schema_keywords.dialect_of(schema)
        assert dialect is not None  # checked before
        cls = schema_keywords.validator_class(dialect)
        return cls(schema, registry=schema_walk.OFFLINE, format_checker=schema_keywords.FORMATS)

    @staticmethod
    def _check_size(value: Any, field: str, max_bytes: int, max_depth: int, what: str
                    ) -> bytes:
        too_deep = schema_walk.deeper_than(value, max_depth)
        if too_deep is not None:
            raise ValidationFailed(f"the {what} is nested deeper than {max_depth} levels",
                                   field=schema_walk.field_name(field, too_deep))
        encoded = json_codec.dumps_bytes(value)
        if len(encoded) > max_bytes:
            raise ValidationFailed(f"the {what} is larger than {max_bytes} bytes as JSON",
                                   field=field)
        return encoded


def _raise(failure: Failure | None) -> None:
    if failure is not None:
        detail, field, errors = failure
        raise ValidationFailed(detail, field=field, errors=errors)


_elsewhere: dict[SchemaLimits, SchemaChecker] = {}


def check_elsewhere(limits: SchemaLimits, schema: dict[str, Any], instance: Any, field: str,
                    is_value: bool) -> Failure | None:
    """What an :class:`Offload` runs (in a worker process): check ``instance`` against
    ``schema`` (``is_value``) or ``schema`` itself; the failure as plain data, or None."""
    checker = _elsewhere.get(limits)
    if checker is None:
        checker = _elsewhere[limits] = SchemaChecker(limits)
    try:
        if is_value:
            checker.validate(instance, schema, field)
        else:
            checker.check_schema(schema, field)
    except ValidationFailed as exc:
        return exc.detail, exc.field, exc.extra.get("errors")
    return None
