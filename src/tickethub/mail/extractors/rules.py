"""The ``rules`` extractor: offline, deterministic, from headers, threading and
plain-language cues (English). It decides in the order of the labelling rules:
complete, answer, status, add, ignore — and may add a second operation when a mail both
closes one issue and raises a new one.

Who writes matters: the *requester* (the address that raised the targeted issue)
completes, reopens and un-defers; others answer questions and defer, commit to or finish
tasks. A mail that is text from outside is only ever matched, never obeyed.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from typing import SupportsIndex, overload

from tickethub.mail.extractors.base import IssueView, MailContext
from tickethub.mail.operations import MAX_EVIDENCE, Operation
from tickethub.mail.parse import ParsedMail


def _rx(*patterns: str) -> re.Pattern[str]:
    """One cue: lower-case patterns, matched against lower-cased text (much faster than
    IGNORECASE), per sentence; MULTILINE so a whole mail can be pre-screened at once.

    Alternatives that start at a word boundary share one ``(?<!\\w)`` in front instead
    of a ``\\b`` each: the regex engine can then skip ahead on their first letters, which
    makes a cue about ten times cheaper to search for."""
    worded = [p[2:] for p in patterns if p.startswith(r"\b")]
    other = [p for p in patterns if not p.startswith(r"\b")]
    parts = [r"(?<!\w)(?:" + "|".join(f"(?:{p})" for p in worded) + ")"] if worded else []
    parts += [f"(?:{p})" for p in other]
    return re.compile("|".join(parts), re.MULTILINE)


COMPLETE = _rx(
    r"\b(now )?(works|installs|compiles|builds|runs|working|installed)( now)? "
    r"(fine|great|perfectly|ok|okay|smoothly|very nice|nicely)\b",
    r"\b(it|that|this) (works|worked|did it|did the trick|fixed it|solved it)\b",
    r"\btook care of it\b", r"\bnever ?mind\b.*\b(fine|works|ok|fixed|solved)\b",
    r"\b(problem|issue|it)('s| is| was)? (now )?(solved|fixed|resolved)\b",
    r"\bseems fine now\b", r"\bworked smoothly\b", r"\blooks good to me\b",
    r"\b(i've|i have) (put up|uploaded|released|built|packaged|committed)\b",
    r"\bso did my build\b", r"\b(done|fixed)[,!.] (uploaded|committed|released)\b",
    r"\bfixed in (the )?(upcoming|next|latest)\b", r"\bthere'?s already a package\b",
    r"\b(ah|oh),? (right|i see|ok)\b", r"\banswered all my questions\b",
    r"\bnow i understand\b", r"\bthat'?s what i (needed|was looking for)\b",
    # how people write it on lists: the requester solved it, alone or with help ...
    r"\ball is well\b", r"\b(much|a lot|way) better now\b", r"\bturns out\b",
    r"\bi('ve| have)? ended up\b", r"\bi (figured|worked) it out\b", r"\bthat did it\b",
    r"\bfound (the|a) (solution|problem|fix|cause|culprit)\b", r"\bsolved the problem\b",
    r"\bworks (now|again)\b", r"\b(it|everything|all)('s| is) working (now|again)\b",
    r"\bnow (it )?works\b",
    # ... or whoever does the work reports it done ("fixed in CVS")
    r"\bfixed in (cvs|svn|git|the cvs|the repository|\d[\w.]*)\b",
    r"\b(i'?ve|i have) (just )?(made|checked in|committed|fixed|changed|added|uploaded)\b",
    r"\b(just )?checked (it |this |that |a fix )?in\b", r"\b(is|are) (now )?in cvs\b",
    r"^\W*done\W*$", r"\b(oops|ok|okay),? fixed\b",
    r"\b(applied|committed|checked in),? thanks\b", r"\bthanks,? (applied|committed)\b",
    r"\b(i'?ve|i have) applied (it|this|that|the patch|your patch)\b",
    # the requester found the answer alone
    r"\bdidn'?t think (to|of) (check|look|try)",
    r"\byou'?re (probably |quite |absolutely )?right\b",
)
NEGATED = re.compile(r"\b(doesn'?t|does not|didn'?t|did not|not yet|isn'?t|won'?t|still)\b")
SAME_PROBLEM = _rx(r"\b(had|have|got|hit) the same (problem|issue|error)\b",
                   r"\bworked for me( too)?\b", r"\bsame here\b")
REOPEN = _rx(  # the requester says the answer missed the point, even in a mail that asks
    r"\btried that\b", r"\bsame (error|problem)\b", r"\bnot what i meant\b",
    r"\bany other (idea|clue|suggestion|way)s?\b", r"\bi (ment|meant) (to say|that)\b",
    r"\bthat'?s not (what|it)\b", r"\bbut i (would like|want|need|have to)\b",
    r"\bthanks\b[^.!?]{0,25}\bbut\b",
)
FAILED = _rx(  # ... or, in a mail that asks nothing, that it did not work
    r"\b(still|doesn't|does not|didn't|did not) (work|help|fix)", r"\bi just want to be sure\b",
    r"\bstill (get|getting|fails|broken)\b",
    r"\b(doesn'?t|does not|didn'?t|did not) seem to (work|help)\b",
)
UNDEFER = _rx(r"\bit got (updated|released)\b", r"\b(is|got) (now )?(out|released|available)\b")
DEFER = _rx(
    r"\bas soon as\b.*\bi'?ll\b", r"\bi'?ll\b.*\b(as soon as|once|when it'?s|after)\b",
    r"\b(away|on holiday|on vacation) until\b.*\bi'?ll\b", r"\bi'?ll look at it (then|later)\b",
    r"\bwhen i get back\b", r"\b(don'?t|do not) have (the )?time\b",
    r"\bget to it (tomorrow|later|next week|on \w+day)\b", r"\bwon'?t be able to\b.*\buntil\b",
    r"\bi'?ll (probably )?not\b.*\buntil\b", r"\b(not sure|doubt) i'?ll (get to it|have time)\b",
    r"\bi'?ll (take a )?look at (it|this|that) (then|later|tomorrow|next week)\b",
    r"\bonce (it'?s|it is|i'?m|i am) back\b.*\bi'?ll\b",
)
COMMIT = _rx(r"\bi'?ll (try to )?\w+ (it|this|that|them)?\s*(asap|soon|by \w+|tomorrow|tonight|"
             r"this week|next week|today)\b", r"\bi'?ll do it by\b",
             r"\bi'?ll (check|commit) (it|this|that|them) in\b",
             r"\bi'?ll \w+ [^.!?]{0,50}\bright now\b")
CANCEL = _rx(r"\bi won'?t (take|apply|do|package)\b", r"\bforget it\b",
             r"\b(don't|do not) need it any ?more\b", r"\bwon'?t fix\b")
TASK_ASK = _rx(
    r"\bwould you (consider|mind)\b", r"\bany plans (for|to)\b", r"\bhave you thought of\b",
    r"\bcould you (please )?(package|update|upgrade|build|add|include|apply)\b",
    r"\bplease (package|update|add|include|apply|fix)\b", r"\bpatch (attached|below)\b",
    r"\bit would be (really )?nice if\b", r"\bfeature request\b",
    # proposals, patches and bug reports are work for someone, not questions
    r"\bwhat do (people|you all|others|folks|you guys|we) think\b", r"\bthoughts\s*\?",
    r"\bcomments (appreciated|welcome)\b", r"\bthe following patch\b",
    r"\bi('ve| have) fixed it with\b",
    r"\btraceback\b", r"\bis this related to your\b", r"\bregression\b",
    r"\bgetting (slower|worse)\b", r"\bit'?s (now )?time to\b", r"\bi propose\b",
    r"\bam i the only one\b",
    r"\b(can|could) you (please )?(atach|attach|send|upload|put up|rebuild)\b",
)
QUESTION_CUE = _rx(
    r"\?\s*$", r"\bany (ideas|suggestions|hints|clues|pointers)\b", r"\bwhat am i missing\b",
    r"\bhow (do|can|should) i\b", r"\banyone (know|seen|have)\b", r"\bask here\b",
    r"\b(run|ran) into\b.*\berrors?\b", r"\bi get the following\b", r"\bi got this error\b",
    # questions written without a question mark
    r"\bi'?m (looking for|after|trying to find)\b", r"\bi (was )?wonder(ing)?\b",
    r"\b(can|could) (anyone|anybody|someone|somebody)\b", r"\bany help\b",
    r"\bplease advise\b", r"\bi have a problem\b", r"\bi'?m having (a )?(problem|trouble)",
    r"\bnot sure (how|what|why|where)\b", r"\bi can'?t (figure|work) out\b", r"\bstumped\b",
    r"\b(someone|anyone|anybody|somebody) knows\b",
    r"\bi('m| am| was)?( just)? wonder(ing)?\b", r"\bjust curious\b", r"\bany idea\b",
    r"\bhas (any(one|body)|some(one|body)) (got|had|seen|tried|done|an?)\b",
    r"\bany (other |more )?help\b", r"\bhelp would be (much |greatly )?appreciated\b",
    r"\bmind telling me\b", r"\bi'?d be (very )?interested (to know|in hearing)\b",
    r"\bi('ve| have)( got)? (a|some|a few|a couple of) (small )?(problems?|issues|trouble)\b",
)
# A first mail that reports a defect or offers a change, with no question in it: a task.
BUG_REPORT = _rx(
    r"\b(doesn'?t|does not|no longer|won'?t|don'?t) work (anymore|any more)\b",
    r"\bstopped working\b", r"\bwhile executing\b", r"\bkind of annoying\b",
    r"\bsomething (has )?changed\b", r"\bi'?d (like to )?(humbly )?(offer|propose|suggest)\b",
    r"\b(i'?ve|i have) attached a (patch|diff|fix)\b", r"\bthe (diff|patch) is (attached|below)\b",
    r"\bany objections\b", r"\bi'?d (really )?like (a|an|to (have|see|be able))\b",
)
# Asking for help in words, without a question mark ("I'd be interested to know how").
ASK_NO_MARK = _rx(
    r"\bi('m| am| was)?( just)? wonder(ing)? (if|whether|why|how|what)\b",
    r"\bi'?d be (very )?interested (to know|in hearing)\b", r"\bany (other |more )?help\b",
    r"\bhelp would be (much |greatly )?appreciated\b", r"\bmind telling me\b",
    r"\bplease advise\b", r"\bi can'?t (figure|work) out\b",
    r"\bhas (any(one|body)|some(one|body)) (got|had|seen|tried|succeeded|managed)\b",
)
WILL_TRY = _rx(r"\bi'?ll (try|give (it|that) a)\b", r"\bi ?will (try|give (it|that) a)\b")
# In a reply, a question that asks for help (not a debating point or a rhetorical one).
HOWTO = _rx(
    r"\bis there (a|an|any) (\w+ )?(way|tool|option|command|program|package|setting)\b",
    r"\bhow (do|can|should|would|could) (i|you|one|we)\b", r"\bthe real question is\b",
    r"\b(does|do|did) (any(one|body)|you) (know|use)\b", r"\bany(one|body) have\b",
    r"\bhow to\b",
    r"\bany(one|body) (else )?(know|seen|have|experimenting|tried|using)\b",
    r"\bany (ideas|suggestions|hints|clues|pointers)\b", r"\bwhere (can|do|is|are) (i|that|they)\b",
    r"\b(can|could) (anyone|anybody|someone|somebody)\b", r"\bwhat am i missing\b",
    r"\bhas (any(one|body)|some(one|body)) (got|had|seen|tried|done|an?|succeeded|managed)\b",
    r"\bany idea\b", r"\bmind telling me\b", r"\bcan (this|that|it) be done\b",
)
OWN_PROBLEM = _rx(r"\bi (got|get|keep getting|am getting|run into|ran into)\b",
                  r"\bany ideas\b", r"\bwhat am i missing\b", r"\berror\b")
ANSWER_CUE = _rx(
    r"\btry\b", r"\byou (need|can|should|could|must|might)\b", r"\bhave a look\b",
    r"\bman \w+", r"\binstall\b", r"\bedit\b", r"\bremove\b", r"\bbecause\b", r"\buse\b",
    r"\bhandled\b", r"\bdoes not work\b", r"\bworks perfectly\b", r"https?://", r"^\s*[#$] ",
    r"\bcat \S", r"\bapt-get\b", r"\brpm -", r"\bdon'?t worry\b",
)
NEW_PROBLEM = _rx(  # after "that fixed it": the next problem
    r"\bnow i('m| am)? (get|getting|see|seeing)\b", r"\banother (error|traceback|problem|bug)\b",
    r"\bwhen i (then )?(run|ran|try|tried)\b.*\b(error|fail)")
NOT_ANSWER = _rx(r"\bme too\b", r"\bsame here\b", r"\bplease post\b",
                 r"\blet (me|us) know\b", r"\bi'?d (also )?like to know\b")
# A question someone asks for themselves (not "how do you feed procmail?" to the asker).
SELF = re.compile(r"\b(i|i'm|i've|we|my|me|our|any(one|body)|some(one|body))\b")
# A question that asks (not "Pretty simple huh?"): a pronoun, or a wh- or auxiliary start.
REAL_QUESTION = re.compile(
    r"\b(i|we|my|me|you|your|any(one|body)|some(one|body)|any)\b|^\W*(how|what|why|where|"
    r"when|which|who|is|are|can|could|does|do|did|should|would|will|has|have|isn'?t)\b")
SUGGEST = _rx(  # a suggestion, even phrased as a question ("Put them in a scripts folder?")
    r"\b(what|how) about\b", r"\bhave you tried\b", r"\bdid you try\b", r"\bwhy not\b",
    r"\bhave you (looked at|considered|checked)\b",
    r"^\W*(put|use|try|install|add|remove|run|set|check|edit|look|grep|change|upgrade|"
    r"downgrade|rebuild|reinstall|disable|enable|delete|rename|move)\b")
# A question that argues rather than asks ("Isn't there a key in the rpm?", "why don't the
# police simply ...?", "what the hell is it with ...?").
RHETORICAL = re.compile(
    r"^\W*(isn'?t|aren'?t|wasn'?t|doesn'?t|don'?t|didn'?t|wouldn'?t|shouldn'?t|won'?t|"
    r"who cares|so what)\b|\bwhy (don'?t|doesn'?t|didn'?t|wouldn'?t|on earth)\b|"
    r"\bwhat the (hell|heck|fuck)\b|\bwtf\b|\b(huh|eh)\W*$|"
    r",\s*(aye|eh|right|no|don'?t you think)\W*$|"  # tag questions: "..., are they?"
    r",\s*(is|are|was|were|do|does|did|has|have|can|will|would)(n'?t)? "
    r"(it|they|he|she|you|we|there)\W*$")
CLARIFY = _rx(r"\bwhat (version|distro|kernel)\b", r"\bcould you (post|send|show)\b",
              r"\bcan you (post|send|show)\b", r"\bwhich (version|distro)\b")
ANNOUNCE = _rx(r"\breleased?\b", r"\bannounc", r"\bholidays?\b", r"\bout of (the )?office\b",
               r"\bi'?ll be (leaving|away)\b", r"\bunsubscribe\b")
THANKS_ONLY = re.compile(r"^\W*(thanks?|thank you|thx|cheers|ta|\+1|me too)\b[\w\s!.,]*$")

MAX_CHARS = 8000  # cues are read in the first 8,000 characters of the author's own text
_LETTER = re.compile(r"[^\W\d_]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
_LIST_FOOTER = re.compile(
    r"mailing list|listinfo|^_{5,}|sponsored by|to unsubscribe|your use of yahoo|groups sponsor|"
    r"\(un\)subscription|list maintainer|users' group", re.MULTILINE)


class RulesExtractor:
    """See the module docstring. Stateless and cheap: safe to share between threads."""

    name = "rules"

    async def extract(self, mail: ParsedMail, context: MailContext) -> list[Operation]:
        return self.extract_now(mail, context)

    def extract_now(self, mail: ParsedMail, context: MailContext) -> list[Operation]:
        text = _clean(mail.own_text)
        sentences = _sentences(text)
        if mail.is_automatic or not sentences:
            return [Operation(op="ignore")]
        target = _target(context)
        if target is None or context.new_topic:
            return self._first(mail, sentences, context)
        is_requester = _same_person(mail.from_addr, target.raised_by)
        ops = self._follow_up(target, is_requester, sentences)
        if not is_requester and not _first_hit(ANSWER_CUE, sentences) and \
                not _first_hit(SUGGEST, sentences) and not _clarifying(sentences) and \
                (ask := _howto_question(sentences) or _first_hit(ASK_NO_MARK, sentences)) \
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
        task = _first_hit(TASK_ASK, sentences)
        subject = mail.subject.lower().rstrip()
        if (ANNOUNCE.search(subject) and not subject.endswith("?")) or (
                _first_hit(ANNOUNCE, sentences[:3]) and not _howto_question(sentences)):
            return [Operation(op="ignore")]  # announcements are not asks, even "please upgrade"
        if context.is_reply and not context.new_topic:
            # A reply in a thread that raised nothing: only a clear new ask is an issue.
            # Its parent is missing: a question put back to the author it replies to
            # ("can you send more details?", "how do you add features?") is talk.
            if (task := task or _first_hit(BUG_REPORT, sentences)) is not None and \
                    not _first_hit(CLARIFY, [task]):
                return [_add("task", mail, task)]
            question = _last_question(sentences) or _first_hit(ASK_NO_MARK, sentences)
            if question is not None and _for_oneself(question) and \
                    (not _quotes(mail.text) or any(
                        _FIRST_PERSON.search(q.lower()) for q in sentences
                        if q.rstrip().endswith("?"))) and \
                    not _first_hit(CLARIFY, [question]) and \
                    (_first_hit(OWN_PROBLEM, sentences) or _first_hit(HOWTO, [question])):
                return [_add("question", mail, question)]
            return [Operation(op="ignore")]
        if task is not None:
            return [_add("task", mail, task)]
        question = next((s for s in sentences if s.rstrip().endswith("?") and
                         len(s.split()) >= 3 and REAL_QUESTION.search(s.lower()) and
                         not RHETORICAL.search(s.lower())), None) or \
            next((s for s in _hits(QUESTION_CUE, sentences)
                  if not RHETORICAL.search(s.lower())), None)
        if question is None and mail.subject.rstrip().endswith("?"):
            question = next((s for s in sentences if len(s.split()) >= 4), None)
        if question is not None and not _shared_link_remark(sentences, question):
            return [_add("question", mail, question)]
        if (bug := _first_hit(BUG_REPORT, sentences)) is not None:
            return [_add("task", mail, bug)]
        return [Operation(op="ignore")]

    # -- replies ---------------------------------------------------------------------------

    def _follow_up(self, target: IssueView, is_requester: bool,
                   sentences: list[str]) -> list[Operation]:
        done = next((s for s in _hits(COMPLETE, sentences) if not _negated(COMPLETE, s)), None)
        if done is not None and (is_requester or target.kind == "task" or
                                 _first_hit(SAME_PROBLEM, sentences)):
            # the requester confirms; on a task anyone may report it done; on a question
            # a third party confirms the fix solved the same problem for them
            return [Operation(op="complete", target=target.id, evidence=done)]
        if is_requester:
            return self._requester(target, sentences)
        return self._helper(target, sentences)

    def _requester(self, target: IssueView, sentences: list[str]) -> list[Operation]:
        if target.status == "deferred" and (hit := _first_hit(UNDEFER, sentences)):
            return [Operation(op="status", target=target.id, new_status="open", evidence=hit)]
        if change := _cancelled_or_committed(target, sentences):
            return [change]
        if target.status in ("answered", "done") and (hit := _first_hit(REOPEN, sentences)):
            return [Operation(op="status", target=target.id, new_status="open", evidence=hit)]
        if target.kind == "question" and target.status in ("answered", "done") \
                and (ask := _last_question(sentences)) is not None and \
                not _first_hit(WILL_TRY, sentences) and not _first_hit(NEW_PROBLEM, sentences):
            # the requester asks again, under the same subject, after an answer: the same
            # problem is still open (unless he reports a new one: "now I get ...")
            return [Operation(op="status", target=target.id, new_status="open", evidence=ask)]
        if target.status in ("answered", "done") and not _has_question(sentences) and \
                not _first_hit(WILL_TRY, sentences):  # "thanks, I'll try that" changes nothing
            hit = _first_hit(FAILED, sentences)
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
        if hit := _first_hit(DEFER, sentences):
            return [Operation(op="status", target=target.id, new_status="deferred",
                              evidence=hit)]
        if _all_thanks(sentences) or (_clarifying(sentences) and
                                      not _first_hit(SUGGEST, sentences)):
            return [Operation(op="ignore")]
        if hit := _first_hit(SUGGEST, sentences):
            return [Operation(op="answer", target=target.id, evidence=hit)]
        if hit := _first_hit(ANSWER_CUE, sentences):
            return [Operation(op="answer", target=target.id, evidence=hit)]
        substantive = [s for s in sentences if len(s.split()) >= 4]
        if _has_question(sentences) and (_first_hit(CLARIFY, sentences) or
                                         all(s.rstrip().endswith("?") for s in substantive)):
            return [Operation(op="ignore")]
        if len(substantive) <= 2 and _first_hit(NOT_ANSWER, sentences):
            return [Operation(op="ignore")]  # "me too", "please post a link!"
        if substantive:
            return [Operation(op="answer", target=target.id, evidence=substantive[0])]
        return [Operation(op="ignore")]

    def _new_issue_in_reply(self, target: IssueView, is_requester: bool, sentences: list[str],
                            closing: list[Operation]) -> Operation | None:
        """A reply that raises something new: a fresh question after a fix, or a request."""
        task = _first_hit(TASK_ASK, sentences)
        if task is not None and not is_requester and closing and closing[0].op == "complete":
            return _add_reply("task", task)
        completed = bool(closing) and closing[0].op == "complete"
        if is_requester and completed and (new := _first_hit(NEW_PROBLEM, sentences)):
            return _add_reply("task" if task is not None else "question", task or new)
        if is_requester and target.kind == "task" and (ask := _howto_question(sentences)):
            return _add_reply("question", ask)  # a question of its own, on a task
        question = _last_question(sentences)
        if question is None or _first_hit(CLARIFY, [question]):
            return None
        if is_requester and target.status in ("answered", "done") and not (
                closing and closing[0].op == "status"):
            return _add_reply("question", question)
        if is_requester and completed and (ask := _howto_question(sentences)):
            return _add_reply("question", ask)
        if not is_requester and closing and closing[0].op == "complete" and \
                _first_hit(OWN_PROBLEM, sentences):
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


def _clean(text: str) -> str:
    """The text without mailing-list footer lines, and without a short signature
    written as "--Name" (no space after the dashes) in its last lines."""
    lines = [line for line in _drop_header_block(text.splitlines())
             if not _QUOTE_LINE.match(line)]
    for i in range(len(lines) - 1, max(0, len(lines) - 4) - 1, -1):
        if _DASH_SIGNATURE.match(lines[i]):
            lines = lines[:i]
            break
    for i in range(max(1, len(lines) - 15), len(lines)):  # a signature boxed in "====="
        if _RULE_LINE.match(lines[i]):
            lines = lines[:i]
            break
    if not _LIST_FOOTER.search(text.lower()):
        return "\n".join(lines)
    for i in range(max(0, len(lines) - 8), len(lines)):  # a footer block: the marker line
        if _LIST_FOOTER.search(lines[i].lower()):        # and what follows it (the sponsor's
            lines = lines[:i]                            # slogan and link)
            break
    return "\n".join(line for line in lines if not _LIST_FOOTER.search(line.lower()))


def _drop_header_block(lines: list[str]) -> list[str]:
    """Without a quoted mail's header lines ("Date: ...", "From: ...", "Message-ID: ...")
    at the top: some mailers put the replied-to mail's headers there instead of "wrote:"."""
    start = 0
    while start < len(lines) and start < 8 and (
            _HEADER_LINE.match(lines[start]) or (start and not lines[start].strip())):
        start += 1
    return lines[start:] if start >= 2 else lines


