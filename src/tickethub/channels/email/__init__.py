"""The email channel: ticket notifications over SMTP to the people assigned
(:class:`EmailChannel`), and their replies answering the ticket (:class:`ReplyReader`,
used by the mail pipeline for every mail it reads). :func:`install` wires both into a
running hub; :data:`component` is the channel as a hub component."""

from __future__ import annotations

import asyncio
import logging
from contextlib import AbstractContextManager
from functools import partial
from typing import Any

from tickethub.channels.email.channel import EmailChannel
from tickethub.channels.email.replies import ReplyReader
from tickethub.channels.email.smtp import SmtpSender
from tickethub.services.host import Component, Host
from tickethub.settings import Settings

__all__ = ["EmailChannel", "ReplyReader", "SmtpSender", "component", "install"]

log = logging.getLogger(__name__)


def install(runtime: Host) -> None:
    """With ``smtp_host``: notify assignees by mail. With ``imap_url`` and
    ``imap_password``: follow that mailbox while the hub runs (IDLE) — replies answer
    tickets, other mail feeds the issue tree. Call before ``runtime.running()``."""
    settings = runtime.settings
    if settings.smtp_host:
        runtime.add_channel(EmailChannel.from_runtime(runtime))
    if settings.imap_url:
        if settings.imap_password is None:
            log.warning("imap_url is set but imap_password is not: the hub does not follow "
                        "the mailbox (run `tickethub mail watch`, which prompts)")
            return
        runtime.add_loop(lambda: follow_mailbox(runtime))


async def follow_mailbox(runtime: Host) -> None:
    from tickethub.mail.build import make_extractor, make_pipeline
    from tickethub.mail.imap import ImapMailbox, ImapURL
    from tickethub.mail.sources import RawMail
    from tickethub.store.mail_store import SqlMailState

    settings = runtime.settings
    assert settings.imap_url is not None and settings.imap_password is not None
    # Each fetched chunk is processed in a worker thread, in one transaction with its
    # cursor (the writes of mail ingest's bulk runs, not one transaction per write), so
    # the hub's event loop stays free; the rules and learned extractors only (the llm
    # extractor's client belongs to the hub's loop: it goes mail by mail on the loop).
    # An email answer in a chunk is written in the chunk's transaction (``handle``, in
    # that thread); mail by mail on the loop it joins the hub's group commit (``ahandle``,
    # from a worker thread). Never ``ahandle`` inside a chunk: its write would queue on
    # the group commit, whose drain waits for the chunk's own transaction.
    store = runtime.store
    reply = ReplyReader.from_runtime(runtime)
    chunked = hasattr(store, "batch") and settings.mail_extractor in ("rules", "learned")
    pipeline = make_pipeline(runtime, make_extractor(settings.mail_extractor, runtime),
                             reply_handler=reply.handle if chunked else reply.ahandle)
    box = ImapMailbox(ImapURL.parse(settings.imap_url),
                      settings.imap_password.get_secret_value(), SqlMailState(store),
                      runtime.clock, batch=settings.imap_batch,
                      write_batch=partial(_chunk_transaction, store) if chunked else None,
                      in_thread=chunked)

    async def process(raw: RawMail) -> str:
        return await pipeline.process(box.name, raw.key, raw.raw)

    stop = asyncio.Event()
    try:
        while True:
            try:
                await box.watch(process, idle_seconds=settings.imap_idle_seconds, stop=stop)
                return
            except Exception:  # server away longer than the retries: try again later
                log.exception("following %s failed; retrying in 30 s", box.name)
                box.close()
                await asyncio.sleep(30)
    finally:
        stop.set()  # lets a thread waiting in IDLE return within a second
        box.close()


def _chunk_transaction(store: Any) -> AbstractContextManager[None]:
    """One transaction for a chunk of mail and its cursor, in the worker thread that
    processes it. The ticket writes join it: they run on the chunk's own event loop, where
    ``GroupCommit.submit_blocking`` commits in the calling thread instead of queueing on
    the hub's group commit (whose drain would wait on this very transaction)."""
    batch: AbstractContextManager[None] = store.batch()
    return batch


def _enabled(settings: Settings) -> bool:
    return bool(settings.smtp_host or settings.imap_url)


component = Component("email", _enabled, install)
