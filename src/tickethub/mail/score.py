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

Besides the numbers: ``confusion`` (gold main op → what the product did → count; the
main op is an email's first label, the product's ops are joined with ``+``, none is
``ignore``) and ``worst`` (the emails with the most problems, up to ten, each with its
gold and product operations and what is wrong).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

CLOSING = frozenset({"answered", "done", "cancelled"})


def _closing(op: str, new_status: str | None) -> bool:
    return op in ("answer", "complete") or (op == "status" and new_status in CLOSING)


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def score(tree: dict[str, Any], labels: list[dict[str, Any]],
          worst: int = 10) -> dict[str, Any]:
    gold_ops: dict[str, set[str]] = defaultdict(set)
    gold_main: dict[str, dict[str, Any]] = {}
    gold_targets: set[tuple[str, str, str]] = set()
    gold_close_msgs: set[str] = set()
    gold_close_pairs: set[tuple[str, str]] = set()
    for label in labels:
        mid, op = label["message_id"], label["op"]
        gold_ops[mid].add(op)
        gold_main.setdefault(mid, label)
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
    done: dict[str, list[str]] = defaultdict(list)
    for issue in tree["issues"]:
        source = issue.get("source_message_id")
        if source:
            product_ops[source].add("add")
            adds.append(source)
            done[source].append("add")
        for entry in issue.get("history", []):
            mid, op = entry.get("message_id"), entry.get("op")
            if not mid or op == "add":
                continue
            product_ops[mid].add(op)
            status = entry.get("new_status")
            done[mid].append(f"{op}{'→' + status if op == 'status' else ''} on {source}")
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
    confusion: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for mid, label in gold_main.items():
        got = "+".join(sorted(product_ops.get(mid) or {"ignore"}))
        confusion[label["op"]][got] += 1
    problems: dict[str, list[str]] = defaultdict(list)
    for mid, wanted in gold_ops.items():
        recorded = product_ops.get(mid) or {"ignore"}
        if not recorded <= wanted:
            problems[mid].append(f"op: gold {'/'.join(sorted(wanted))}, "
                                 f"product {'+'.join(sorted(recorded))}")
    for mid, op, target in sorted(gold_targets - product_targets):
        if op in product_ops.get(mid, set()):
            problems[mid].append(f"target: {op} should be on {target}")
    for mid in sorted(close_msgs - gold_close_msgs):
        problems[mid].append("closes an issue it should not")
    for mid in sorted(gold_close_msgs - close_msgs):
        problems[mid].append("misses a closing")
    for mid in adds:
        if mid in labelled and "add" not in gold_ops[mid]:
            problems[mid].append("duplicate issue")
    order = {mid: n for n, mid in enumerate(gold_main)}
    ranked = sorted(problems, key=lambda mid: (-len(problems[mid]), order[mid]))[:worst]
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
        "confusion": {gold: dict(sorted(row.items())) for gold, row in sorted(confusion.items())},
        "worst": [{"message_id": mid,
                   "gold": [_describe(x) for x in labels if x["message_id"] == mid],
                   "product": done.get(mid) or ["ignore"],
                   "problems": problems[mid],
                   "evidence": str(gold_main[mid].get("evidence") or "")[:120]}
                  for mid in ranked],
    }


def _describe(label: dict[str, Any]) -> str:
    op = label["op"]
    if op == "add":
        return f"add {label.get('kind') or ''}".strip()
    if op == "ignore":
        return "ignore"
    status = f"→{label.get('new_status')}" if op == "status" else ""
    return f"{op}{status} on {label.get('target')}"


def score_text(result: dict[str, Any]) -> str:
    """The result for a person: the metrics, the confusion table, the worst emails."""
    def num(key: str) -> str:
        value = result.get(key)
        return "n/a" if value is None else f"{value:.3f}"

    lines = [
        f"emails {result['emails']}, product adds {result['product_adds']}",
        f"op accuracy        {num('op_accuracy')}",
        f"target accuracy    {num('target_accuracy')}",
        f"closing P / R      {num('closing_precision')} / {num('closing_recall')}"
        f"   (per email+target {num('closing_pair_precision')} / "
        f"{num('closing_pair_recall')})",
        f"duplicate rate     {num('duplicate_rate')}",
        "",
        "confusion (rows: gold main op; columns: what the product did)",
    ]
    columns = sorted({c for row in result["confusion"].values() for c in row})
    width = max([8, *(len(c) + 1 for c in columns)])
    lines.append("gold".ljust(10) + "".join(c.rjust(width) for c in columns))
    for gold, row in result["confusion"].items():
        lines.append(gold.ljust(10) + "".join(str(row.get(c, "")).rjust(width)
                                              for c in columns))
    if result["worst"]:
        lines += ["", f"worst {len(result['worst'])} emails"]
    for item in result["worst"]:
        lines.append(f"- {item['message_id']}")
        lines.append(f"    gold:    {'; '.join(item['gold'])}")
        lines.append(f"    product: {'; '.join(item['product'])}")
        lines.append(f"    wrong:   {'; '.join(item['problems'])}")
        if item["evidence"]:
            lines.append(f"    quote:   {item['evidence']}")
    return "\n".join(lines) + "\n"
