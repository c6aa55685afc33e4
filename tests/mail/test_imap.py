"""Against the real Dovecot IMAP server and aiosmtpd SMTP server of ../shared/recipes:
ingest with a cursor, resume after the server drops the connection mid-fetch, IDLE."""

from __future__ import annotations

import asyncio
import contextlib
import imaplib
import smtplib
import socket
import threading
import uuid
from email.message import EmailMessage
from pathlib import Path

import pytest
from imapclient.exceptions import LoginError

from tests.mail.conftest import SAMPLE_MBOX, MailServers
from tickethub.mail.build import make_pipeline
from tickethub.mail.extractors.rules import RulesExtractor
from tickethub.mail.imap import ImapMailbox, ImapURL
from tickethub.mail.sources import FileSource, RawMail
from tickethub.mail.tree import export_tree
from tickethub.server.runtime import HubRuntime
from tickethub.store.mail_store import SqlMailState


def fill_folder(servers: MailServers, folder: str, mails: list[bytes]) -> None:
    """APPEND mails with the standard library's IMAP client (as any mail client would)."""
    client = imaplib.IMAP4(servers.imap_host, servers.imap_port)
    client.login(servers.user, servers.password)
    client.create(folder)
    for raw in mails:
        status, _ = client.append(folder, None, None, raw)
        assert status == "OK"
    client.logout()


def mailbox_for(servers: MailServers, runtime: HubRuntime, folder: str, *,
                port: int | None = None, batch: int = 10,
                batched_writes: bool = False) -> ImapMailbox:
    url = ImapURL.parse(f"imap://{servers.user}@{servers.imap_host}:"
                        f"{port or servers.imap_port}/{folder}")
    return ImapMailbox(url, servers.password, SqlMailState(runtime.store), runtime.clock,
                       batch=batch, retry_delay=0.05,
                       write_batch=runtime.store.batch if batched_writes else None)


def sample_bytes() -> list[bytes]:
    return [m.raw for m in FileSource(SAMPLE_MBOX)]


async def test_ingest_from_imap_with_a_cursor(mail_servers: MailServers,
                                              runtime: HubRuntime) -> None:
    folder = f"T{uuid.uuid4().hex[:10]}"
    fill_folder(mail_servers, folder, sample_bytes()[:30])
    pipeline = make_pipeline(runtime, RulesExtractor())
    box = mailbox_for(mail_servers, runtime, folder)

    async def process(raw: RawMail) -> str:
        return await pipeline.process(box.name, raw.key, raw.raw)

    assert await box.run(process) == 30
    cursor = pipeline.state.cursor(box.name)
    assert cursor is not None and cursor.last_uid == 30 and cursor.uidvalidity
    fill_folder_more(mail_servers, folder, sample_bytes()[30:])
    assert await box.run(process) == 7  # only what is new since the cursor
    assert await box.run(process) == 0
    assert pipeline.summary.counts["read"] == 37 and pipeline.summary.counts["skipped"] == 0
    # a renumbered folder (new UIDVALIDITY) is read again; Message-IDs make that harmless
    pipeline.state.set_cursor(box.name, cursor.uidvalidity + 1, 37, runtime.clock.now())
    assert await box.run(process) == 37
    box.close()
    assert pipeline.summary.counts["skipped"] == 37
    titles = {i["title"] for i in export_tree(runtime.tickets)["issues"]}
    assert "Nessus?" in titles


def fill_folder_more(servers: MailServers, folder: str, mails: list[bytes]) -> None:
    client = imaplib.IMAP4(servers.imap_host, servers.imap_port)
    client.login(servers.user, servers.password)
    for raw in mails:
        assert client.append(folder, None, None, raw)[0] == "OK"
    client.logout()


class DroppingProxy:
    """A TCP proxy to the IMAP server that cuts its first connection after ``drop_after``
    bytes from the server — in the middle of a FETCH response."""

    def __init__(self, host: str, port: int, drop_after: int) -> None:
        self.target = (host, port)
        self.drop_after = drop_after
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            upstream = socket.create_connection(self.target)
            limit = self.drop_after if self.connections == 1 else None
            threading.Thread(target=self._pump, args=(upstream, client, limit),
                             daemon=True).start()
            threading.Thread(target=self._pump, args=(client, upstream, None),
                             daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, limit: int | None) -> None:
        sent = 0
        try:
            while True:
                data = source.recv(4096)
                if not data:
                    break
                if limit is not None and sent + len(data) > limit:
                    sink.sendall(data[: limit - sent])
                    break
                sink.sendall(data)
                sent += len(data)
        except OSError:
            pass
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self.listener.close()


