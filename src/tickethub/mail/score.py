"""Score a tree built from a labelled mailbox against its labels (rules in
``shared/fixtures/email/LABELING.md``, section "How the product is scored").

* op accuracy: per labelled email, the ops the product recorded (history entries with its
  Message-ID, plus ``add`` for issues raised by it; none means ``ignore``) are non-empty
  and contained in the gold ops;
* target accuracy: per gold answer/complete/status, the product has the same op for that
  email on the issue whose ``source_message_id`` is the gold target;
* closing precision/recall (answer, complete, status to answered/done/cancelled), per
  email and per (email, target);
* duplicate rate: product adds on emails whose labels have no add, over all product adds.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

CLOSING = frozenset({"answered", "done", "cancelled"})


def _closing(op: str, new_status: str | None) -> bool:
    return op in ("answer", "complete") or (op == "status" and new_status in CLOSING)


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def score(tree: dict[str, Any], labels: list[dict[str, Any]]) -> dict[str, Any]:
    gold_ops: dict[str, set[str]] = defaultdict(set)
    gold_targets: set[tuple[str, str, str]] = set()
    gold_close_msgs: set[str] = set()
    gold_close_pairs: set[tuple[str, str]] = set()
    for label in labels:
        mid, op = label["message_id"], label["op"]
        gold_ops[mid].add(op)
        if op in ("answer", "complete", "status") and label.get("target"):
            gold_targets.add((mid, op, label["target"]))
            if _closing(op, label.get("new_status")):
                gold_close_msgs.add(mid)
                gold_close_pairs.add((mid, label["target"]))

    product_ops: dict[str, set[str]] = defaultdict(set)
    product_targets: set[tuple[str, str, str]] = set()
    close_msgs: set[str] = set()
    close_pairs: set[tuple[str, str]] = set()
    adds: list[str] = []
    for issue in tree["issues"]:
        source = issue.get("source_message_id")
        if source:
            product_ops[source].add("add")
            adds.append(source)
        for entry in issue.get("history", []):
            mid, op = entry.get("message_id"), entry.get("op")
            if not mid or op == "add":
                continue
            product_ops[mid].add(op)
            if source:
                product_targets.add((mid, op, source))
            if _closing(op, entry.get("new_status")):
                close_msgs.add(mid)
                if source:
                    close_pairs.add((mid, source))

    correct = sum(1 for mid, gold in gold_ops.items()
                  if (product_ops.get(mid) or {"ignore"}) <= gold)
    labelled = set(gold_ops)
    close_msgs &= labelled
    close_pairs = {p for p in close_pairs if p[0] in labelled}
    dup = sum(1 for mid in adds if mid in labelled and "add" not in gold_ops[mid])
    adds_labelled = [mid for mid in adds if mid in labelled]
    return {
        "emails": len(gold_ops),
        "op_accuracy": _ratio(correct, len(gold_ops)),
        "target_accuracy": _ratio(len(gold_targets & product_targets), len(gold_targets)),
        "closing_precision": _ratio(len(close_msgs & gold_close_msgs), len(close_msgs)),
        "closing_recall": _ratio(len(close_msgs & gold_close_msgs), len(gold_close_msgs)),
        "closing_pair_precision": _ratio(len(close_pairs & gold_close_pairs), len(close_pairs)),
        "closing_pair_recall": _ratio(len(close_pairs & gold_close_pairs),
                                      len(gold_close_pairs)),
        "duplicate_rate": _ratio(dup, len(adds_labelled)),
        "product_adds": len(adds_labelled),
        "wrong": sorted(mid for mid, gold in gold_ops.items()
                        if not (product_ops.get(mid) or {"ignore"}) <= gold),
    }
