"""What changed in an approval's proposal: the diff and the one line people read."""

from __future__ import annotations

from tickethub.domain.proposal_diff import Change, describe, diff, outcome, show, summary


def test_the_same_value_has_no_changes() -> None:
    proposal = {"tool": "scale", "arguments": {"replicas": 4, "zones": ["a", "b"]}}
    assert diff(proposal, {"arguments": {"zones": ["a", "b"], "replicas": 4.0},
                           "tool": "scale"}) == []
    assert outcome(proposal, proposal) == "approved as proposed"


def test_nested_changes_name_their_path_in_the_original_order() -> None:
    before = {"tool": "scale", "arguments": {"replicas": 4, "region": "eu", "dry_run": True}}
    after = {"tool": "scale", "arguments": {"region": "us", "replicas": 6, "notify": "ops"}}
    assert diff(before, after) == [
        Change(("arguments", "replicas"), "changed", 4, 6),
        Change(("arguments", "region"), "changed", "eu", "us"),
        Change(("arguments", "dry_run"), "removed", True, None),
        Change(("arguments", "notify"), "added", None, "ops"),
    ]
    assert summary(diff(before, after)) == (
        "arguments.replicas 4 → 6; arguments.region eu → us; arguments.dry_run removed; "
        "arguments.notify added: ops")


def test_one_line_outcome() -> None:
    assert outcome({"replicas": 4}, {"replicas": 6}) == "approved with changes: replicas 4 → 6"


def test_booleans_are_not_numbers_and_lists_compare_whole() -> None:
    assert diff({"a": 1}, {"a": True}) == [Change(("a",), "changed", 1, True)]
    assert diff({"a": [1, 2]}, {"a": [1, 3]}) == [Change(("a",), "changed", [1, 2], [1, 3])]
    assert diff({"a": None}, {"a": 0}) == [Change(("a",), "changed", None, 0)]
    assert describe(Change(("a",), "changed", [1, 2], [1, 3])) == "a [1, 2] → [1, 3]"


def test_a_whole_value_that_is_not_an_object() -> None:
    assert diff("make deploy", "make deploy-staging") == [
        Change((), "changed", "make deploy", "make deploy-staging")]
    assert summary(diff("x", "y")) == "value x → y"
    assert diff({"a": 1}, [1]) == [Change((), "changed", {"a": 1}, [1])]


def test_long_values_and_many_changes_are_cut() -> None:
    assert show("x" * 100) == "x" * 39 + "…"
    assert show({"k": "v"}) == '{"k": "v"}'
    many = diff({str(n): n for n in range(8)}, {str(n): n + 1 for n in range(8)})
    assert summary(many, limit=2) == "0 0 → 1; 1 1 → 2; and 6 more"