@pytest.mark.parametrize("batched_writes", [False, True])
async def test_connection_dropped_mid_fetch_resumes_and_loses_nothing(
        mail_servers: MailServers, runtime: HubRuntime, batched_writes: bool) -> None:
    """Also with each fetched chunk written in one transaction (``mail ingest``/``watch``)
    while the next chunk is fetched."""
    folder = f"T{uuid.uuid4().hex[:10]}"
    fill_folder(mail_servers, folder, sample_bytes())
    proxy = DroppingProxy(mail_servers.imap_host, mail_servers.imap_port, drop_after=60_000)
    pipeline = make_pipeline(runtime, RulesExtractor())
    box = mailbox_for(mail_servers, runtime, folder, port=proxy.port, batch=8,
                      batched_writes=batched_writes)
    seen: list[str] = []

    async def process(raw: RawMail) -> str:
        seen.append(raw.key)
        return await pipeline.process(box.name, raw.key, raw.raw)

    try:
        await box.run(process)
    finally:
        box.close()
        proxy.close()
    assert proxy.connections >= 2 and box.reconnects >= 1
    assert sorted(set(seen), key=int) == [str(u) for u in range(1, 38)]
    assert len(seen) == len(set(seen))  # nothing handed over twice
    counts = pipeline.summary.counts
    assert counts["read"] == 37 and counts["quarantined"] == 0
    assert len(export_tree(runtime.tickets)["issues"]) == 10


class Crash(BaseException):
    """Stands for the process dying."""


async def test_a_crash_in_a_batched_chunk_loses_the_chunk_and_its_cursor_together(
        mail_servers: MailServers, runtime: HubRuntime) -> None:
    folder = f"T{uuid.uuid4().hex[:10]}"
    fill_folder(mail_servers, folder, sample_bytes())
    pipeline = make_pipeline(runtime, RulesExtractor())
    box = mailbox_for(mail_servers, runtime, folder, batch=8, batched_writes=True)
    handed: list[str] = []

    async def crash_at_20(raw: RawMail) -> str:
        if raw.key == "20":
            raise Crash
        handed.append(raw.key)
        return await pipeline.process(box.name, raw.key, raw.raw)

    with pytest.raises(Crash):
        await box.run(crash_at_20)
    box.close()
    cursor = pipeline.state.cursor(box.name)
    assert cursor is not None and cursor.last_uid == 16  # the chunk 17..24 is gone
    again = make_pipeline(runtime, RulesExtractor())
    box = mailbox_for(mail_servers, runtime, folder, batch=8, batched_writes=True)

    async def process(raw: RawMail) -> str:
        return await again.process(box.name, raw.key, raw.raw)

    assert await box.run(process) == 37 - 16
    box.close()
    assert again.summary.counts["skipped"] == 0  # 17..19 were rolled back, not recorded
    assert len(export_tree(runtime.tickets)["issues"]) == 10


async def test_watch_follows_the_mailbox_with_idle(mail_servers: MailServers,
                                                   runtime: HubRuntime) -> None:
    pipeline = make_pipeline(runtime, RulesExtractor())
    box = mailbox_for(mail_servers, runtime, "INBOX")
    marker = f"<idle-{uuid.uuid4().hex}@example.org>"
    got = asyncio.Event()

    async def process(raw: RawMail) -> str:
        outcome = await pipeline.process(box.name, raw.key, raw.raw)
        if pipeline.state.get(marker) is not None:
            got.set()
        return outcome

    stop = asyncio.Event()
    watcher = asyncio.create_task(box.watch(process, idle_seconds=20, stop=stop))
    await asyncio.sleep(1.0)  # the watcher has read what was there and sits in IDLE
    message = EmailMessage()
    message["From"] = "carol@example.org"
    message["To"] = f"{mail_servers.user}@{mail_servers.domain}"
    message["Subject"] = "Printer on floor 3"
    message["Message-ID"] = marker
    message.set_content("The printer on floor 3 jams on every job, any ideas?")
    await asyncio.to_thread(_send, mail_servers, message)
    try:
        await asyncio.wait_for(got.wait(), timeout=20)
    finally:
        stop.set()
        await asyncio.wait_for(watcher, timeout=10)
        box.close()
    titles = {i["title"] for i in export_tree(runtime.tickets)["issues"]}
    assert "Printer on floor 3" in titles


def _send(servers: MailServers, message: EmailMessage) -> None:
    with smtplib.SMTP(servers.smtp_host, servers.smtp_port, timeout=10) as smtp:
        smtp.send_message(message)


