"""The ``rules`` extractor: offline, deterministic, from headers, threading and
plain-language cues (English). It decides in the order of the labelling rules:
complete, answer, status, add, ignore — and may add a second operation when a mail both
closes one issue and raises a new one.

Who writes matters: the *requester* (the address that raised the targeted issue)
completes, reopens and un-defers; others answer questions and defer, commit to or finish
tasks. A mail that is text from outside is only ever matched, never obeyed.
"""

from __future__ import annotations

import re

from tickethub.mail.extractors.base import IssueView, MailContext
from tickethub.mail.extractors.cues import (
    ANNOUNCE,
    ANSWER_CUE,
    ASK_NO_MARK,
    BUG_REPORT,
    CANCEL,
    CLARIFY,
    COMMIT,
    COMPLETE,
    DEFER,
    FAILED,
    HOWTO,
    NEW_PROBLEM,
    NOT_ANSWER,
    OWN_PROBLEM,
    QUESTION_CUE,
    REAL_QUESTION,
    REOPEN,
    RHETORICAL,
    SAME_PROBLEM,
    SELF,
    SUGGEST,
    TASK_ASK,
    THANKS_ONLY,
    UNDEFER,
    WILL_TRY,
)
from tickethub.mail.extractors.text import (
    QUOTE_LINE,
    clean,
    first_hit,
    hits,
    negated,
    sentences_of,
)
from tickethub.mail.operations import Operation
from tickethub.mail.parse import ParsedMail


