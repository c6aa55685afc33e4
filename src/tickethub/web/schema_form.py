"""Forms generated from a ticket's ``response_schema``, and typed values read back.

``fields_for(schema, value)`` turns a JSON Schema into form fields: strings are text
inputs (enums become choices), integers and numbers are number inputs, booleans are
toggles (a required one is a yes/no choice with nothing picked, so not choosing is an
error rather than ``false``), arrays of enums are check-box groups, other arrays one
item per line, nested objects fieldsets, anything else a JSON box. ``parse(fields,
form)`` reads the posted form back into typed JSON (numbers are numbers, booleans
booleans) and returns field errors keyed by form name; the service then validates the
result against the schema again, and ``errors_from_problem`` places its errors next to
the same fields. Every message names its field by label in plain words
(``schema_text``), and each field carries a ``hint`` of its limits, shown before
anything is typed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tickethub.web import schema_text

ROOT = "f"
_REQUIRED = re.compile(r"^'(?P<name>[^']+)' is a required property$")


@dataclass
class Field:
    name: str
    path: tuple[str, ...]
    label: str
    widget: str  # text, textarea, email, url, date, integer, number, checkbox, select,
    # choices, lines, json, group, yesno
    required: bool = False
    nullable: bool = False
    description: str | None = None
    options: list[Any] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    children: list[Field] = field(default_factory=list)
    value: Any = None
    item_type: str = "string"
    raw: str | None = None
    schema: Mapping[str, Any] | None = None
    hint: str | None = None

    original: Any = None  # the value the form was first rendered with

    @property
    def original_text(self) -> str:
        """The first value as ``data-original`` for change highlighting: text as typed,
        an option's index, ``true``/``false``, sorted JSON for a JSON box."""
        first = replace(self, value=self.original, raw=None, children=[])
        if first.widget == "select":
            index = next((i for i in range(len(first.options)) if first.option_selected(i)),
                         None)
            return "" if index is None else str(index)
        if first.widget in ("checkbox", "yesno"):
            return "" if first.value is None else ("true" if first.value else "false")
        if first.widget == "choices":
            return ",".join(str(i) for i in range(len(first.options))
                            if first.option_selected(i))
        if first.widget == "json":
            return "" if first.value is None else json.dumps(first.value, sort_keys=True)
        return first.text_value

    @property
    def id(self) -> str:
        return self.name.replace(".", "-")

    def option_selected(self, index: int) -> bool:
        option = self.options[index]
        if self.widget == "choices":
            return isinstance(self.value, list) and option in self.value
        return bool(self.value == option and type(self.value) is type(option))

    @property
    def text_value(self) -> str:
        """The value as it goes into a text-like input."""
        if self.raw is not None:
            return self.raw
        if self.value is None:
            return ""
        if self.widget == "json":
            return json.dumps(self.value, indent=2)
        if self.widget == "lines":
            return "\n".join(str(v) for v in self.value) if isinstance(self.value, list) else ""
        return str(self.value)


def _types(schema: Mapping[str, Any]) -> tuple[str | None, bool]:
    kind = schema.get("type")
    if isinstance(kind, list):
        others = [k for k in kind if k != "null"]
        return (others[0] if len(others) == 1 else None), "null" in kind
    if kind is None and "enum" in schema:
        return "enum", None in schema["enum"]
    if kind is None and "properties" in schema:
        return "object", False
    return kind, False


