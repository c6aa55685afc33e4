"""One mail at a time: parse → (reply channel) → thread → context → extract → validate →
apply → record. Idempotent: a Message-ID already recorded is skipped, and a mail
interrupted half-way is finished on the next run without repeating what was applied
(see ``mail.apply``). Nothing here raises for bad mail: whatever fails on one mail —
the parser, the reply check, the extractor, applying — quarantines it with its reason and
the run (and an IMAP cursor) goes on; only a failure to write the quarantine itself (the
database is away) is raised. Spam and bulk mail (``mail.screening``, the ``mail_ignore``
setting) are recorded as ignored. Mails over ``offload_bytes`` are parsed in a worker
thread, so a big mail never holds up the event loop of a running hub.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from functools import partial

from tickethub.mail.apply import Applied, OperationApplier
from tickethub.mail.extractors.base import ExtractionFailed, Extractor, IssueView, MailContext
from tickethub.mail.operations import Operation, rejection
from tickethub.mail.parse import ParsedMail, UnreadableMail, parse_mail
from tickethub.mail.screening import is_screened, screened
from tickethub.mail.threads import base_subject, is_reply_subject
from tickethub.services.mail_state import MailRecord, MailState
from tickethub.services.ports import Clock
from tickethub.services.tickets import TicketService

log = logging.getLogger(__name__)

OPEN_ELSEWHERE_CAP = 20

# A sync handler, or an async one (the hub's: its write joins the group commit).
ReplyHandler = Callable[[ParsedMail], bool | Awaitable[bool]]
"""Given a parsed mail, answers a ticket and returns True when the mail is a reply to a
notification (the email answer channel); False lets the pipeline treat it as new mail."""


@dataclass
class RunSummary:
    """What a run did; ``counts`` keys: read, added, answered, closed, status, ignored,
    skipped, quarantined, rejected, replies."""

    counts: Counter[str] = field(default_factory=Counter)
    threads: set[str] = field(default_factory=set)

    def as_dict(self) -> dict[str, int]:
        keys = ("read", "added", "answered", "closed", "status", "ignored", "skipped",
                "quarantined", "rejected", "replies")
        return {"read": self.counts["read"], "threads": len(self.threads),
                **{k: self.counts[k] for k in keys if k != "read"}}


class MailPipeline:
    def __init__(
        self,
        tickets: TicketService,
        state: MailState,
        extractor: Extractor,
        clock: Clock,
        *,
        root_issue: int | None = None,
        max_bytes: int = 25 * 1024 * 1024,
        defer_days: float = 7.0,
        reply_handler: ReplyHandler | None = None,
        ignore: Collection[str] = ("spam", "bulk"),
        offload_bytes: int = 32 * 1024,
    ) -> None:
        self.tickets = tickets
        self.state = state
        self.extractor = extractor
        self.clock = clock
        self.root_issue = root_issue
        self.max_bytes = max_bytes
        self.applier = OperationApplier(tickets, defer_days=defer_days)
        self.reply_handler = reply_handler
        self.ignore = frozenset(ignore)
        self.offload_bytes = offload_bytes
        self.summary = RunSummary()
        self.views: dict[int, IssueView] | None = None
        """Issue views kept during a bulk run (``mail.build.ingest``); the issues a mail
        changes are dropped from it."""

    async def process(self, mailbox: str, source_key: str, raw: bytes,
                      parsed: ParsedMail | BaseException | None = None) -> str:
        """Process one raw mail; returns its outcome (a ``RunSummary`` count key).

        ``parsed``: the mail already parsed elsewhere (``mail.parse_pool``), or the error
        its parse raised — handled exactly as if the parse had run here."""
        self.summary.counts["read"] += 1
        try:
            outcome = await self._process(mailbox, source_key, raw, parsed)
        except Exception as exc:  # anything this mail sets off: keep it, go on
            log.exception("mail %s/%s failed", mailbox, source_key)
            outcome = self._quarantine(mailbox, source_key, None,
                                       f"processing failed: {_describe(exc)}", raw)
        self.summary.counts[outcome] += 1
        return outcome

    async def _parse(self, raw: bytes, *, whole: bool = False) -> ParsedMail:
        """The mail; without its body when it is to be ignored (unless ``whole``)."""
        skip = None if whole or not self.ignore else partial(is_screened, ignore=self.ignore)
        if len(raw) > self.offload_bytes:
            return await asyncio.to_thread(parse_mail, raw, max_bytes=self.max_bytes,
                                           skip_body=skip)
        return parse_mail(raw, max_bytes=self.max_bytes, skip_body=skip)

    async def _process(self, mailbox: str, source_key: str, raw: bytes,
                       parsed: ParsedMail | BaseException | None = None) -> str:
        try:
            if isinstance(parsed, BaseException):
                raise parsed
            mail = parsed if parsed is not None else await self._parse(raw)
        except UnreadableMail as exc:
            return self._quarantine(mailbox, source_key, None, exc.reason, raw)
        except Exception as exc:  # a parser bug must not stop the run
            return self._quarantine(mailbox, source_key, None,
                                    f"parser crashed: {_describe(exc)}", raw)
        if self.state.is_recorded(mail.message_id):
            return "skipped"
        kind = screened(mail, self.ignore)
        if kind is not None:
            self._record(mail, mailbox, mail.message_id, None, (), (),
                         ({"op": "ignore", "reason": kind},))
            return "ignored"
        if not mail.body_read:  # parsed for another screening than this pipeline's
            mail = await self._parse(raw, whole=True)
        try:
            handled = self.reply_handler is not None and self.reply_handler(mail)
            is_reply = await handled if inspect.isawaitable(handled) else handled
        except Exception as exc:
            log.exception("reply check of %s failed", mail.message_id)
            return self._quarantine(mailbox, source_key, mail.message_id,
                                    f"reply check failed: {_describe(exc)}", raw)
        if is_reply:
            self._forget_tickets()  # the reply changed a ticket behind the run's caches
            self._record(mail, mailbox, mail.message_id, None, (), (), ())
            return "replies"
        try:
            return await self._extract_and_apply(mail, mailbox)
        except ExtractionFailed as exc:
            return self._quarantine(mailbox, source_key, mail.message_id,
                                    f"extractor {self.extractor.name}: {exc}", raw)
        except Exception as exc:
            log.exception("mail %s failed", mail.message_id)
            return self._quarantine(mailbox, source_key, mail.message_id,
                                    f"processing failed: {_describe(exc)}", raw)

    async def _extract_and_apply(self, mail: ParsedMail, mailbox: str) -> str:
        thread_root, parent, new_topic, known = self._thread_of(mail)
        self.summary.threads.add(thread_root)
        context = self._context(mail, thread_root, known, new_topic)
        ops = await self.extractor.extract(mail, context)
        allowed = context.known_ids
        results: list[Applied] = []
        op_log: list[dict[str, object]] = []
        rejected = 0
        first_issue = context.thread_issues[0].id if context.thread_issues else None
        default_parent = self.root_issue if new_topic or first_issue is None else first_issue
        for index, op in enumerate(ops):
            reason = rejection(op, allowed, mail.text)
            if reason is not None:
                rejected += 1
                op_log.append({"op": op.op, "target": op.target, "rejected": reason})
                log.info("mail %s: rejected %s (%s)", mail.message_id, op.op, reason)
                continue
            done = self.applier.apply(mail, index, op, thread_root=thread_root,
                                      default_parent=default_parent,
                                      extractor=self.extractor.name, now=self.clock.now())
            results.append(done)
            op_log.append({"op": op.op, "target": done.ticket_id, "status": done.status,
                           "applied": done.applied})
            if op.op == "add" and done.ticket_id is not None:
                allowed.add(done.ticket_id)
        raised = tuple(r.ticket_id for r in results if r.op.op == "add" and r.ticket_id)
        touched = tuple(r.ticket_id for r in results if r.ticket_id)
        if self.views is not None:
            for ticket_id in touched:
                self.views.pop(ticket_id, None)
        self._record(mail, mailbox, thread_root, parent, touched, raised, tuple(op_log))
        self.summary.counts["rejected"] += rejected
        return _outcome(results)

    # -- threading and context -------------------------------------------------------------

    def _thread_of(self, mail: ParsedMail) -> tuple[str, str | None, bool,
                                                    dict[str, MailRecord]]:
        parents = mail.parent_ids
        known = self.state.find(parents) if parents else {}
        nearest = next((known[mid] for mid in reversed(parents) if mid in known), None)
        subject_key = base_subject(mail.subject)
        if nearest is not None:
            new_topic = bool(subject_key) and bool(nearest.subject_key) and \
                subject_key != nearest.subject_key
            return nearest.thread_root, nearest.message_id, new_topic, known
        if parents:
            # Its parent is not in the mailbox. Under a subject none of the thread's stored
            # mails has, it is a hijacked thread: a new topic, not a follow-up.
            records = self.state.thread(parents[0]) if subject_key else []
            # Nothing of its thread is stored: a reply whose parents are all missing joins
            # the earlier thread with its base subject, as one that lost its references
            # does (list archives often drop the mail a reply names).
            if not records and subject_key and is_reply_subject(mail.subject) and \
                    (joined := self._by_subject(subject_key)) is not None:
                return joined
            new_topic = bool(records) and all(r.subject_key != subject_key for r in records)
            return parents[0], parents[-1], new_topic, known
        if subject_key and is_reply_subject(mail.subject) and \
                (joined := self._by_subject(subject_key)) is not None:
            return joined  # a reply that lost its references
        return mail.message_id, None, False, known

    def _by_subject(self, subject_key: str) -> tuple[str, str | None, bool,
                                                     dict[str, MailRecord]] | None:
        """The thread of the earliest stored mail with this base subject, replying to the
        latest mail of that thread under the same subject (a reply without usable
        references most likely answers the recent mail, not the thread's first)."""
        earlier = self.state.by_subject(subject_key)
        if earlier is None:
            return None
        latest = next((r for r in reversed(self.state.thread(earlier.thread_root))
                       if r.subject_key == subject_key), earlier)
        return latest.thread_root, latest.message_id, False, {latest.message_id: latest}

    def _context(self, mail: ParsedMail, thread_root: str, known: dict[str, MailRecord],
                 new_topic: bool) -> MailContext:
        records = self.state.thread(thread_root)
        raised: dict[int, None] = {}
        for record in records:
            for ticket_id in record.raised:
                raised.setdefault(ticket_id, None)
        issues = tuple(v for t in raised if (v := self._view(t)) is not None)
        by_id = {r.message_id: r for r in records} | known
        chain = _branch(mail, records, by_id, issues)
        elsewhere: tuple[IssueView, ...] = ()
        ancestors: tuple[IssueView, ...] = ()
        if getattr(self.extractor, "wants_tree_context", False):
            ancestors = self._ancestors(issues)
            elsewhere = self._open_elsewhere(set(raised) | {a.id for a in ancestors})
        return MailContext(
            thread_root=thread_root, root_issue=self.root_issue, thread_issues=issues,
            chain=tuple(chain), open_elsewhere=elsewhere, new_topic=new_topic,
            is_reply=bool(mail.parent_ids) or is_reply_subject(mail.subject),
            ancestors=ancestors,
        )

    def _ancestors(self, issues: tuple[IssueView, ...], cap: int = 4) -> tuple[IssueView, ...]:
        """The ancestor path of the thread's issues (up to ``cap`` levels), root first."""
        have = {i.id for i in issues}
        found: dict[int, IssueView] = {}
        for issue in issues:
            parent, steps = issue.parent_id, 0
            while parent is not None and parent not in have and steps < cap:
                view = found.get(parent) or self._view(parent)
                if view is None:
                    break
                found[parent] = view
                parent, steps = view.parent_id, steps + 1
        return tuple(sorted(found.values(), key=lambda v: v.depth))

    def _forget_tickets(self) -> None:
        if self.views is not None:
            self.views.clear()
        self.applier.forget()

    def _view(self, ticket_id: int) -> IssueView | None:
        if self.views is not None and ticket_id in self.views:
            return self.views[ticket_id]
        try:
            ticket = self.applier.ticket(ticket_id)
        except Exception:
            return None
        view = IssueView(
            id=ticket.id, kind=ticket.kind.value, status=ticket.status.value,
            title=ticket.title, raised_by=str(ticket.refs.get("raised_by", "")),
            source_message_id=ticket.refs.get("email"), parent_id=ticket.parent_id,
            depth=max(ticket.path.count("/") - 2, 0),
        )
        if self.views is not None:
            self.views[ticket_id] = view
        return view

    def _open_elsewhere(self, exclude: set[int]) -> tuple[IssueView, ...]:
        from tickethub.domain.status import WAITING
        from tickethub.domain.tickets import TicketQuery

        page = self.tickets.list(TicketQuery(status=tuple(WAITING), created_by="mail",
                                             limit=OPEN_ELSEWHERE_CAP + len(exclude)))
        views = [v for t in page.items if t.id not in exclude and (v := self._view(t.id))]
        return tuple(views[:OPEN_ELSEWHERE_CAP])

    # -- bookkeeping ---------------------------------------------------------------------

    def _record(self, mail: ParsedMail, mailbox: str, thread_root: str, parent: str | None,
                touched: tuple[int, ...], raised: tuple[int, ...],
                ops: tuple[dict[str, object], ...]) -> None:
        self.state.record(MailRecord(
            message_id=mail.message_id, mailbox=mailbox, thread_root=thread_root,
            parent_id=parent, subject_key=base_subject(mail.subject), from_addr=mail.from_addr,
            ticket_ids=tuple(dict.fromkeys(touched)), raised=raised, ops=ops,
        ), self.clock.now())

    def _quarantine(self, mailbox: str, source_key: str, message_id: str | None, reason: str,
                    raw: bytes) -> str:
        log.warning("quarantined %s/%s: %s", mailbox, source_key, reason)
        self.state.quarantine(mailbox, source_key, message_id, reason, raw, self.clock.now())
        return "quarantined"


MAX_WALK = 64


def _branch(mail: ParsedMail, records: list[MailRecord], by_id: dict[str, MailRecord],
            issues: tuple[IssueView, ...]) -> list[int]:
    """The issues this mail most likely continues, likeliest first (``MailContext.chain``):

    1. issues raised by its ancestors, nearest first — those its own References and
       In-Reply-To name, then those found by walking the stored parent links up from the
       nearest known one (References are often cut short);
    2. issues its ancestors answered or changed (a reply to an answer is about the
       answered issue);
    3. the sender's own open issues in the thread, latest first;
    4. issues raised or changed by its siblings (mails with the same parent).

    Before this, only (1) from the mail's own headers was used, and everything else fell
    to the thread's latest open issue — often another branch's."""
    ancestors: list[MailRecord] = []
    seen: set[str] = set()
    for mid in reversed(mail.parent_ids):
        record = by_id.get(mid)
        if record is not None and mid not in seen:
            ancestors.append(record)
            seen.add(mid)
    step = ancestors[0] if ancestors else None
    for _ in range(MAX_WALK):  # the stored chain above the nearest known parent
        if step is None or step.parent_id is None:
            break
        step = by_id.get(step.parent_id)
        if step is not None and step.message_id not in seen:
            ancestors.append(step)
            seen.add(step.message_id)
    chain: dict[int, None] = {}
    for record in ancestors:
        chain.update(dict.fromkeys(reversed(record.raised)))
    for record in ancestors:
        chain.update(dict.fromkeys(t for t in reversed(record.ticket_ids)))
    sender = mail.from_addr
    if sender:
        chain.update(dict.fromkeys(
            i.id for i in reversed(issues) if i.raised_by.lower() == sender and i.status in
            ("open", "in_progress", "deferred", "answered")))
    parent = ancestors[0].message_id if ancestors else (
        mail.parent_ids[-1] if mail.parent_ids else None)
    if parent is not None:
        for record in reversed(records):
            if record.parent_id == parent and record.message_id != mail.message_id:
                chain.update(dict.fromkeys((*reversed(record.raised), *record.ticket_ids)))
    return list(chain)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:500]}"


def _outcome(results: list[Applied]) -> str:
    ops = [r.op for r in results]
    if any(o.op == "add" for o in ops):
        return "added"
    if any(o.op == "complete" or o.new_status == "cancelled" for o in ops):
        return "closed"
    if any(o.op == "answer" for o in ops):
        return "answered"
    if any(o.op == "status" for o in ops):
        return "status"
    return "ignored"


def operations_of(results: list[Applied]) -> list[Operation]:
    return [r.op for r in results]
