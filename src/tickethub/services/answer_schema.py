"""JSON Schema checks for response schemas, structured answers and edited approvals.

jsonschema is a pure library (no I/O), so services use it directly rather than
through a port.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from tickethub.errors import ValidationFailed


def check_schema(schema: Any, field: str = "response_schema") -> None:
    """Raise :class:`ValidationFailed` unless ``schema`` is a valid JSON Schema object."""
    if not isinstance(schema, dict):
        raise ValidationFailed("a JSON Schema must be an object", field=field)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        path = ".".join(str(p) for p in exc.path)
        raise ValidationFailed(
            f"not a valid JSON Schema: {exc.message}", field=f"{field}.{path}" if path else field
        ) from None


def validate(instance: Any, schema: dict[str, Any] | None, field: str = "data") -> None:
    """Raise :class:`ValidationFailed` naming the first failing field of ``instance``."""
    if schema is None:
        return
    validator = Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    if not errors:
        return
    described = []
    for error in errors:
        path = ".".join([field, *(str(p) for p in error.absolute_path)])
        described.append({"field": path, "message": error.message})
    first = described[0]
    raise ValidationFailed(
        f"{first['field']}: {first['message']}", field=first["field"], errors=described
    )
