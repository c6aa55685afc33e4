"""Wiring the pipeline from a component :class:`~tickethub.services.host.Host` and settings,
and driving it over a source with a progress callback. Used by the CLI and the tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from tickethub.mail.extractors.base import Extractor
from tickethub.mail.pipeline import MailPipeline, ReplyHandler
from tickethub.mail.sources import RawMail
from tickethub.store.mail_store import SqlMailState

if TYPE_CHECKING:
    from tickethub.services.host import Host


def make_extractor(name: str, runtime: Host | None = None) -> Extractor:
    """``rules`` (offline) or ``llm`` (the model configured for the hub)."""
    if name == "rules":
        from tickethub.mail.extractors.rules import RulesExtractor

        return RulesExtractor()
    if name == "llm":
        from tickethub.mail.extractors.llm import LLMExtractor, configured_llm

        assert runtime is not None
        return LLMExtractor(configured_llm(runtime.settings))
    from tickethub.errors import ValidationFailed

    raise ValidationFailed(f"unknown extractor {name!r}; use rules or llm", field="extractor")


def make_pipeline(runtime: Host, extractor: Extractor, *, root_issue: int | None = None,
                  reply_handler: ReplyHandler | None = None) -> MailPipeline:
    settings = runtime.settings
    return MailPipeline(
        runtime.tickets, SqlMailState(runtime.store), extractor, runtime.clock,
        root_issue=root_issue if root_issue is not None else getattr(
            settings, "mail_root_issue", None),
        max_bytes=getattr(settings, "mail_max_bytes", 25 * 1024 * 1024),
        defer_days=getattr(settings, "mail_defer_days", 7.0),
        reply_handler=reply_handler,
    )


async def ingest(pipeline: MailPipeline, mailbox: str, mails: Iterable[RawMail],
                 progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """Process every mail of ``mails`` (in order); returns the run summary."""
    for raw in mails:
        outcome = await pipeline.process(mailbox, raw.key, raw.raw)
        if progress is not None:
            progress(outcome)
    return pipeline.summary.as_dict()
