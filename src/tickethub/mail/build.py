"""Wiring the pipeline from a component :class:`~tickethub.services.host.Host` and settings,
and driving it over a source with a progress callback. Used by the CLI and the tests."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sized
from typing import TYPE_CHECKING

from tickethub.mail.apply import VIA
from tickethub.mail.extractors.base import Extractor
from tickethub.mail.parse_pool import parsed_ahead, workers_for
from tickethub.mail.pipeline import MailPipeline, ReplyHandler
from tickethub.mail.sources import RawMail
from tickethub.mail.state_cache import PRELOAD_CAP, CachedMailState
from tickethub.store.mail_store import SqlMailState

if TYPE_CHECKING:
    from tickethub.services.host import Host


def make_extractor(name: str, runtime: Host | None = None) -> Extractor:
    """``rules`` (offline cues), ``learned`` (offline, the model shipped in the package)
    or ``llm`` (the model configured for the hub)."""
    if name == "rules":
        from tickethub.mail.extractors.rules import RulesExtractor

        return RulesExtractor()
    if name == "learned":
        from tickethub.mail.extractors.learned import LearnedExtractor

        return LearnedExtractor()
    if name == "llm":
        from tickethub.mail.extractors.llm import LLMExtractor, configured_llm

        assert runtime is not None
        return LLMExtractor(configured_llm(runtime.settings))
    from tickethub.errors import ValidationFailed

    raise ValidationFailed(f"unknown extractor {name!r}; use rules, learned or llm",
                           field="extractor")


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
        ignore=getattr(settings, "mail_ignore", ("spam", "bulk")),
    )


BATCH_MAILS = 500
BATCH_SECONDS = 1.0


async def ingest(pipeline: MailPipeline, mailbox: str, mails: Iterable[RawMail],
                 progress: Callable[[str], None] | None = None, *,
                 bulk: bool = True, batch_mails: int = BATCH_MAILS,
                 batch_seconds: float = BATCH_SECONDS,
                 parse_workers: int | None = None) -> dict[str, int]:
    """Process every mail of ``mails`` (in order); returns the run summary.

    A bulk run (unless ``bulk=False``: one mail at a time, as under ``serve``): the
    mails' writes are committed together, one transaction per
    ``batch_mails`` mails or ``batch_seconds`` of work, whichever comes first (a slow
    extractor commits every mail); the mail records, the tickets the run touches and
    its history notes are kept in memory for the run (``mail.state_cache``,
    ``OperationApplier.remember``), and the mails are parsed in worker processes ahead
    of the writer (``mail.parse_pool``; ``parse_workers``, default: by the source's size
    and the cores). A run that dies loses at most the open batch, which the next run
    redoes (ingesting is idempotent)."""
    store = getattr(pipeline.state, "store", None)
    if not bulk or store is None or not hasattr(store, "batch"):
        for raw in mails:
            outcome = await pipeline.process(mailbox, raw.key, raw.raw)
            if progress is not None:
                progress(outcome)
        return pipeline.summary.as_dict()
    inner = pipeline.state
    assert isinstance(inner, SqlMailState)
    clock = time.monotonic
    if parse_workers is None:
        parse_workers = workers_for(len(mails) if isinstance(mails, Sized) else None)
    try:
        records = inner.records(PRELOAD_CAP)
        pipeline.state = cache = (CachedMailState(inner, inner.message_ids())
                                  if records is None
                                  else CachedMailState.preloaded(inner, records))
        pipeline.views = {}
        pipeline.applier.remember(inner.noted_keys(VIA))
        source = parsed_ahead(mails, max_bytes=pipeline.max_bytes, workers=parse_workers,
                              ignore=pipeline.ignore)
        more = True
        while more:
            with store.batch():
                started = clock()
                for count, (raw, parsed) in enumerate(source, 1):
                    outcome = await pipeline.process(mailbox, raw.key, raw.raw, parsed)
                    if progress is not None:
                        progress(outcome)
                    if count >= batch_mails or clock() - started >= batch_seconds:
                        break
                else:
                    more = False
                pipeline.applier.flush()
                cache.flush()
    finally:
        pipeline.state = inner
        pipeline.views = None
        pipeline.applier.stop()
    return pipeline.summary.as_dict()
