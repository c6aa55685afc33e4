"""Fixtures for the mail tests: mail builders, a pipeline on the test hub, the sample
mailbox, the mail-parser hostile corpus (downloaded once into a cache), the real
IMAP/SMTP servers from ../shared/recipes."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path

import pytest

from tests.conftest import IN_CI, require_server
from tickethub.mail.build import make_pipeline
from tickethub.mail.extractors.rules import RulesExtractor
from tickethub.mail.pipeline import MailPipeline
from tickethub.server.runtime import HubRuntime

SHARED = Path(__file__).resolve().parents[3] / "shared"
SAMPLE_MBOX = SHARED / "fixtures" / "email" / "sample.mbox"
SAMPLE_LABELS = SHARED / "fixtures" / "email" / "sample.labels.json"
CACHE = Path(os.environ.get("TICKETHUB_TEST_CACHE", Path.home() / ".cache" / "tickethub-tests"))


def make_mail(
    body: str = "Hello",
    *,
    subject: str = "Question",
    sender: str = "alice@example.org",
    to: str = "list@example.org",
    message_id: str | None = "<m1@example.org>",
    in_reply_to: str | None = None,
    references: str | None = None,
    html: str | None = None,
    headers: dict[str, str] | None = None,
) -> bytes:
    """A well-formed mail as bytes (plain, or plain+HTML, or HTML only with body='')."""
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = format_datetime(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))
    if message_id:
        msg["Message-ID"] = message_id
    if in_reply_to:
        msg["In-Reply-To"] = in_reply_to
    if references:
        msg["References"] = references
    for name, value in (headers or {}).items():
        msg[name] = value
    if html is not None and not body:
        msg.set_content(html, subtype="html")
    else:
        msg.set_content(body)
        if html is not None:
            msg.add_alternative(html, subtype="html")
    return msg.as_bytes()


@pytest.fixture
def pipeline(runtime: HubRuntime) -> MailPipeline:
    return make_pipeline(runtime, RulesExtractor())


def _download_sdist(name: str, target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    found = sorted(target.glob(f"{name.replace('-', '_')}-*.tar.gz"))
    if found:
        return found[-1]
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
            "-d", str(target), name]
    try:
        import hatchling  # noqa: F401  # mail-parser builds with hatchling: skip isolation

        base.insert(-1, "--no-build-isolation")
    except ImportError:
        pass
    subprocess.run(base, check=True, capture_output=True, timeout=600)
    return sorted(target.glob(f"{name.replace('-', '_')}-*.tar.gz"))[-1]


@pytest.fixture(scope="session")
def hostile_corpus() -> Iterator[list[tuple[str, bytes]]]:
    """The test mails of the PyPI ``mail-parser`` sdist (malformed, Outlook, odd charsets),
    fetched with ``pip download`` into the test cache on first use."""
    try:
        sdist = _download_sdist("mail-parser", CACHE / "mail-parser")
    except (subprocess.SubprocessError, OSError, IndexError) as exc:
        if IN_CI:
            pytest.fail(f"cannot download the mail-parser sdist: {exc}")
        pytest.skip(f"cannot download the mail-parser sdist: {exc}")
    mails: list[tuple[str, bytes]] = []
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            if "/tests/mails/" in member.name and member.isfile():
                handle = tar.extractfile(member)
                assert handle is not None
                mails.append((member.name.rsplit("/", 1)[-1], handle.read()))
    assert mails, "the sdist has no tests/mails"
    yield sorted(mails)


class MailServers:
    def __init__(self, env: dict[str, str]) -> None:
        self.imap_host = env["IMAP_HOST"]
        self.imap_port = int(env["IMAP_PORT"])
        self.smtp_host = env["SMTP_HOST"]
        self.smtp_port = int(env["SMTP_PORT"])
        self.user = env.get("IMAP_USER", "hub")
        self.password = env["IMAP_PASSWORD"]
        self.domain = env.get("MAIL_DOMAIN", "localhost")
        self.mail_root = Path(env["MAIL_ROOT"]) if env.get("MAIL_ROOT") else None


@pytest.fixture
def mail_servers() -> MailServers:
    require_server("IMAP", "IMAP_HOST" in os.environ)
    require_server("SMTP", "SMTP_HOST" in os.environ)
    return MailServers(dict(os.environ))