def test_imap_url_parsing() -> None:
    url = ImapURL.parse("imap://hub%40x@mail.example.org/Lists/rpm")
    assert (url.host, url.port, url.user, url.folder, url.tls) == (
        "mail.example.org", 143, "hub@x", "Lists/rpm", False)
    assert ImapURL.parse("imaps://u@h").port == 993
    from tickethub.errors import ValidationFailed

    for bad in ("http://u@h/INBOX", "imap://h/INBOX"):
        with pytest.raises(ValidationFailed) as caught:
            ImapURL.parse(bad)
        assert caught.value.field == "source"


def test_cli_ingest_from_imap_prompts_for_the_password_without_echo(
        mail_servers: MailServers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from tickethub.cli.main import cli

    monkeypatch.delenv("TICKETHUB_DATABASE_URL", raising=False)
    monkeypatch.delenv("TICKETHUB_IMAP_PASSWORD", raising=False)
    folder = f"T{uuid.uuid4().hex[:10]}"
    fill_folder(mail_servers, folder, sample_bytes()[:5])
    url = f"imap://{mail_servers.user}@{mail_servers.imap_host}:{mail_servers.imap_port}/{folder}"
    result = CliRunner().invoke(cli, ["mail", "ingest", url, "--data-dir",
                                      str(tmp_path / "data"), "--json"],
                                input=mail_servers.password + "\n", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "IMAP password for" in result.stderr
    assert mail_servers.password not in result.output + result.stderr
    assert '"read": 5' in result.stdout


class TlsFront:
    """TLS in front of the (plain, loopback) recipe IMAP server, with a throwaway
    self-signed certificate: what an ``imaps://`` mailbox looks like."""

    def __init__(self, host: str, port: int, workdir: Path) -> None:
        import ssl
        import subprocess

        self.cert, key = workdir / "cert.pem", workdir / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days",
                        "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(key), "-out", str(self.cert)],
                       check=True, capture_output=True, timeout=60)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(self.cert, key)
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            client = self.context.wrap_socket(raw, server_side=True)
        except OSError:  # the client refused our certificate
            raw.close()
            return
        upstream = socket.create_connection(self.target)
        for a, b in ((upstream, client), (client, upstream)):
            threading.Thread(target=DroppingProxy._pump, args=(a, b, None),
                             daemon=True).start()

    def close(self) -> None:
        self.listener.close()


async def test_imaps_connects_with_tls_and_verifies_the_certificate(
        mail_servers: MailServers, runtime: HubRuntime, tmp_path: Path) -> None:
    import ssl

    folder = f"T{uuid.uuid4().hex[:10]}"
    fill_folder(mail_servers, folder, sample_bytes()[:3])
    front = TlsFront(mail_servers.imap_host, mail_servers.imap_port, tmp_path)
    url = ImapURL.parse(f"imaps://{mail_servers.user}@127.0.0.1:{front.port}/{folder}")
    pipeline = make_pipeline(runtime, RulesExtractor())
    state = SqlMailState(runtime.store)

    async def process(raw: RawMail) -> str:
        return await pipeline.process(url.name, raw.key, raw.raw)

    try:
        untrusting = ImapMailbox(url, mail_servers.password, state, runtime.clock)
        with pytest.raises(ssl.SSLCertVerificationError):
            await untrusting.run(process)  # a certificate nobody vouched for is refused
        trusting = ImapMailbox(url, mail_servers.password, state, runtime.clock,
                               ssl_context=ssl.create_default_context(cafile=str(front.cert)))
        assert await trusting.run(process) == 3
        trusting.close()
        wrong = ImapMailbox(url, "not-the-password", state, runtime.clock,
                            ssl_context=ssl.create_default_context(cafile=str(front.cert)))
        with pytest.raises(LoginError):
            await wrong.run(process)
        assert wrong.reconnects == 0
    finally:
        front.close()


def test_cli_wrong_imap_password_is_one_line(mail_servers: MailServers, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from tickethub.cli.main import cli

    monkeypatch.delenv("TICKETHUB_DATABASE_URL", raising=False)
    monkeypatch.setenv("TICKETHUB_IMAP_PASSWORD", "wrong")
    url = f"imap://{mail_servers.user}@{mail_servers.imap_host}:{mail_servers.imap_port}/INBOX"
    result = CliRunner().invoke(cli, ["mail", "ingest", url, "--data-dir",
                                      str(tmp_path / "data")])
    assert result.exit_code == 4
    assert "(unauthenticated, field imap_password)" in result.stderr
