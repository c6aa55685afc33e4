"""Training the ``learned`` extractor (``mail/extractors/learned.py``) from labelled
mailboxes, deterministically: the same labels give the same model file, byte for byte.

1. **Collect** (``collect``): each labelled mailbox is ingested into a scratch hub with an
   *oracle* extractor that applies the gold operations, so every mail is seen in the
   context (thread issues, branch, statuses, requesters) it would have if every earlier
   mail had been decided right, and its features are recorded with its gold main
   operation. The same ``features`` function runs at inference.
2. **Train** (``train``): multinomial logistic regression, L2-regularised, fitted by
   AdaGrad in the examples' fixed order (no randomness), over the features seen in at
   least ``min_count`` training mails.
3. **Write** (``dump``): the weights rounded to 4 decimals, features sorted, one per line.

``tickethub mail train`` runs all three over the development set;
``tests/fixtures/mail_dev/cv.py`` uses the same functions for leave-one-part-out
cross-validation.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tickethub.mail.extractors import rules
from tickethub.mail.extractors.base import MailContext
from tickethub.mail.extractors.learned import CLASSES, features
from tickethub.mail.operations import Operation
from tickethub.mail.parse import ParsedMail

if TYPE_CHECKING:
    from tickethub.mail.sources import RawMail
    from tickethub.services.host import Host


def gold_class(label: dict[str, Any]) -> str:
    """The class of a label: ``add:<kind>``, or its op (all statuses are ``status``)."""
    if label["op"] == "add":
        return f"add:{label.get('kind') or 'question'}"
    return str(label["op"])


@dataclass(frozen=True, slots=True)
class Example:
    message_id: str
    thread: str
    label: str
    features: dict[str, float]
    target_ok: bool | None = None
    """For a gold answer/complete/status: whether the shared targeting (the branch's
    first issue) names the gold target; ``None`` for other labels."""


@dataclass
class OracleExtractor:
    """Applies the gold labels and records each mail's features in its gold context."""

    labels: dict[str, list[dict[str, Any]]]
    examples: list[Example] = field(default_factory=list)
    name: str = "oracle"

    async def extract(self, mail: ParsedMail, context: MailContext) -> list[Operation]:
        gold = self.labels.get(mail.message_id)
        if not gold:
            return [Operation(op="ignore")]
        by_source = {i.source_message_id: i for i in context.thread_issues}
        guess = rules.target_of(context)
        main = gold[0]
        target_ok = None
        if main["op"] in ("answer", "complete", "status"):
            wanted = by_source.get(main.get("target"))
            target_ok = guess is not None and wanted is not None and guess.id == wanted.id
        self.examples.append(Example(mail.message_id, str(main.get("thread") or ""),
                                     gold_class(main), features(mail, context), target_ok))
        ops: list[Operation] = []
        for label in gold:
            if label["op"] == "add":
                ops.append(Operation(op="add", kind=label.get("kind") or "question",
                                     title=(label.get("title") or label["evidence"])[:300],
                                     evidence=label["evidence"]))
            elif label["op"] in ("answer", "complete", "status"):
                issue = by_source.get(label.get("target"))
                if issue is not None:
                    ops.append(Operation(op=label["op"], target=issue.id,
                                         evidence=label["evidence"],
                                         new_status=label.get("new_status")
                                         if label["op"] == "status" else None))
        return ops or [Operation(op="ignore")]