class RulesExtractor:
    """See the module docstring. Stateless and cheap: safe to share between threads."""

    name = "rules"

    async def extract(self, mail: ParsedMail, context: MailContext) -> list[Operation]:
        return self.extract_now(mail, context)

    def extract_now(self, mail: ParsedMail, context: MailContext) -> list[Operation]:
        text = clean(mail.own_text)
        sentences = sentences_of(text)
        if mail.is_automatic or not sentences:
            return [Operation(op="ignore")]
        target = _target(context)
        if target is None or context.new_topic:
            return self._first(mail, sentences, context)
        is_requester = _same_person(mail.from_addr, target.raised_by)
        ops = self._follow_up(target, is_requester, sentences)
        if not is_requester and not first_hit(ANSWER_CUE, sentences) and \
                not first_hit(SUGGEST, sentences) and not _clarifying(sentences) and \
                (ask := _howto_question(sentences) or first_hit(ASK_NO_MARK, sentences)) \
                and _for_oneself(ask) and all(o.op in ("ignore", "answer") for o in ops):
            # someone else's new question in the thread, with nothing in it that answers
            return [_add_reply("question", ask)]
        closing = [o for o in ops if o.op != "ignore"]
        new = self._new_issue_in_reply(target, is_requester, sentences, closing)
        if new is not None:
            return [new, *closing] if not closing or new.kind == "task" else [*closing, new]
        return ops

    # -- first mail of a thread (or of a new topic in one) --------------------------------

    def _first(self, mail: ParsedMail, sentences: list[str],
               context: MailContext) -> list[Operation]:
        task = first_hit(TASK_ASK, sentences)
        subject = mail.subject.lower().rstrip()
        if (ANNOUNCE.search(subject) and not subject.endswith("?")) or (
                first_hit(ANNOUNCE, sentences[:3]) and not _howto_question(sentences)):
            return [Operation(op="ignore")]  # announcements are not asks, even "please upgrade"
        if context.is_reply and not context.new_topic:
            # A reply in a thread that raised nothing: only a clear new ask is an issue.
            # Its parent is missing: a question put back to the author it replies to
            # ("can you send more details?", "how do you add features?") is talk.
            if (task := task or first_hit(BUG_REPORT, sentences)) is not None and \
                    not first_hit(CLARIFY, [task]):
                return [_add("task", mail, task)]
            question = _last_question(sentences) or first_hit(ASK_NO_MARK, sentences)
            if question is not None and _for_oneself(question) and \
                    (not _quotes(mail.text) or any(
                        _FIRST_PERSON.search(q.lower()) for q in sentences
                        if q.rstrip().endswith("?"))) and \
                    not first_hit(CLARIFY, [question]) and \
                    (first_hit(OWN_PROBLEM, sentences) or first_hit(HOWTO, [question])):
                return [_add("question", mail, question)]
            return [Operation(op="ignore")]
        if task is not None:
            return [_add("task", mail, task)]
        question = next((s for s in sentences if s.rstrip().endswith("?") and
                         len(s.split()) >= 3 and REAL_QUESTION.search(s.lower()) and
                         not RHETORICAL.search(s.lower())), None) or \
            next((s for s in hits(QUESTION_CUE, sentences)
                  if not RHETORICAL.search(s.lower())), None)
        if question is None and mail.subject.rstrip().endswith("?"):
            question = next((s for s in sentences if len(s.split()) >= 4), None)
        if question is not None and not _shared_link_remark(sentences, question):
            return [_add("question", mail, question)]
        if (bug := first_hit(BUG_REPORT, sentences)) is not None:
            return [_add("task", mail, bug)]
        return [Operation(op="ignore")]

    # -- replies ---------------------------------------------------------------------------

    def _follow_up(self, target: IssueView, is_requester: bool,
                   sentences: list[str]) -> list[Operation]:
        done = next((s for s in hits(COMPLETE, sentences) if not negated(COMPLETE, s)), None)
        if done is not None and (is_requester or target.kind == "task" or
                                 first_hit(SAME_PROBLEM, sentences)):
            # the requester confirms; on a task anyone may report it done; on a question
            # a third party confirms the fix solved the same problem for them
            return [Operation(op="complete", target=target.id, evidence=done)]
        if is_requester:
            return self._requester(target, sentences)
        return self._helper(target, sentences)

    def _requester(self, target: IssueView, sentences: list[str]) -> list[Operation]:
        if target.status == "deferred" and (hit := first_hit(UNDEFER, sentences)):
            return [Operation(op="status", target=target.id, new_status="open", evidence=hit)]
        if change := _cancelled_or_committed(target, sentences):
            return [change]
        if target.status in ("answered", "done") and (hit := first_hit(REOPEN, sentences)):
            return [Operation(op="status", target=target.id, new_status="open", evidence=hit)]
        if target.kind == "question" and target.status in ("answered", "done") \
                and (ask := _last_question(sentences)) is not None and \
                not first_hit(WILL_TRY, sentences) and not first_hit(NEW_PROBLEM, sentences):
            # the requester asks again, under the same subject, after an answer: the same
            # problem is still open (unless he reports a new one: "now I get ...")
            return [Operation(op="status", target=target.id, new_status="open", evidence=ask)]
        if target.status in ("answered", "done") and not _has_question(sentences) and \
                not first_hit(WILL_TRY, sentences):  # "thanks, I'll try that" changes nothing
            hit = first_hit(FAILED, sentences)
            if target.kind == "question" and len(" ".join(sentences)) > 200:
                hit = sentences[0]  # a restatement of the question after an answer
            if hit is not None:
                return [Operation(op="status", target=target.id, new_status="open",
                                  evidence=hit)]
        return [Operation(op="ignore")]

    def _helper(self, target: IssueView, sentences: list[str]) -> list[Operation]:
        if change := _cancelled_or_committed(target, sentences):
            return [change]
        if target.kind == "task":
            return [Operation(op="ignore")]
        if hit := first_hit(DEFER, sentences):
            return [Operation(op="status", target=target.id, new_status="deferred",
                              evidence=hit)]
        if _all_thanks(sentences) or (_clarifying(sentences) and
                                      not first_hit(SUGGEST, sentences)):
            return [Operation(op="ignore")]
        if hit := first_hit(SUGGEST, sentences):
            return [Operation(op="answer", target=target.id, evidence=hit)]
        if hit := first_hit(ANSWER_CUE, sentences):
            return [Operation(op="answer", target=target.id, evidence=hit)]
        substantive = [s for s in sentences if len(s.split()) >= 4]
        if _has_question(sentences) and (first_hit(CLARIFY, sentences) or
                                         all(s.rstrip().endswith("?") for s in substantive)):
            return [Operation(op="ignore")]
        if len(substantive) <= 2 and first_hit(NOT_ANSWER, sentences):
            return [Operation(op="ignore")]  # "me too", "please post a link!"
        if substantive:
            return [Operation(op="answer", target=target.id, evidence=substantive[0])]
        return [Operation(op="ignore")]

    def _new_issue_in_reply(self, target: IssueView, is_requester: bool, sentences: list[str],
                            closing: list[Operation]) -> Operation | None:
        """A reply that raises something new: a fresh question after a fix, or a request."""
        task = first_hit(TASK_ASK, sentences)
        if task is not None and not is_requester and closing and closing[0].op == "complete":
            return _add_reply("task", task)
        completed = bool(closing) and closing[0].op == "complete"
        if is_requester and completed and (new := first_hit(NEW_PROBLEM, sentences)):
            return _add_reply("task" if task is not None else "question", task or new)
        if is_requester and target.kind == "task" and (ask := _howto_question(sentences)):
            return _add_reply("question", ask)  # a question of its own, on a task
        question = _last_question(sentences)
        if question is None or first_hit(CLARIFY, [question]):
            return None
        if is_requester and target.status in ("answered", "done") and not (
                closing and closing[0].op == "status"):
            return _add_reply("question", question)
        if is_requester and completed and (ask := _howto_question(sentences)):
            return _add_reply("question", ask)
        if not is_requester and closing and closing[0].op == "complete" and \
                first_hit(OWN_PROBLEM, sentences):
            return _add_reply("question", question)
        return None