# Quoted text that the reply-parser leaves: "Name> " (also indented), "| " and ") "
# quotes, and the attribution lines "[Name]" and "... wrote:" / "wrote*:" / "writes:".
_QUOTE_LINE = re.compile(
    r"^\s{0,8}[A-Za-z][\w.-]{0,19}>(\s|$)|^\s*[|)](\s|$)|^\s*\[[A-Z][\w .'-]{1,40}\]\s*$|"
    r".*\b(wrote|writes|said)\*?:\s*$")
_HEADER_LINE = re.compile(r"^(Date|From|To|Cc|Sent|Subject|Message-ID|In-Reply-To):\s", re.I)
_DASH_SIGNATURE = re.compile(r"^\s*--[^\W\d_]")
_RULE_LINE = re.compile(r"^\s*(={10,}|\*{10,}|#{10,})\s*$")


class Sentences(list[str]):
    """The sentences of a text (line wrapping undone), with their lower-cased forms and
    all of them lower-cased in one string, so a cue is screened with one search."""

    def __init__(self, items: Iterable[str]) -> None:
        super().__init__(items)
        self.lowered = [s.lower() for s in self]
        self.joined = "\n".join(self.lowered)
        self.starts: list[int] = []
        at = 0
        for lowered in self.lowered:
            self.starts.append(at)
            at += len(lowered) + 1

    def first_from(self, pattern: re.Pattern[str]) -> int | None:
        """Index of the first sentence the cue matches in, found with one search of the
        joined text (then confirmed on the sentence alone), or None."""
        found = pattern.search(self.joined)
        if found is None:
            return None
        index = bisect.bisect_right(self.starts, found.start()) - 1
        for i in range(index, len(self)):  # a cue that spanned a line break: look on
            if pattern.search(self.lowered[i]):
                return i
        return None

    @overload
    def __getitem__(self, index: SupportsIndex) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sentences: ...

    def __getitem__(self, index: SupportsIndex | slice) -> str | Sentences:
        """A sentence, or a slice of them as ``Sentences``."""
        if isinstance(index, slice):
            return Sentences(list.__getitem__(self, index))
        return list.__getitem__(self, index)


