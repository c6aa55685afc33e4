"""``tickethub mail ...`` end to end with click's runner, on a SQLite hub in a temp dir."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.mail.conftest import SAMPLE_LABELS, SAMPLE_MBOX, make_mail
from tickethub.cli.main import cli
from tickethub.domain.actors import SYSTEM
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketDraft
from tickethub.mail.digest import build_digest, digest_email, digest_markdown
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings
from tickethub.testing import FakeClock


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.delenv("TICKETHUB_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args: str) -> tuple[int, str, str]:
        result = runner.invoke(cli, [*args], catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return invoke


def test_ingest_tree_score(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = str(tmp_path / "data")
    code, out, _ = run("mail", "ingest", str(SAMPLE_MBOX), "--data-dir", data, "--json")
    assert code == 0
    summary = json.loads(out)
    assert summary["read"] == 37 and summary["added"] == 10 and summary["quarantined"] == 0
    code, out, _ = run("mail", "ingest", str(SAMPLE_MBOX), "--data-dir", data, "--json")
    assert json.loads(out)["skipped"] == 37
    code, out, _ = run("mail", "tree", "--format", "json", "--data-dir", data)
    tree = json.loads(out)
    assert len(tree["issues"]) == 10
    (tmp_path / "tree.json").write_text(out)
    code, out, _ = run("mail", "score", str(SAMPLE_LABELS), "--tree", str(tmp_path / "tree.json"),
                     "--json")
    result = json.loads(out)
    assert result["op_accuracy"] >= 0.9 and result["emails"] == 37
    code, out, _ = run("mail", "tree", "--data-dir", data)
    assert out.startswith("- [") and "Nessus?" in out


def test_score_builds_its_own_scratch_tree(run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run("mail", "score", str(SAMPLE_LABELS), "--mbox", str(SAMPLE_MBOX), "--json")
    assert code == 0
    result = json.loads(out)
    assert set(result) >= {"op_accuracy", "target_accuracy", "closing_precision",
                           "duplicate_rate"}


def test_quarantine_listing_and_maildir_source(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    maildir = tmp_path / "Maildir"
    for sub in ("cur", "new", "tmp"):
        (maildir / sub).mkdir(parents=True)
    (maildir / "new" / "1.a").write_bytes(make_mail("Why does the cron job fail?",
                                                    subject="cron", message_id="<c@x>"))
    (maildir / "new" / "2.b").write_bytes(b"\x00\x01\x02 not mail")
    data = str(tmp_path / "data")
    code, out, _ = run("mail", "ingest", str(maildir), "--data-dir", data, "--json")
    summary = json.loads(out)
    assert summary["added"] == 1 and summary["quarantined"] == 1
    code, out, _ = run("mail", "quarantine", "--data-dir", data)
    assert code == 0 and "2.b" in out and "no header" in out


@pytest.mark.parametrize("args, exit_code, field", [
    (("mail", "ingest", "/no/such/file.mbox"), 6, "source"),
    (("mail", "ingest", "http://example.org/INBOX"), 6, "source"),
    (("mail", "watch"), 2, "url"),
])
def test_bad_input_is_one_line_with_the_field(run, args, exit_code, field) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run(*args)
    assert code == exit_code
    assert f"field {field}" in err and err.count("\n") == 1


def test_digest(tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    hub = HubRuntime(Settings(data_dir=tmp_path), clock=clock)
    try:
        root, _ = hub.tickets.ask(SYSTEM, TicketDraft(Kind.INFO, "Mail"))
        a, _ = hub.tickets.ask(SYSTEM, TicketDraft(
            Kind.TASK, "Renew the TLS certificate", parent_id=root.id,
            due_at=clock.now() + timedelta(hours=1)))
        b, _ = hub.tickets.ask(SYSTEM, TicketDraft(Kind.QUESTION, "Which VPN client?",
                                                   parent_id=root.id))
        c, _ = hub.tickets.ask(SYSTEM, TicketDraft(Kind.TASK, "Rotate keys", parent_id=root.id))
        old, _ = hub.tickets.ask(SYSTEM, TicketDraft(Kind.TASK, "Old work", parent_id=root.id))
        hub.tickets.transition(SYSTEM, old.id, Status.DONE, "cli")
        clock.advance(days=8)
        hub.tickets.transition(SYSTEM, c.id, Status.DONE, "cli")
        digest = build_digest(hub.tickets, clock.now(), root_issue=root.id, stalled_days=7)
    finally:
        hub.close()
    assert [t.id for t in digest.overdue] == [a.id]  # overdue, not also stalled
    assert [t.id for t in digest.stalled] == [b.id]
    assert [t.id for t in digest.done] == [c.id]  # done today; "Old work" is not new
    text = digest_markdown(digest)
    assert "## Overdue (1)" in text and "Renew the TLS certificate" in text
    message = digest_email(digest, text, "hub@example.org", ["ops@example.org"])
    assert "1 overdue, 1 stalled, 1 done" in str(message["Subject"])
    assert message.get_content().startswith("# Digest for")
