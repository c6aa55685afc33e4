"""The bulk ingest fast path (issue 16): parsing in worker processes ahead of the writer
(``mail.parse_pool``), and a run's tickets, history notes and mail records kept in memory
(``OperationApplier.remember``, ``CachedMailState.preloaded``) — the same tree, notes,
quarantine and idempotency as one mail at a time."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from tests.mail.conftest import SAMPLE_MBOX, make_mail
from tickethub.mail import parse_pool
from tickethub.mail.build import ingest, make_pipeline
from tickethub.mail.extractors.rules import RulesExtractor
from tickethub.mail.parse import ParsedMail, UnreadableMail
from tickethub.mail.sources import FileSource, RawMail
from tickethub.mail.tree import export_tree
from tickethub.server.runtime import HubRuntime
from tickethub.store.mail_store import SqlMailState


def sample() -> list[RawMail]:
    return list(FileSource(SAMPLE_MBOX))


def with_bad_mails() -> list[RawMail]:
    mails = sample()[:5]
    bad = [b"", b"no header lines at all, just words", make_mail("x" * 5000)]
    return [*mails, *(RawMail(f"bad{i}", raw) for i, raw in enumerate(bad))]


def outcome(parsed: ParsedMail | UnreadableMail) -> str:
    return parsed.message_id if isinstance(parsed, ParsedMail) else f"! {parsed.reason}"


def test_parsed_ahead_keeps_the_order_and_the_reasons_of_parsing_here() -> None:
    mails = with_bad_mails()
    here = [(m.key, outcome(p)) for m, p in parse_pool.parsed_ahead(
        mails, max_bytes=4000, workers=0)]
    pooled = [(m.key, outcome(p)) for m, p in parse_pool.parsed_ahead(
        mails, max_bytes=4000, workers=1, chunk=2)]
    assert pooled == here
    assert [key for key, _ in here] == [m.key for m in mails]
    assert [o for _, o in here[-3:]] == [
        "! empty input", "! no header lines: this is not a mail",
        f"! mail is {len(mails[-1].raw)} bytes, over the limit of 4000"]


def test_a_parser_crash_becomes_the_reason_the_pipeline_gives(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(raw: bytes, **_options: Any) -> ParsedMail:
        raise RecursionError("too deep")

    monkeypatch.setattr(parse_pool, "parse_mail", broken)
    [(_, parsed)] = parse_pool.parsed_ahead(sample()[:1], max_bytes=10**6, workers=0)
    assert isinstance(parsed, UnreadableMail)
    assert parsed.reason == "parser crashed: RecursionError: too deep"


class BreakingPool:
    """A pool whose second task fails as a killed worker's does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.tasks = 0

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        self.tasks += 1
        future: Future[Any] = Future()
        if self.tasks == 2:
            future.set_exception(RuntimeError("a worker died"))
        else:
            future.set_result(fn(*args))
        return future

    def shutdown(self, **kwargs: Any) -> None:
        pass


def test_a_broken_pool_falls_back_to_parsing_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_pool, "spawn_pool", BreakingPool)
    mails = sample()
    got = [(m.key, outcome(p)) for m, p in parse_pool.parsed_ahead(
        mails, max_bytes=10**6, workers=1, chunk=3)]
    want = [(m.key, outcome(p)) for m, p in parse_pool.parsed_ahead(
        mails, max_bytes=10**6, workers=0)]
    assert got == want and len(got) == 37


def test_workers_only_for_a_mailbox_worth_a_pool() -> None:
    assert parse_pool.workers_for(None) == 0
    assert parse_pool.workers_for(parse_pool.MIN_MAILS - 1) == 0
    assert 0 <= parse_pool.workers_for(10_000) <= 4


def history(runtime: HubRuntime) -> list[tuple[Any, ...]]:
    """Every issue with its kind, status and messages (notes with their data), in order,
    without database ids."""
    tree = export_tree(runtime.tickets)
    out = []
    for issue in sorted(tree["issues"], key=lambda i: i["source_message_id"]):
        messages = runtime.tickets.messages(issue["id"])
        out.append((issue["source_message_id"], issue["kind"], issue["status"],
                    issue["title"], [(m.body, m.external_id, m.data) for m in messages]))
    return out


def reasons(runtime: HubRuntime) -> list[str]:
    return [q.reason for q in SqlMailState(runtime.store).quarantined()]


async def test_the_fast_path_builds_what_one_mail_at_a_time_builds(
        runtime: HubRuntime, tmp_path: Path) -> None:
    slow_runtime = HubRuntime(runtime.settings.model_copy(
        update={"data_dir": tmp_path / "slow", "database_url": None}))
    try:
        await ingest(make_pipeline(slow_runtime, RulesExtractor()), "sample",
                     sample()[:20], bulk=False)
        slow = await ingest(make_pipeline(slow_runtime, RulesExtractor()), "sample",
                            with_bad_mails() + sample(), bulk=False)
        expected = history(slow_runtime)
        quarantined = reasons(slow_runtime)
    finally:
        slow_runtime.close()
    # a mailbox read in two runs: the second starts from the first's records (preloaded)
    await ingest(make_pipeline(runtime, RulesExtractor()), "sample", sample()[:20],
                 parse_workers=1, batch_mails=7)
    pipeline = make_pipeline(runtime, RulesExtractor())
    fast = await ingest(pipeline, "sample", with_bad_mails() + sample(), parse_workers=1,
                        batch_mails=7)
    assert fast == slow
    assert history(runtime) == expected
    assert reasons(runtime) == quarantined and len(quarantined) == 2
    again = await ingest(make_pipeline(runtime, RulesExtractor()), "sample", sample(),
                         parse_workers=1)
    assert again["skipped"] == 37 and again["added"] == 0
    assert history(runtime) == expected