def _sentences(text: str) -> Sentences:
    """Sentences, with the line wrapping of mail undone (a sentence may span lines). A
    run longer than an evidence quote may be (a pasted log, a URL list with no full stop)
    is cut into pieces at word boundaries, so whichever sentence an operation quotes fits
    :class:`Operation`'s ``evidence``."""
    found: list[str] = []
    for part in _SENTENCE_END.split(text[:MAX_CHARS]):
        if _LETTER.search(part):
            found.extend(_pieces(" ".join(part.split())))
    return Sentences(found)


def _pieces(sentence: str, limit: int = MAX_EVIDENCE) -> list[str]:
    """``sentence`` in pieces of at most ``limit`` characters, cut at spaces (a word
    longer than ``limit`` is cut where it must)."""
    pieces = []
    while len(sentence) > limit:
        cut = sentence.rfind(" ", 0, limit + 1)
        if cut <= 0:
            cut = limit
        pieces.append(sentence[:cut])
        sentence = sentence[cut:].lstrip()
    if sentence:
        pieces.append(sentence)
    return pieces


def _cancelled_or_committed(target: IssueView, sentences: list[str]) -> Operation | None:
    """What a requester or a helper says of ``target`` either way: it is cancelled; or,
    for a task, whoever took it on defers it or commits to it (status open)."""
    if hit := _first_hit(CANCEL, sentences):
        return Operation(op="status", target=target.id, new_status="cancelled", evidence=hit)
    if target.kind == "task":
        if hit := _first_hit(DEFER, sentences):
            return Operation(op="status", target=target.id, new_status="deferred",
                             evidence=hit)
        if hit := _first_hit(COMMIT, sentences):
            return Operation(op="status", target=target.id, new_status="open", evidence=hit)
    return None


