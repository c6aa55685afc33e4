"""The ``learned`` extractor: a small multinomial logistic regression over features of the
mail *and its place in the thread*, trained from the labelled development set
(``tests/fixtures/mail_dev``, rebuilt by ``tickethub mail train``) and shipped as
``learned_model.json`` next to this module. Offline, deterministic, pure Python: no
download, no third-party code at run time.

What it decides: the mail's main operation, one of ``add:question``, ``add:task``,
``answer``, ``complete``, ``status`` and ``ignore``. Everything else is shared with
``rules``: the target is the first issue of the mail's branch (``rules.target_of``), a
``status`` gets its new status from the cues (deferred, cancelled, else open), and the
evidence is the sentence of the author's own text that carries the cue of the chosen
operation (else its first substantive sentence). An operation that needs a target is
never chosen when the mail has none.

The features (``features``) are structure as much as words: first mail of a thread or a
reply, reply depth, whether the sender raised the targeted issue (the requester) or
another issue of the thread, the targeted issue's kind and status, "Re:" in the subject,
how much of the mail is quoted, how long the author's own text is, how many of its
sentences ask, a patch in the mail, links and command lines, and each of the ``rules``
cues — alone and crossed with who writes (requester, someone else, nobody to answer) —
and what ``rules`` decides (``stacked``); the words of the author's own text (list
footers and signatures removed) are a feature group the shipped model leaves out, as
cross-validation found they only fit the training threads.

Measured by leave-one-part-out cross-validation (``tests/fixtures/mail_dev/cv.py``, numbers
in ``docs/mail.md``) it does not beat ``rules`` on most parts, so ``rules`` stays the
default. ``Model.min_prob``/``Model.fallback`` let an unsure model abstain (off in the shipped
model: in cross-validation it only moved the model towards ``rules``).
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

from tickethub.mail.extractors import cues, rules
from tickethub.mail.extractors.base import IssueView, MailContext
from tickethub.mail.extractors.text import clean, first_hit, negated, sentences_of
from tickethub.mail.operations import Operation
from tickethub.mail.parse import ParsedMail
from tickethub.mail.threads import is_reply_subject

MODEL_PATH = Path(__file__).with_name("learned_model.json")
CLASSES = ("add:question", "add:task", "answer", "complete", "status", "ignore")
NEEDS_TARGET = frozenset({"answer", "complete", "status"})

CUES: dict[str, re.Pattern[str]] = {
    "complete": cues.COMPLETE, "same_problem": cues.SAME_PROBLEM, "reopen": cues.REOPEN,
    "failed": cues.FAILED, "undefer": cues.UNDEFER, "defer": cues.DEFER,
    "commit": cues.COMMIT, "cancel": cues.CANCEL, "task_ask": cues.TASK_ASK,
    "question_cue": cues.QUESTION_CUE, "will_try": cues.WILL_TRY, "howto": cues.HOWTO,
    "own_problem": cues.OWN_PROBLEM, "answer_cue": cues.ANSWER_CUE,
    "new_problem": cues.NEW_PROBLEM, "not_answer": cues.NOT_ANSWER,
    "suggest": cues.SUGGEST, "clarify": cues.CLARIFY, "announce": cues.ANNOUNCE,
}
_WORD = re.compile(r"[a-z][a-z']{1,20}")
_PATCH = re.compile(r"^(\+\+\+ |--- \S|@@ |diff -|Index: )", re.MULTILINE)
_URL = re.compile(r"https?://|www\.")
_COMMAND = re.compile(r"^\s*[#$%] \S", re.MULTILINE)
_THANKS = re.compile(r"\b(thanks|thank you|thx|cheers)\b")
_WORKED = re.compile(r"\b(works?|worked|working|fixed|solved|sorted)\b")
_DONE = re.compile(r"\b(fixed|committed|checked in|uploaded|released|applied)\b")
WORDS_CHARS = 3000


def _bucket(value: float, edges: tuple[float, ...]) -> str:
    for edge in edges:
        if value <= edge:
            return f"<={edge:g}"
    return f">{edges[-1]:g}"


def features(mail: ParsedMail, context: MailContext, *, words: bool = True,
             stacked: bool = True) -> dict[str, float]:
    """The mail's features (name → value; absent means 0). Deterministic: the same mail
    and context give the same names and values in the same order. ``words``: the words of
    the author's own text too; ``stacked``: what ``rules`` decides, as a feature."""
    text = clean(mail.own_text)
    sentences = sentences_of(text)
    target = rules.target_of(context)
    sender = (mail.from_addr or "").lower()
    if target is None:
        role = "none"
    elif rules.same_person(sender, target.raised_by):
        role = "req"
    else:
        role = "other"
    f: dict[str, float] = {"bias": 1.0, f"role={role}": 1.0}
    if target is not None:
        f[f"tkind={target.kind}"] = 1.0
        f[f"tstatus={target.status}"] = 1.0
        f[f"role+tkind={role}+{target.kind}"] = 1.0
        f[f"role+tstatus={role}+{target.status}"] = 1.0
    own_issue = any(rules.same_person(sender, i.raised_by) for i in context.thread_issues)
    first = not context.is_reply and not context.thread_issues
    structure = {
        "first_in_thread": first, "is_reply": context.is_reply, "new_topic": context.new_topic,
        "subject_re": is_reply_subject(mail.subject),
        "subject_q": mail.subject.rstrip().endswith("?"),
        "sender_raised_in_thread": own_issue, "thread_has_issues": bool(context.thread_issues),
        "automatic": mail.is_automatic, "empty": not sentences,
        "patch": bool(_PATCH.search(mail.text)), "url": bool(_URL.search(text)),
        "command": bool(_COMMAND.search(text)), "html_only": mail.html_only,
        "attachments": bool(mail.attachments),
    }
    f.update({k: 1.0 for k, v in structure.items() if v})
    f[f"depth{_bucket(len(mail.parent_ids), (0, 1, 2, 4))}"] = 1.0
    f[f"issues{_bucket(len(context.thread_issues), (0, 1, 2))}"] = 1.0
    total = len(mail.text.strip()) or 1
    f[f"own_share{_bucket(len(text.strip()) / total, (0.2, 0.5, 0.9))}"] = 1.0
    length = len(text.split())
    f[f"words{_bucket(length, (8, 25, 60, 150, 400))}"] = 1.0
    asks = [s for s in sentences if s.rstrip().endswith("?")]
    f[f"asks{_bucket(len(asks), (0, 1, 2))}"] = 1.0
    if asks and sentences and asks[0] is sentences[0]:
        f["asks_first"] = 1.0
    if sentences and rules.all_thanks(sentences):
        f["thanks_only"] = 1.0
    if sentences and rules.clarifying(sentences):
        f["clarifying"] = 1.0
    lowered = text.lower()
    if _THANKS.search(lowered) and _WORKED.search(lowered):
        f[f"thanks_worked@{role}"] = 1.0
    if _DONE.search(lowered):
        f[f"done_word@{role}"] = 1.0
    for name, pattern in CUES.items():
        hit = first_hit(pattern, sentences) if sentences else None
        if hit is None or (name == "complete" and negated(pattern, hit)):
            continue
        f[f"cue:{name}"] = 1.0
        f[f"cue:{name}@{role}"] = 1.0
        if first:
            f[f"cue:{name}@first"] = 1.0
    if stacked:
        for op in rules.RulesExtractor().extract_now(mail, context):
            f[f"rules={op.op}:{op.kind or op.new_status or ''}"] = 1.0
    if words:
        for word in sorted(set(_WORD.findall(lowered[:WORDS_CHARS]))):
            f[f"w:{word}"] = 1.0
    return f


