"""The approved version as rows marked against the proposal, and what counts as a change."""

from __future__ import annotations

from tickethub.web.review import Row, edited_value, version_rows


def test_rows_mark_changed_added_and_removed_values() -> None:
    proposal = {"tool": "scale", "arguments": {"replicas": 4, "region": "eu", "dry": True}}
    decided = {"tool": "scale", "arguments": {"replicas": 6, "region": "eu", "note": "peak"}}
    assert version_rows(proposal, decided) == [
        Row("tool", "scale", "same"),
        Row("arguments.replicas", "6", "changed", "4"),
        Row("arguments.region", "eu", "same"),
        Row("arguments.note", "peak", "added"),
        Row("arguments.dry", "", "removed", "true"),
    ]


def test_a_value_that_became_an_object_marks_its_leaves() -> None:
    assert version_rows({"to": "bob"}, {"to": {"name": "bob"}}) == [
        Row("to.name", "bob", "changed")]
    assert version_rows("x", "y") == [Row("value", "y", "changed", "x")]


def test_untouched_fields_missing_from_the_proposal_are_dropped() -> None:
    proposal = {"replicas": 4, "limits": {"cpu": "1"}}
    baseline = {"replicas": 4, "notify": False, "limits": {"cpu": "1", "burst": False}}
    data = {"replicas": 5, "notify": False, "zones": ["a"],
            "limits": {"cpu": "1", "burst": False}}
    assert edited_value(proposal, baseline, data) == {
        "replicas": 5, "zones": ["a"], "limits": {"cpu": "1"}}
    assert edited_value(proposal, baseline, data | {"notify": True})["notify"] is True
    assert edited_value(None, None, {"a": 1}) == {"a": 1}