def _first_hit(pattern: re.Pattern[str], sentences: Iterable[str]) -> str | None:
    if isinstance(sentences, Sentences):
        index = sentences.first_from(pattern)
        return None if index is None else sentences[index]
    for sentence in sentences:
        if pattern.search(sentence.lower()):
            return sentence
    return None


def _hits(pattern: re.Pattern[str], sentences: list[str]) -> Iterable[str]:
    if not isinstance(sentences, Sentences):
        yield from (s for s in sentences if pattern.search(s.lower()))
        return
    index = sentences.first_from(pattern)
    if index is None:
        return
    yield sentences[index]
    for i in range(index + 1, len(sentences)):
        if pattern.search(sentences.lowered[i]):
            yield sentences[i]


def _negated(pattern: re.Pattern[str], sentence: str) -> bool:
    """The cue is denied next to where it is found ("a cleanup which doesn't address
    this issue", "not yet fixed in CVS")."""
    lowered = sentence.lower()
    found = pattern.search(lowered)
    if found is None:
        return False
    around = lowered[max(0, found.start() - 25):found.start()] + " " + \
        lowered[found.end():found.end() + 40]  # not the cue itself ("didn't think to check")
    return bool(NEGATED.search(around))


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
                _first_hit(HOWTO, [sentence]) and not _first_hit(CLARIFY, [sentence]) and \
                not RHETORICAL.search(sentence.lower()):
            return sentence
    return None