def labels_by_mail(labels: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for label in labels:
        out.setdefault(label["message_id"], []).append(label)
    return out


async def collect(runtime: Host, labels: list[dict[str, Any]],
                  mails: Iterable[RawMail], mailbox: str = "train") -> list[Example]:
    """The examples of one labelled mailbox, ingested into ``runtime``'s (scratch) hub."""
    from tickethub.mail.build import ingest, make_pipeline

    oracle = OracleExtractor(labels_by_mail(labels))
    await ingest(make_pipeline(runtime, oracle), mailbox, mails)
    return oracle.examples


def train(examples: Sequence[Example], *, l2: float = 0.05, epochs: int = 30,
          rate: float = 0.5, min_count: int = 2, words: bool = False,
          stacked: bool = True) -> dict[str, Any]:
    """Fit the model (see the module docstring); returns its data for ``dump``.
    ``words`` and ``stacked`` choose feature groups (``learned.features``): examples are
    collected with all of them, and the groups left out are dropped here. The defaults
    are what cross-validation chose: without words (on a few hundred mails they
    only fit the training threads), with the ``rules`` decision stacked."""
    examples = [_only(e, words=words, stacked=stacked) for e in examples]
    counts: Counter[str] = Counter()
    for example in examples:
        counts.update(example.features)
    vocab = {name for name, n in counts.items() if n >= min_count} | {"bias"}
    k = len(CLASSES)
    index = {c: i for i, c in enumerate(CLASSES)}
    weights: dict[str, list[float]] = {name: [0.0] * k for name in sorted(vocab)}
    squares: dict[str, list[float]] = {name: [1e-8] * k for name in weights}
    rows = [([(n, v) for n, v in e.features.items() if n in vocab], index[e.label])
            for e in examples]
    for _ in range(epochs):
        for row, gold in rows:
            totals = [0.0] * k
            for name, value in row:
                w = weights[name]
                for c in range(k):
                    totals[c] += w[c] * value
            top = max(totals)
            exps = [math.exp(t - top) for t in totals]
            norm = sum(exps)
            errors = [e / norm for e in exps]
            errors[gold] -= 1.0
            for name, value in row:
                w, g2 = weights[name], squares[name]
                for c in range(k):
                    grad = errors[c] * value + l2 * w[c]
                    g2[c] += grad * grad
                    w[c] -= rate * grad / math.sqrt(g2[c])
    kept = {name: [round(x, 4) for x in w] for name, w in weights.items()
            if any(abs(x) >= 5e-4 for x in w)}
    return {"classes": list(CLASSES), "weights": kept,
            "trained_on": {"mails": len(examples),
                           "labels": dict(sorted(Counter(e.label for e in examples).items()))},
            "settings": {"l2": l2, "epochs": epochs, "rate": rate, "min_count": min_count,
                         "words": words, "stacked": stacked}}


def _only(example: Example, *, words: bool, stacked: bool) -> Example:
    if words and stacked:
        return example
    kept = {name: value for name, value in example.features.items()
            if (words or not name.startswith("w:")) and
            (stacked or not name.startswith("rules="))}
    return Example(example.message_id, example.thread, example.label, kept,
                   example.target_ok)


def dump(model: dict[str, Any]) -> str:
    """The model as text: header fields, then one feature per line, sorted."""
    lines = ["{", f'"classes": {json.dumps(model["classes"])},',
             f'"settings": {json.dumps(model["settings"], sort_keys=True)},',
             f'"trained_on": {json.dumps(model["trained_on"], sort_keys=True)},',
             '"weights": {']
    items = sorted(model["weights"].items())
    for n, (name, row) in enumerate(items):
        comma = "," if n < len(items) - 1 else ""
        lines.append(f"{json.dumps(name)}: {json.dumps(row)}{comma}")
    lines += ["}", "}"]
    return "\n".join(lines) + "\n"


TRAIN_PARTS = ("tune", "test", "test2", "test3", "test4", "test5", "test6", "test7")
"""The parts of ``tests/fixtures/mail_dev`` the shipped model is trained on. Named, not
globbed: a part labelled later to measure the model on stays out of its training."""


def dev_parts(folder: Path, names: Sequence[str] = TRAIN_PARTS) -> list[tuple[Path, Path]]:
    """(labels, mbox) of the named parts of a development folder."""
    return [(folder / f"{name}.labels.json", folder / f"{name}.mbox") for name in names]
