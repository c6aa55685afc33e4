"""Caller-supplied JSON Schemas are hostile: no fetching, no backtracking, bounded work,
and every problem found when the ticket is opened, as a 422 naming the place."""

from __future__ import annotations

import jsonschema._keywords
import jsonschema._utils
import pytest
from bench.bait_server import BaitServer

from tickethub.errors import ValidationFailed
from tickethub.services import schema_regex
from tickethub.services.answer_schema import SchemaChecker, SchemaLimits

CATASTROPHIC = {"type": "string", "pattern": "^(a+)+$"}


def refused(call, *args) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as caught:
        call(*args)
    assert caught.value.status == 422
    return caught.value


class _NoBacktracking:
    """Stands in for ``re`` inside jsonschema: any use of it fails the test."""

    def search(self, *args, **kwargs):
        raise AssertionError("jsonschema's backtracking re was used on a caller's pattern")

    compile = match = search


@pytest.fixture
def no_python_re(monkeypatch):
    monkeypatch.setattr(jsonschema._keywords, "re", _NoBacktracking())
    monkeypatch.setattr(jsonschema._utils, "re", _NoBacktracking())


def test_a_remote_ref_is_refused_naming_it_and_nothing_is_fetched():
    checker = SchemaChecker()
    with BaitServer() as bait:
        for schema, field in [
            ({"$ref": bait.url()}, "response_schema.$ref"),
            ({"properties": {"x": {"$ref": bait.url()}}}, "response_schema.properties.x.$ref"),
            ({"items": {"$dynamicRef": bait.url("/d.json#meta")}},
             "response_schema.items.$dynamicRef"),
            ({"$id": bait.url("/base.json"), "$ref": "other.json"}, "response_schema.$ref"),
        ]:
            error = refused(checker.check_schema, schema)
            assert error.field == field
            assert "local" in error.detail
            # A schema stored before these checks is refused at answer time, still unfetched.
            assert refused(checker.validate, "x", schema).field == field
    assert bait.requests == []


def test_a_dangling_local_ref_is_refused_when_the_ticket_opens():
    error = refused(SchemaChecker().check_schema,
                    {"properties": {"n": {"$ref": "#/$defs/nope"}}, "$defs": {}})
    assert error.field == "response_schema.properties.n.$ref"
    assert "points to nothing" in error.detail


def test_local_refs_anchors_and_embedded_resources_resolve():
    checker = SchemaChecker()
    schema = {
        "$defs": {"n": {"type": "integer"}, "named": {"$anchor": "name", "type": "string"}},
        "properties": {
            "n": {"$ref": "#/$defs/n"},
            "who": {"$ref": "#name"},
            # a tool's own schema embedded in a larger one: its refs point into itself
            "tool": {"$id": "urn:tickethub:tool:0", "$defs": {"b": {"type": "boolean"}},
                     "properties": {"b": {"$ref": "#/$defs/b"}}},
        },
    }
    checker.check_schema(schema)
    checker.validate({"n": 1, "who": "x", "tool": {"b": True}}, schema)
    assert refused(checker.validate, {"tool": {"b": 1}}, schema).field == "data.tool.b"
    assert refused(checker.validate, {"who": 2}, schema).field == "data.who"


def test_a_catastrophic_pattern_is_checked_by_re2(no_python_re):
    checker = SchemaChecker()
    checker.check_schema(CATASTROPHIC)
    error = refused(checker.validate, "a" * 30 + "!", CATASTROPHIC)
    assert error.field == "data" and "does not match" in error.detail
    checker.validate("a" * 30, CATASTROPHIC)
    schema = {"type": "object", "patternProperties": {"^(x+)+$": {"type": "integer"}},
              "additionalProperties": False,
              "properties": {"tags": {"type": "array", "items": {"format": "regex"}}}}
    checker.check_schema(schema)
    checker.validate({"xxx": 1, "tags": ["^a+$"]}, schema)
    assert refused(checker.validate, {"xxx": "one"}, schema).field == "data.xxx"
    assert "do(es) not match any of the regexes" in refused(
        checker.validate, {"x" * 30 + "!": 1}, schema).detail
    # format: regex asserts RE2's syntax: look-ahead is not RE2
    assert refused(checker.validate, {"tags": ["(?=a)"]}, schema).field == "data.tags.0"


def test_re2_is_the_engine():
    assert type(schema_regex.compile_pattern("^a$")).__module__.startswith("re2")
    # RE2 rejects what only a backtracking engine can do; Python's re accepts it.
    with pytest.raises(schema_regex.BadPattern, match="escape"):
        schema_regex.compile_pattern(r"(a)\1")


