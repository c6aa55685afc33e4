"""The cues the mail extractors read (``rules``, ``learned``): compiled patterns for
plain-language English phrases, each matched per sentence against lower-cased text
(``text.first_hit``). A cue names what a sentence says ("that fixed it", "I'll try",
"how can I"), not what to do about it: the extractors decide that."""

from __future__ import annotations

import re


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