def _attrs(schema: Mapping[str, Any], kind: str | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if kind in ("integer", "number"):
        for key, attr in (("minimum", "min"), ("maximum", "max")):
            if isinstance(schema.get(key), int | float):
                attrs[attr] = schema[key]
        attrs["step"] = schema.get("multipleOf", 1 if kind == "integer" else "any")
    if kind == "string":
        for key, attr in (("minLength", "minlength"), ("maxLength", "maxlength"),
                          ("pattern", "pattern")):
            if key in schema:
                attrs[attr] = schema[key]
    return attrs


def _field(schema: Any, path: tuple[str, ...], name: str, label: str, required: bool,
           value: Any) -> Field:
    if not isinstance(schema, Mapping):
        return Field(name, path, label, "json", required, value=value, original=value)
    kind, nullable = _types(schema)
    f = Field(name, path, schema.get("title") or label, "json", required, nullable,
              schema.get("description"), attrs=_attrs(schema, kind), value=value,
              schema=schema, hint=schema_text.hint(schema, kind), original=value)
    if "enum" in schema and isinstance(schema["enum"], list):
        f.widget, f.options = "select", [o for o in schema["enum"] if o is not None]
        f.nullable = nullable or None in schema["enum"]
    elif kind == "object" and isinstance(schema.get("properties"), Mapping):
        f.widget = "group"
        needed = set(schema.get("required") or ())
        current = value if isinstance(value, Mapping) else {}
        f.children = [
            _field(sub, (*path, key), f"{name}.{key}", key.replace("_", " ").capitalize(),
                   key in needed, current.get(key))
            for key, sub in schema["properties"].items()
        ]
    elif kind == "boolean":
        f.widget = "yesno" if required and not nullable else "checkbox"
    elif kind in ("integer", "number"):
        f.widget = kind
    elif kind == "string":
        fmt = schema.get("format")
        f.widget = {"email": "email", "uri": "url", "date": "date"}.get(str(fmt), "text")
        if f.widget == "text" and (schema.get("maxLength") or 0) > 200:
            f.widget = "textarea"
    elif kind == "array" and isinstance(schema.get("items"), Mapping):
        items = schema["items"]
        item_kind, _ = _types(items)
        if isinstance(items.get("enum"), list):
            f.widget, f.options = "choices", list(items["enum"])
        elif item_kind in ("string", "integer", "number"):
            f.widget, f.item_type = "lines", item_kind
    return f


def fields_for(schema: Mapping[str, Any] | None, value: Any = None) -> list[Field]:
    """The form fields for ``schema``, pre-filled from ``value``."""
    if schema is None:
        return []
    root = _field(schema, (), ROOT, "Answer", True, value)
    return root.children if root.widget == "group" else [root]


def _scalar(kind: str, raw: str) -> tuple[Any, str | None]:
    if kind == "integer":
        try:
            return int(raw), None
        except ValueError:
            return None, "Enter a whole number."
    if kind == "number":
        try:
            number = float(raw)
        except ValueError:
            return None, "Enter a number."
        if number != number or number in (float("inf"), float("-inf")):
            return None, "Enter a number."
        return (int(number) if number.is_integer() and "." not in raw else number), None
    return raw, None


def _read(f: Field, form: Mapping[str, Sequence[str]], errors: dict[str, str]) -> Any:
    """The typed value of ``f``, or ``_MISSING`` when left empty."""
    values = form.get(f.name) or []
    raw = values[-1].strip() if values else ""
    if f.widget == "group":
        out: dict[str, Any] = {}
        for child in f.children:
            got = _read(child, form, errors)
            if got is not _MISSING:
                out[child.path[-1]] = got
        return out
    if f.widget == "checkbox":
        return bool(values) and raw not in ("", "0", "false", "off")
    if f.widget == "yesno":
        if raw in ("true", "false"):
            return raw == "true"
        errors[f.name] = schema_text.parse_problem(f.label, "yesno")
        return _MISSING
    if f.widget == "choices":
        picked = []
        for v in values:
            if v.isdigit() and int(v) < len(f.options):
                picked.append(f.options[int(v)])
        return picked
    if raw == "":
        if f.required and not f.nullable:
            errors[f.name] = schema_text.parse_problem(f.label, "required")
            return _MISSING
        return None if f.nullable else _MISSING
    if f.widget == "select":
        if raw.isdigit() and int(raw) < len(f.options):
            return f.options[int(raw)]
        errors[f.name] = schema_text.parse_problem(f.label, "choice")
        return _MISSING
    if f.widget in ("integer", "number"):
        number, problem = _scalar(f.widget, raw)
        if problem:
            errors[f.name] = schema_text.parse_problem(f.label, f.widget)
            return _MISSING
        return number
    if f.widget == "lines":
        items = []
        for line in (x.strip() for x in raw.splitlines()):
            if line:
                item, problem = _scalar(f.item_type, line)
                if problem:
                    errors[f.name] = (f"{f.label}, line {line!r}: "
                                      f"{problem[0].lower()}{problem[1:]}")
                    return _MISSING
                items.append(item)
        return items
    if f.widget == "json":
        try:
            return json.loads(raw)
        except ValueError:
            errors[f.name] = schema_text.parse_problem(f.label, "json")
            return _MISSING
    return values[-1] if f.widget == "textarea" else raw


class _Missing:
    pass


_MISSING: Any = _Missing()


def parse(fields: list[Field], form: Mapping[str, Sequence[str]]) -> tuple[Any, dict[str, str]]:
    """The typed JSON value the form describes, and errors by form field name."""
    errors: dict[str, str] = {}
    if len(fields) == 1 and fields[0].path == ():
        value = _read(fields[0], form, errors)
        return (None if value is _MISSING else value), errors
    out: dict[str, Any] = {}
    for f in fields:
        got = _read(f, form, errors)
        if got is not _MISSING:
            out[f.path[-1]] = got
    return out, errors


def find(fields: list[Field], name: str) -> Field | None:
    for f in fields:
        if f.name == name:
            return f
        found = find(f.children, name)
        if found is not None:
            return found
    return None


def errors_from_problem(errors: list[dict[str, Any]] | None, field: str | None,
                        message: str, fields: list[Field] | None = None) -> dict[str, str]:
    """Map a service ``ValidationFailed`` (fields like ``data.address.city``) to form
    field names, each message in plain words naming the field's label (``schema_text``);
    what matches no field is keyed ``""`` (shown above the form). The first error of a
    field wins."""
    out: dict[str, str] = {}
    for error in errors or [{"field": field or "", "message": message}]:
        parts = str(error.get("field") or "").split(".")[1:]
        text = str(error.get("message", message))
        keyword = error.get("keyword")
        found = _REQUIRED.match(text)
        if found:
            parts.append(found.group("name"))
            keyword = "required"
        name = ".".join([ROOT, *parts])
        target = find(fields or [], name)
        if target is not None:
            text = schema_text.problem(target.label, keyword and str(keyword),
                                       target.schema, text)
        elif found:
            text = schema_text.problem(found.group("name").replace("_", " ").capitalize(),
                                       "required", None, text)
        out.setdefault(name, text)
    return out


def as_posted(fields: list[Field]) -> dict[str, list[str]]:
    """What the browser sends for these fields untouched (as rendered from their
    original values): parsing it gives the form's own reading of the original, the
    baseline a person's changes are measured against."""
    out: dict[str, list[str]] = {}
    for f in fields:
        out.update(as_posted(f.children))
        first = replace(f, value=f.original, raw=None, children=[])
        if f.widget == "group":
            continue
        if f.widget == "checkbox":
            out[f.name] = ["true"] if first.value else []
        elif f.widget == "yesno":
            out[f.name] = [first.original_text] if first.original_text else []
        elif f.widget == "choices":
            out[f.name] = [i for i in first.original_text.split(",") if i]
        elif f.widget == "select":
            out[f.name] = [first.original_text]
        else:
            out[f.name] = [first.text_value]
    return out


def in_form_order(fields: list[Field], errors: dict[str, str]) -> dict[str, str]:
    """``errors`` ordered as their fields appear on the form (form-wide ones first)."""
    order: list[str] = []

    def walk(items: list[Field]) -> None:
        for f in items:
            order.append(f.name)
            walk(f.children)

    walk(fields)
    rank = {name: n for n, name in enumerate(order)}
    return dict(sorted(errors.items(), key=lambda item: rank.get(item[0], -1)))


def all_names(fields: list[Field]) -> set[str]:
    names: set[str] = set()
    for f in fields:
        names.add(f.name)
        names |= all_names(f.children)
    return names


def refill(fields: list[Field], form: Mapping[str, Sequence[str]]) -> None:
    """Put what a person typed back into text-like fields, so a failed submit keeps it."""
    for f in fields:
        refill(f.children, form)
        values = form.get(f.name)
        if f.widget == "checkbox":
            f.value = bool(values)
        elif f.widget == "yesno":
            raw = values[-1] if values else ""
            f.raw = raw
            f.value = {"true": True, "false": False}.get(raw)
        elif f.widget == "choices":
            f.value = [f.options[int(v)] for v in values or () if v.isdigit()
                       and int(v) < len(f.options)]
        elif f.widget == "select":
            raw = values[-1] if values else ""
            f.value = f.options[int(raw)] if raw.isdigit() and int(raw) < len(f.options) else None
        elif f.widget != "group" and values is not None:
            f.raw = values[-1]