def test_a_pattern_re2_cannot_compile_is_refused_naming_it():
    checker = SchemaChecker()
    error = refused(checker.check_schema, {"properties": {"x": {"pattern": r"(a)\1"}}})
    assert error.field == "response_schema.properties.x.pattern"
    assert "RE2" in error.detail
    error = refused(checker.check_schema, {"patternProperties": {"(?=x)": {}}})
    assert error.field == "response_schema.patternProperties.(?=x)"
    error = refused(checker.check_schema, {"unevaluatedProperties": False,
                                           "patternProperties": {"^x": {}}})
    assert error.field == "response_schema.patternProperties"


def test_size_and_nesting_limits_name_the_place():
    checker = SchemaChecker(SchemaLimits(max_bytes=2048, max_depth=10, max_subschemas=50,
                                         max_value_bytes=2048, max_value_depth=5))
    deep: dict = {"type": "object"}
    for _ in range(10):
        deep = {"properties": {"x": deep}}
    error = refused(checker.check_schema, deep)
    assert error.field.startswith("response_schema.properties.x.properties.x")
    assert "deeper than 10" in error.detail
    big = {"enum": ["x" * 100] * 30}
    error = refused(checker.check_schema, big)
    assert error.field == "response_schema" and "larger than 2048 bytes" in error.detail
    many = {"anyOf": [{"type": "string"}] * 60}
    assert "more than 50 subschemas" in refused(checker.check_schema, many).detail
    assert "larger than 2048" in refused(checker.validate, "y" * 3000, {"type": "string"}).detail
    error = refused(checker.validate, [[[[[[1]]]]]], {"type": "array"})
    assert error.field.startswith("data.0.0.0.0.0") and "deeper than 5" in error.detail


def test_refs_that_fan_out_or_loop_in_place_are_refused_at_ask():
    checker = SchemaChecker()
    bomb: dict = {"$defs": {"d40": {"type": "string"}}, "$ref": "#/$defs/d0"}
    for i in range(40):
        bomb["$defs"][f"d{i}"] = {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2}
    assert "expand to more than" in refused(checker.check_schema, bomb).detail
    assert "cycle" in refused(checker.check_schema, {"$ref": "#"}).detail
    looping = {"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}]},
                         "b": {"not": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}
    assert "cycle" in refused(checker.check_schema, looping).detail
    tree = {"$defs": {"t": {"type": "object", "properties": {
        "kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}}}}, "$ref": "#/$defs/t"}
    checker.check_schema(tree)  # recursion that steps into the value is fine
    checker.validate({"kids": [{"kids": []}]}, tree)


def test_a_value_that_costs_too_many_steps_is_a_422_not_a_hang():
    checker = SchemaChecker(SchemaLimits(max_steps=5_000))
    # each level checks the next one twice: 2^depth steps on a nested value
    schema = {"$defs": {"t": {"properties": {"a": {"allOf": [{"$ref": "#/$defs/t"}] * 2}}}},
              "$ref": "#/$defs/t"}
    checker.check_schema(schema)
    value: dict = {}
    for _ in range(30):
        value = {"a": value}
    error = refused(checker.validate, value, schema)
    assert error.field == "data" and "more than 5000 steps" in error.detail
    checker.validate({"a": {"a": {}}}, schema)


def test_unique_items_compares_json_values():
    checker = SchemaChecker()
    schema = {"type": "array", "uniqueItems": True}
    refused(checker.validate, [{"a": 1, "b": [1]}, {"b": [1.0], "a": 1}], schema)
    checker.validate([True, 1, False, 0, None, "1", [1], {"a": 1}], schema)
    checker.validate([{"n": n} for n in range(20_000)], schema)


def test_dialects():
    checker = SchemaChecker()
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#",
              "items": [{"type": "string"}], "definitions": {"n": {"type": "integer"}},
              "properties": {"n": {"$ref": "#/definitions/n"}}}
    checker.check_schema(draft7)
    assert refused(checker.validate, [1], draft7).field == "data.0"
    error = refused(checker.check_schema, {"$schema": "http://example.com/my-dialect"})
    assert error.field == "response_schema.$schema"
    error = refused(checker.check_schema, {"type": "banana"})
    assert error.field == "response_schema.type"


def test_compiled_validators_are_reused(monkeypatch):
    checker = SchemaChecker()
    compiled = []
    real = checker._compile
    monkeypatch.setattr(checker, "_compile", lambda s, f: compiled.append(s) or real(s, f))
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    checker.check_schema(schema)
    checker.validate({"n": 1}, schema)
    checker.validate({"n": 2}, dict(schema))
    assert len(compiled) == 1
