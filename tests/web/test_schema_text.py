"""Schema rules in plain words: limits shown before typing, errors after a check."""

from __future__ import annotations

import pytest

from tickethub.web import schema_form
from tickethub.web.schema_text import hint, problem

EMAIL = {"type": "string", "title": "Email", "pattern": "^[^@]+@[^@]+$"}


@pytest.mark.parametrize(("keyword", "schema", "expected"), [
    ("pattern", EMAIL, "Email must look like name@example.org."),
    ("pattern", {"pattern": "^[A-Z]{3}$", "examples": ["EUR"]}, "Code must look like EUR."),
    ("pattern", {"pattern": "^[A-Z]{3}$", "description": "Three capital letters"},
     "Code is not in the expected form: Three capital letters"),
    ("pattern", {"pattern": "^[A-Z]{3}$"}, "Code is not in the expected form."),
    ("format", {"format": "date"}, "Code must look like 2026-01-31."),
    ("required", {}, "Code is required."),
    ("maximum", {"type": "integer", "minimum": 1, "maximum": 10},
     "Code must be from 1 to 10."),
    ("minimum", {"type": "number", "minimum": 0.5}, "Code must be at least 0.5."),
    ("multipleOf", {"maximum": 100, "multipleOf": 5},
     "Code must be at most 100, in steps of 5."),
    ("exclusiveMinimum", {"exclusiveMinimum": 0}, "Code must be more than 0."),
    ("maxLength", {"maxLength": 20}, "Code must be up to 20 characters."),
    ("minLength", {"minLength": 3, "maxLength": 3}, "Code must be exactly 3 characters."),
    ("type", {"type": "integer"}, "Code must be a whole number."),
    ("type", {"type": ["string", "null"]}, "Code must be text or empty."),
    ("enum", {"enum": ["eu", "us", None]}, "Code must be one of: eu, us, empty."),
    ("minItems", {"minItems": 2}, "Code needs at least 2 items."),
    ("uniqueItems", {}, "Code lists the same item twice."),
    ("dependentRequired", {}, "Code: raw message"),
])
def test_problems_in_plain_words(keyword: str, schema: dict, expected: str) -> None:
    text = problem(schema.get("title", "Code"), keyword, schema, "raw message")
    assert text == expected
    assert "does not match" not in text and "^" not in text


def test_hints_show_limits_before_anything_is_typed() -> None:
    assert hint({"minimum": 1, "maximum": 10}, "integer") == "Whole number from 1 to 10."
    assert hint({"maximum": 100, "multipleOf": 5}, "integer") == (
        "Whole number at most 100, in steps of 5.")
    assert hint({"minimum": 0}, "number") == "Number at least 0."
    assert hint({"maxLength": 20}, "string") == "Up to 20 characters."
    assert hint(EMAIL, "string") == "Like name@example.org."
    assert hint({"items": {"enum": ["a", "b"]}, "minItems": 1, "maxItems": 2},
                "array") == "Pick 1 to 2."
    assert hint({"type": "integer"}, "integer") is None
    assert hint({"format": "email"}, "string") is None  # the input type says it already


def test_service_errors_map_to_labelled_fields() -> None:
    schema = {"type": "object", "required": ["email", "region"], "properties": {
        "email": EMAIL, "region": {"enum": ["eu", "us"]},
        "replicas": {"type": "integer", "maximum": 10, "title": "Replica count"}}}
    fields = schema_form.fields_for(schema)
    errors = schema_form.errors_from_problem([
        {"field": "data.email", "message": "'nope' does not match '^[^@]+@[^@]+$'",
         "keyword": "pattern"},
        {"field": "data", "message": "'region' is a required property",
         "keyword": "required"},
        {"field": "data.replicas", "message": "50 is greater than the maximum of 10",
         "keyword": "maximum"},
        {"field": "data.extra.deep", "message": "something odd", "keyword": "const"},
    ], None, "", fields)
    assert errors == {
        "f.email": "Email must look like name@example.org.",
        "f.region": "Region is required.",
        "f.replicas": "Replica count must be at most 10.",
        "f.extra.deep": "something odd",
    }


def test_a_required_boolean_is_a_yes_no_choice() -> None:
    schema = {"type": "object", "required": ["confirm"], "properties": {
        "confirm": {"type": "boolean", "title": "Confirm"},
        "notify": {"type": "boolean"}}}
    confirm, notify = schema_form.fields_for(schema)
    assert (confirm.widget, notify.widget) == ("yesno", "checkbox")
    assert schema_form.parse([confirm, notify], {}) == (
        {"notify": False}, {"f.confirm": "Confirm: choose yes or no."})
    assert schema_form.parse([confirm], {"f.confirm": ["false"]}) == ({"confirm": False}, {})
    assert schema_form.parse([confirm], {"f.confirm": ["true"]}) == ({"confirm": True}, {})


def test_original_values_stay_after_a_refill() -> None:
    schema = {"type": "object", "properties": {
        "replicas": {"type": "integer"}, "region": {"enum": ["eu", "us"]},
        "on": {"type": "boolean"}}}
    fields = schema_form.fields_for(schema, {"replicas": 4, "region": "us", "on": True})
    schema_form.refill(fields, {"f.replicas": ["6"], "f.region": ["0"]})
    assert [f.original_text for f in fields] == ["4", "1", "true"]
    assert [f.text_value for f in fields[:1]] == ["6"]
