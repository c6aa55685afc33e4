"""Manifests: triggers, scopes and configuration are checked at load, naming the field."""

from __future__ import annotations

import pytest

from tickethub.agents import Manifest, Scope, Trigger, TriggerKind
from tickethub.errors import ValidationFailed

BASE = {"name": "shout", "triggers": ["/shout"], "scopes": ["comment"]}


def test_triggers_of_each_kind() -> None:
    m = Manifest.parse({**BASE, "triggers": ["/shout", "issue_comment.created", "@owner",
                                             "every 2h", "schedule:30m"]})
    assert [t.kind for t in m.triggers] == [
        TriggerKind.COMMAND, TriggerKind.EVENT, TriggerKind.MENTION, TriggerKind.SCHEDULE,
        TriggerKind.SCHEDULE]
    assert m.triggers[3].every_seconds == 7200 and m.triggers[4].every_seconds == 1800
    assert m.commands() == frozenset({"shout"})
    assert Trigger.parse("issues.opened") == Trigger(TriggerKind.EVENT, "issues.opened")


@pytest.mark.parametrize(("change", "field"), [
    ({"name": "Bad Name"}, "manifest.name"),
    ({"triggers": []}, "manifest.triggers"),
    ({"triggers": ["/ok", "/Not Ok"]}, "manifest.triggers.1"),
    ({"triggers": ["every often"]}, "manifest.triggers.0"),
    ({"scopes": ["comment", "delete_repo"]}, "manifest.scopes.1"),
    ({"sensitive": ["label"]}, "manifest.sensitive"),
    ({"config_schema": {"type": "nonsense"}}, "manifest.config_schema.type"),
    ({"limits": {"llm_calls": 1, "dollars": 3}}, "manifest.limits"),
])
def test_a_broken_manifest_names_the_field(change: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationFailed) as raised:
        Manifest.parse({**BASE, **change})
    assert raised.value.field is not None and raised.value.field.startswith(field)


def test_configuration_is_checked_against_the_schema() -> None:
    m = Manifest.parse({**BASE, "config_schema": {
        "type": "object", "properties": {"words": {"type": "integer"}},
        "additionalProperties": False}})
    m.check_config({"words": 5})
    with pytest.raises(ValidationFailed) as raised:
        m.check_config({"words": "five"})
    assert raised.value.field == "config.words"
    with pytest.raises(ValidationFailed) as raised:
        m.check_config([])
    assert raised.value.field == "config"
    assert Scope.COMMENT in m.scopes
