"""The hostile test mails of the PyPI ``mail-parser`` sdist: every one is either processed
or quarantined with a reason, and the run never stops."""

from __future__ import annotations

from tickethub.mail.build import ingest
from tickethub.mail.parse import UnreadableMail, parse_mail
from tickethub.mail.pipeline import MailPipeline
from tickethub.mail.sources import RawMail


def test_every_corpus_mail_parses_or_is_refused_with_a_reason(
        hostile_corpus: list[tuple[str, bytes]]) -> None:
    assert len(hostile_corpus) >= 20
    outcomes = {}
    for name, raw in hostile_corpus:
        try:
            mail = parse_mail(raw)
        except UnreadableMail as exc:
            assert exc.reason
            outcomes[name] = "refused"
            continue
        assert mail.message_id.startswith("<") and mail.message_id.endswith(">")
        assert isinstance(mail.own_text, str)
        outcomes[name] = "parsed"
    assert outcomes["mail_test_1"] == "parsed"
    assert sum(o == "parsed" for o in outcomes.values()) >= len(outcomes) - 3


async def test_the_corpus_through_the_pipeline(hostile_corpus: list[tuple[str, bytes]],
                                               pipeline: MailPipeline) -> None:
    mails = [RawMail(name, raw) for name, raw in hostile_corpus]
    summary = await ingest(pipeline, "mail-parser-corpus", mails)
    assert summary["read"] == len(mails)
    handled = sum(summary[k] for k in ("added", "answered", "closed", "status", "ignored",
                                       "skipped", "quarantined", "replies"))
    assert handled == len(mails)
    for item in pipeline.state.quarantined():
        assert item.reason and not item.reason.startswith("processing failed")
