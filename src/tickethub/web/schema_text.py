"""A JSON Schema's rules in plain words, for the person filling in a form.

``hint(schema)`` says what a field accepts before anything is typed ("Whole number from
1 to 10.", "Up to 20 characters.", "Like name@example.org."); ``problem(label, keyword,
schema, message)`` says what is wrong after a check failed, naming the field by its label
("Email must look like name@example.org." instead of ``'nope' does not match
'^[^@]+@[^@]+$'``). Both read only the field's own schema (``title``, ``description``,
``examples``, limits); a keyword they do not know falls back to the validator's message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_FORMATS = {"email": "name@example.org", "uri": "https://example.org/page",
            "date": "2026-01-31", "date-time": "2026-01-31T09:30:00Z", "time": "09:30:00",
            "ipv4": "192.0.2.10", "hostname": "host.example.org", "uuid":
            "123e4567-e89b-12d3-a456-426614174000"}
_KINDS = {"integer": "a whole number", "number": "a number", "string": "text",
          "boolean": "yes or no", "array": "a list", "object": "a group of fields",
          "null": "empty"}


def _num(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def example(schema: Mapping[str, Any]) -> str | None:
    """What a valid value looks like: the schema's first example, a known format's
    example, or for a pattern that asks for an ``@``, an email address."""
    examples = schema.get("examples")
    if isinstance(examples, list) and examples and isinstance(examples[0], str | int | float):
        return str(examples[0])
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS:
        return _FORMATS[fmt]
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and "@" in pattern:
        return _FORMATS["email"]
    return None


def _range(schema: Mapping[str, Any]) -> str | None:
    low, high = schema.get("minimum"), schema.get("maximum")
    xlow, xhigh = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    parts = []
    if isinstance(low, int | float) and isinstance(high, int | float):
        parts.append(f"from {_num(low)} to {_num(high)}")
    else:
        if isinstance(low, int | float):
            parts.append(f"at least {_num(low)}")
        if isinstance(high, int | float):
            parts.append(f"at most {_num(high)}")
    if isinstance(xlow, int | float) and not isinstance(xlow, bool):
        parts.append(f"more than {_num(xlow)}")
    if isinstance(xhigh, int | float) and not isinstance(xhigh, bool):
        parts.append(f"less than {_num(xhigh)}")
    step = schema.get("multipleOf")
    if isinstance(step, int | float) and step != 1:
        parts.append(f"in steps of {_num(step)}")
    return ", ".join(parts) or None


def _length(schema: Mapping[str, Any], unit: str) -> str | None:
    low, high = schema.get("minLength" if unit == "characters" else "minItems"), \
        schema.get("maxLength" if unit == "characters" else "maxItems")
    if isinstance(low, int) and isinstance(high, int):
        return f"{low} to {high} {unit}" if low != high else f"exactly {low} {unit}"
    if isinstance(high, int):
        return f"up to {high} {unit}"
    if isinstance(low, int) and low > (1 if unit == "characters" else 0):
        return f"at least {low} {unit}"
    return None


def hint(schema: Mapping[str, Any] | None, kind: str | None) -> str | None:
    """The field's limits in one sentence, or ``None`` when it has none worth saying."""
    if not isinstance(schema, Mapping):
        return None
    parts: list[str] = []
    if kind in ("integer", "number"):
        limits = _range(schema)
        noun = "Whole number" if kind == "integer" else "Number"
        if limits:
            parts.append(f"{noun} {limits}")
    elif kind == "string":
        length = _length(schema, "characters")
        if length:
            parts.append(length[0].upper() + length[1:])
        like = example(schema)
        if like and (schema.get("pattern") or schema.get("examples")):
            parts.append(f"like {like}")
    elif kind == "array":
        count = _length(schema, "items")
        if count:
            parts.append("Pick " + count.replace("items", "").strip()
                         if isinstance(schema.get("items"), Mapping)
                         and "enum" in schema["items"] else count[0].upper() + count[1:])
    if not parts:
        return None
    text = ", ".join(parts)
    return text[0].upper() + text[1:] + "."


def problem(label: str, keyword: str | None, schema: Mapping[str, Any] | None,
            message: str) -> str:
    """What is wrong with the field called ``label``, in words; ``message`` is the
    validator's own text, used for what this does not know."""
    s: Mapping[str, Any] = schema if isinstance(schema, Mapping) else {}
    if keyword == "required":
        return f"{label} is required."
    if keyword == "type":
        kind = s.get("type")
        kinds = kind if isinstance(kind, list) else [kind]
        words = " or ".join(_KINDS.get(str(k), str(k)) for k in kinds if k)
        return f"{label} must be {words}." if words else f"{label} has the wrong type."
    if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                   "multipleOf"):
        limits = _range(s)
        return f"{label} must be {limits}." if limits else f"{label}: {message}"
    if keyword in ("minLength", "maxLength"):
        length = _length(s, "characters")
        return f"{label} must be {length}." if length else f"{label}: {message}"
    if keyword in ("minItems", "maxItems"):
        count = _length(s, "items")
        return f"{label} needs {count}." if count else f"{label}: {message}"
    if keyword in ("pattern", "format"):
        like = example(s)
        if like:
            return f"{label} must look like {like}."
        description = s.get("description")
        if isinstance(description, str) and description.strip():
            return f"{label} is not in the expected form: {description.strip()}"
        return f"{label} is not in the expected form."
    if keyword in ("enum", "const"):
        options = s.get("enum") if keyword == "enum" else [s.get("const")]
        if isinstance(options, list) and options:
            shown = ", ".join("empty" if o is None else str(o) for o in options[:10])
            return f"{label} must be one of: {shown}."
    if keyword == "uniqueItems":
        return f"{label} lists the same item twice."
    if keyword == "additionalProperties":
        return f"{label} has a field this form does not know."
    if keyword in ("anyOf", "oneOf"):
        return f"{label} does not match any of the allowed forms."
    return f"{label}: {message}"


def parse_problem(label: str, kind: str) -> str:
    """The words for input that is not even the right kind of value."""
    return {
        "required": f"{label} is required.",
        "integer": f"{label} must be a whole number.",
        "number": f"{label} must be a number.",
        "choice": f"{label}: pick one of the choices.",
        "yesno": f"{label}: choose yes or no.",
        "json": f"{label} must be valid JSON.",
    }.get(kind, f"{label} is not valid.")
