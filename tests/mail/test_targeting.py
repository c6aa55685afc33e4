"""Targeting walks the stored thread: an answer lands on its own branch's issue, not on the
thread's latest one; a hijacked thread whose parent is not in the mailbox is a new topic.

The extractor here is scripted (add when the body says "ASK", else answer), and picks its
target the way the ``rules`` extractor does — the first issue of ``context.chain``, else
the thread's latest open issue — so what is tested is the context the pipeline builds."""

from __future__ import annotations

from tests.mail.conftest import make_mail
from tickethub.mail.build import make_pipeline
from tickethub.mail.extractors.base import MailContext
from tickethub.mail.operations import Operation
from tickethub.mail.parse import ParsedMail
from tickethub.server.runtime import HubRuntime


class BranchExtractor:
    name = "scripted"

    def __init__(self) -> None:
        self.contexts: dict[str, MailContext] = {}

    async def extract(self, mail: ParsedMail, context: MailContext) -> list[Operation]:
        self.contexts[mail.message_id] = context
        quote = mail.own_text.strip().splitlines()[0]
        if "ASK" in quote or context.new_topic or not context.thread_issues:
            return [Operation(op="add", kind="question", title=mail.subject, evidence=quote)]
        target = next((i for i in context.chain if context.issue(i) is not None), None)
        if target is None:
            target = context.thread_issues[-1].id
        return [Operation(op="answer", target=target, evidence=quote)]


async def test_an_answer_deep_in_a_branch_lands_on_its_branch(runtime: HubRuntime) -> None:
    extractor = BranchExtractor()
    pipeline = make_pipeline(runtime, extractor)  # type: ignore[arg-type]
    mails = [
        make_mail("ASK how do I mount the NFS share?", subject="NFS", message_id="<q1@x>",
                  sender="alice@example.org"),
        make_mail("Use mount -t nfs host:/share /mnt.", subject="Re: NFS",
                  message_id="<a1@x>", in_reply_to="<q1@x>", references="<q1@x>",
                  sender="bob@example.org"),
        make_mail("ASK and how do I make it permanent? Same here with autofs.",
                  subject="Re: NFS", message_id="<q2@x>", in_reply_to="<q1@x>",
                  references="<q1@x>", sender="carol@example.org"),
        # replies to bob's answer; its client kept only In-Reply-To (no References)
        make_mail("Thanks, that worked for the share.", subject="Re: NFS",
                  message_id="<r1@x>", in_reply_to="<a1@x>", sender="alice@example.org"),
    ]
    for index, raw in enumerate(mails):
        await pipeline.process("box", str(index), raw)
    first = pipeline.state.get("<q1@x>")
    second = pipeline.state.get("<q2@x>")
    last = pipeline.state.get("<r1@x>")
    assert first is not None and second is not None and last is not None
    assert first.raised and second.raised and first.raised != second.raised
    # the thread's latest issue is carol's; alice's reply to bob's answer is about hers
    assert last.ticket_ids == first.raised
    assert extractor.contexts["<r1@x>"].chain[0] == first.raised[0]


async def test_the_senders_own_issue_comes_before_the_latest(runtime: HubRuntime) -> None:
    extractor = BranchExtractor()
    pipeline = make_pipeline(runtime, extractor)  # type: ignore[arg-type]
    await pipeline.process("box", "1", make_mail(
        "ASK printer jams", subject="Printer", message_id="<p1@x>", sender="dan@example.org",
        references="<gone@x>"))
    await pipeline.process("box", "2", make_mail(
        "ASK mine too, on tray 2", subject="Re: Printer", message_id="<p2@x>",
        sender="eve@example.org", references="<gone@x>"))
    # dan follows up to the lost first mail: his own issue, not eve's newer one
    await pipeline.process("box", "3", make_mail(
        "Cleaning the rollers fixed it.", subject="Re: Printer", message_id="<p3@x>",
        sender="dan@example.org", references="<gone@x>"))
    p1, p3 = pipeline.state.get("<p1@x>"), pipeline.state.get("<p3@x>")
    assert p1 is not None and p3 is not None
    assert p3.ticket_ids == p1.raised