def _shared_link_remark(sentences: list[str], question: str) -> bool:
    """A mail that passes on a link (an article, a page) with a remark phrased as a
    question ("Related to the MS acquisition?", "isn't your life enriched?"): the question
    asks nothing for the writer (no "I", "my", "anyone"), so it is talk, not an ask."""
    if not _URL.search("\n".join(sentences)) or _first_hit(OWN_PROBLEM, sentences) or \
            _first_hit(HOWTO, sentences):
        return False
    return not any(SELF.search(s.lower()) for s in sentences if s.rstrip().endswith("?"))


_URL = re.compile(r"https?://|<?www\.\w")


def _quotes(text: str) -> bool:
    """The mail replies to quoted text (two or more quoted lines, or an attribution)."""
    found = 0
    for line in text.splitlines()[:400]:
        if _QUOTE_LINE.match(line) or line.lstrip().startswith(">"):
            found += 1
            if found >= 2:
                return True
    return False


_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|my|me|any(one|body)( else)?)\b")


def _has_question(sentences: list[str]) -> bool:
    return any(s.rstrip().endswith("?") for s in sentences)


def _last_question(sentences: list[str]) -> str | None:
    asks = [s for s in sentences if s.rstrip().endswith("?") and not RHETORICAL.search(
        s.lower()) and (len(s.split()) >= 3 or _first_hit(HOWTO, [s]))]  # "Any ideas?"
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


# What the ``learned`` extractor shares with this one (the same text, cues, target and
# operation shapes, so the two differ only in how they decide).
clean = _clean
sentences = _sentences
target_of = _target
same_person = _same_person
first_hit = _first_hit
negated = _negated
all_thanks = _all_thanks
clarifying = _clarifying
add = _add
add_reply = _add_reply