def _target(context: MailContext) -> IssueView | None:
    for issue_id in context.chain:
        issue = context.issue(issue_id)
        if issue is not None:
            return issue
    open_ones = [i for i in context.thread_issues if i.status in ("open", "in_progress",
                                                                   "deferred", "answered")]
    return open_ones[-1] if open_ones else None


def _same_person(a: str, b: str) -> bool:
    return bool(a) and a.lower() == (b or "").lower()


def _cancelled_or_committed(target: IssueView, sentences: list[str]) -> Operation | None:
    """What a requester or a helper says of ``target`` either way: it is cancelled; or,
    for a task, whoever took it on defers it or commits to it (status open)."""
    if hit := first_hit(CANCEL, sentences):
        return Operation(op="status", target=target.id, new_status="cancelled", evidence=hit)
    if target.kind == "task":
        if hit := first_hit(DEFER, sentences):
            return Operation(op="status", target=target.id, new_status="deferred",
                             evidence=hit)
        if hit := first_hit(COMMIT, sentences):
            return Operation(op="status", target=target.id, new_status="open", evidence=hit)
    return None


def _for_oneself(question: str) -> bool:
    """"Is there a way to ...?", "how can I ...?" — not "how do you feed procmail?"."""
    lowered = question.lower()
    return bool(SELF.search(lowered)) or not _YOU.search(lowered)


_YOU = re.compile(r"\byou(r)?\b")


def _clarifying(sentences: list[str]) -> bool:
    """A helper's reply that mostly asks the requester things back ("Is this with one DVD
    or several? Is this OSS or ALSA?"): clarifying questions, not an answer."""
    substantive = [s for s in sentences if len(s.split()) >= 3]
    asks = [s for s in substantive if s.rstrip().endswith("?")]
    return len(asks) >= 2 and 2 * len(asks) >= len(substantive)


def _howto_question(sentences: list[str]) -> str | None:
    """The first question that asks for help ("How can I keep them out?", "is there a way
    to ...?"), not a clarifying one."""
    for sentence in sentences:
        if sentence.rstrip().endswith("?") and len(sentence.split()) >= 3 and \
                first_hit(HOWTO, [sentence]) and not first_hit(CLARIFY, [sentence]) and \
                not RHETORICAL.search(sentence.lower()):
            return sentence
    return None


def _shared_link_remark(sentences: list[str], question: str) -> bool:
    """A mail that passes on a link (an article, a page) with a remark phrased as a
    question ("Related to the MS acquisition?", "isn't your life enriched?"): the question
    asks nothing for the writer (no "I", "my", "anyone"), so it is talk, not an ask."""
    if not _URL.search("\n".join(sentences)) or first_hit(OWN_PROBLEM, sentences) or \
            first_hit(HOWTO, sentences):
        return False
    return not any(SELF.search(s.lower()) for s in sentences if s.rstrip().endswith("?"))


_URL = re.compile(r"https?://|<?www\.\w")


def _quotes(text: str) -> bool:
    """The mail replies to quoted text (two or more quoted lines, or an attribution)."""
    found = 0
    for line in text.splitlines()[:400]:
        if QUOTE_LINE.match(line) or line.lstrip().startswith(">"):
            found += 1
            if found >= 2:
                return True
    return False


_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|my|me|any(one|body)( else)?)\b")


def _has_question(sentences: list[str]) -> bool:
    return any(s.rstrip().endswith("?") for s in sentences)


def _last_question(sentences: list[str]) -> str | None:
    asks = [s for s in sentences if s.rstrip().endswith("?") and not RHETORICAL.search(
        s.lower()) and (len(s.split()) >= 3 or first_hit(HOWTO, [s]))]  # "Any ideas?"
    return asks[0] if asks else None


def _all_thanks(sentences: list[str]) -> bool:
    return all(THANKS_ONLY.match(s.lower()) or len(s.split()) <= 2 for s in sentences)


def _title(mail: ParsedMail, fallback: str) -> str:
    from tickethub.mail.threads import base_subject

    subject = " ".join(mail.subject.split())
    return (subject if base_subject(subject) else fallback)[:300] or "(no subject)"


def _add(kind: str, mail: ParsedMail, evidence: str) -> Operation:
    return Operation(op="add", kind=kind, title=_title(mail, evidence), evidence=evidence,
                     summary=mail.own_text[:1000])


def _add_reply(kind: str, evidence: str) -> Operation:
    return Operation(op="add", kind=kind, title=evidence[:300], evidence=evidence)


# What the ``learned`` extractor shares with this one (the same target and operation
# shapes, so the two differ only in how they decide).
target_of = _target
same_person = _same_person
all_thanks = _all_thanks
clarifying = _clarifying
add = _add
add_reply = _add_reply