async def test_a_hijack_under_a_missing_parent_is_a_new_topic(runtime: HubRuntime) -> None:
    extractor = BranchExtractor()
    pipeline = make_pipeline(runtime, extractor)  # type: ignore[arg-type]
    await pipeline.process("box", "1", make_mail(
        "ASK the printer jams", subject="Printer jam", message_id="<h1@x>",
        references="<missing-root@x>"))
    await pipeline.process("box", "2", make_mail(
        "Anyone know a good VPN client for Linux?", subject="VPN client",
        message_id="<h2@x>", references="<missing-root@x>", sender="frank@example.org"))
    await pipeline.process("box", "3", make_mail(
        "Open the back cover and pull.", subject="Re: Printer jam", message_id="<h3@x>",
        references="<missing-root@x>", sender="gina@example.org"))
    assert extractor.contexts["<h2@x>"].new_topic is True
    assert extractor.contexts["<h3@x>"].new_topic is False
    h1, h2 = pipeline.state.get("<h1@x>"), pipeline.state.get("<h2@x>")
    assert h1 is not None and h2 is not None
    assert h2.raised and h2.raised != h1.raised  # a new question, not an answer to h1's


async def test_a_reply_whose_parents_are_all_missing_joins_its_subjects_thread(
        runtime: HubRuntime) -> None:
    """List archives drop mails: a reply naming only mails that are not in the mailbox
    lands in the earlier thread with its base subject (as one without References does),
    so it answers that thread's question instead of starting a thread with no issue."""
    extractor = BranchExtractor()
    pipeline = make_pipeline(runtime, extractor)  # type: ignore[arg-type]
    await pipeline.process("box", "1", make_mail(
        "ASK how do I back up a running database?", subject="[db] Backups",
        message_id="<b1@x>", sender="hal@example.org"))
    await pipeline.process("box", "2", make_mail(
        "Use pg_dump, it takes a consistent snapshot.", subject="Re: [db] Backups",
        message_id="<b2@x>", in_reply_to="<lost@x>", references="<lost-too@x> <lost@x>",
        sender="ivy@example.org"))
    await pipeline.process("box", "3", make_mail(
        "Unrelated words.", subject="Lunch on Friday", message_id="<b3@x>",
        in_reply_to="<lost-3@x>", sender="joe@example.org"))
    b1, b2, b3 = (pipeline.state.get(f"<b{n}@x>") for n in (1, 2, 3))
    assert b1 is not None and b2 is not None and b3 is not None
    assert b2.thread_root == b1.thread_root and b2.ticket_ids == b1.raised
    assert extractor.contexts["<b2@x>"].new_topic is False
    assert b3.thread_root == "<lost-3@x>"  # no "Re:", no earlier subject: its own thread


async def test_a_reply_without_references_follows_the_latest_mail_of_its_subject(
        runtime: HubRuntime) -> None:
    """A reply that lost its references joins its subject's thread under the *latest*
    mail with that subject, so it lands on the question asked most recently there (a
    repost), not on the thread's first one."""
    extractor = BranchExtractor()
    pipeline = make_pipeline(runtime, extractor)  # type: ignore[arg-type]
    await pipeline.process("box", "1", make_mail(
        "ASK razor does not start from sendmail", subject="Razor with sendmail",
        message_id="<s1@x>", sender="kim@example.org"))
    await pipeline.process("box", "2", make_mail(
        "ASK again, now with the milter: how do I hook razor in?",
        subject="Re: Razor with sendmail", message_id="<s2@x>", sender="kim@example.org"))
    await pipeline.process("box", "3", make_mail(
        "Add the milter line to sendmail.mc and rebuild.", subject="RE: Razor with sendmail",
        message_id="<s3@x>", sender="lee@example.org"))
    s1, s2, s3 = (pipeline.state.get(f"<s{n}@x>") for n in (1, 2, 3))
    assert s1 is not None and s2 is not None and s3 is not None
    assert s1.raised and s2.raised and s1.raised != s2.raised
    assert s3.thread_root == s1.thread_root and s3.parent_id == "<s2@x>"
    assert s3.ticket_ids == s2.raised