class Model:
    """Weights per class and feature (``{"classes": [...], "weights": {feature: [w per
    class]}}``); ``probabilities`` is the softmax of the summed weights."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.classes: tuple[str, ...] = tuple(data["classes"])
        self.weights: dict[str, list[float]] = data["weights"]
        settings = data.get("settings", {})
        self.words = bool(settings.get("words", True))
        self.stacked = bool(settings.get("stacked", True))
        self.min_prob = float(settings.get("min_prob", 0.0))
        """Abstention: when the most probable class is less probable than this, the model
        does not decide: the ``rules`` extractor does (``fallback="rules"``), or the mail is
        ignored (``fallback="ignore"``, only for a class other than ignore)."""
        self.fallback = str(settings.get("fallback", "ignore"))

    def features(self, mail: ParsedMail, context: MailContext) -> dict[str, float]:
        """The features this model was trained on."""
        return features(mail, context, words=self.words, stacked=self.stacked)

    def scores(self, feats: dict[str, float]) -> list[float]:
        totals = [0.0] * len(self.classes)
        for name, value in feats.items():
            row = self.weights.get(name)
            if row is not None:
                for i, w in enumerate(row):
                    totals[i] += w * value
        return totals

    def probabilities(self, feats: dict[str, float]) -> list[float]:
        totals = self.scores(feats)
        top = max(totals)
        exps = [math.exp(t - top) for t in totals]
        norm = sum(exps)
        return [e / norm for e in exps]


@cache
def shipped_model() -> Model:
    """The model shipped in the package (read once)."""
    return Model(json.loads(MODEL_PATH.read_text(encoding="utf-8")))


class LearnedExtractor:
    """See the module docstring. Stateless once built; safe to share between threads."""

    name = "learned"

    def __init__(self, model: Model | None = None) -> None:
        self.model = model or shipped_model()

    async def extract(self, mail: ParsedMail, context: MailContext) -> list[Operation]:
        return self.extract_now(mail, context)

    def decide(self, mail: ParsedMail, context: MailContext) -> str:
        """The most probable class the mail may have (one needing a target only when
        it has one)."""
        target = rules.target_of(context)
        probs = self.model.probabilities(self.model.features(mail, context))
        allowed = [(p, c) for p, c in zip(probs, self.model.classes, strict=True)
                   if target is not None or c not in NEEDS_TARGET]
        best, choice = max(allowed, key=lambda pair: pair[0])
        if best < self.model.min_prob:
            if self.model.fallback == "rules":
                return "rules"
            if choice != "ignore":
                return "ignore"
        return choice

    def extract_now(self, mail: ParsedMail, context: MailContext) -> list[Operation]:
        sentences = sentences_of(clean(mail.own_text))
        if mail.is_automatic or not sentences:
            return [Operation(op="ignore")]
        choice = self.decide(mail, context)
        if choice == "rules":
            return rules.RulesExtractor().extract_now(mail, context)
        target = rules.target_of(context)
        if choice.startswith("add:"):
            kind = choice[4:]
            evidence = _evidence(choice, sentences)
            if context.is_reply and not context.new_topic and context.thread_issues:
                return [rules.add_reply(kind, evidence)]
            return [rules.add(kind, mail, evidence)]
        if choice == "ignore" or target is None:
            return [Operation(op="ignore")]
        evidence = _evidence(choice, sentences)
        if choice == "status":
            return [Operation(op="status", target=target.id, evidence=evidence,
                              new_status=_new_status(sentences, target))]
        return [Operation(op=choice, target=target.id, evidence=evidence)]


_EVIDENCE: dict[str, tuple[re.Pattern[str], ...]] = {
    "add:question": (cues.HOWTO, cues.QUESTION_CUE, cues.OWN_PROBLEM),
    "add:task": (cues.TASK_ASK, cues.HOWTO, cues.QUESTION_CUE),
    "answer": (cues.SUGGEST, cues.ANSWER_CUE),
    "complete": (cues.COMPLETE, cues.SAME_PROBLEM),
    "status": (cues.DEFER, cues.CANCEL, cues.COMMIT, cues.REOPEN, cues.FAILED,
               cues.UNDEFER),
}


def _evidence(choice: str, sentences: list[str]) -> str:
    """The sentence that carries the chosen operation's cue (a question for an add),
    else the first sentence of four or more words, else the first one."""
    if choice.startswith("add:"):
        asked = next((s for s in sentences if s.rstrip().endswith("?") and
                      len(s.split()) >= 3), None)
        if asked is not None:
            return asked
    for pattern in _EVIDENCE.get(choice, ()):
        if hit := first_hit(pattern, sentences):
            return hit
    return next((s for s in sentences if len(s.split()) >= 4), sentences[0])


def _new_status(sentences: list[str], target: IssueView) -> str:
    if first_hit(cues.CANCEL, sentences):
        return "cancelled"
    if first_hit(cues.DEFER, sentences) and not (
            target.status == "deferred" and first_hit(cues.UNDEFER, sentences)):
        return "deferred"
    return "open"
