"""Ingest under ``serve``: a big or hostile mail never holds up the hub's event loop, and
a poison mail in the followed mailbox does not stop the mail behind it."""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from tests.mail.conftest import MailServers, make_mail
from tests.mail.test_imap import fill_folder
from tickethub.api.app import create_app
from tickethub.domain.actors import SYSTEM
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketDraft
from tickethub.mail import pipeline as pipeline_module
from tickethub.mail.build import make_pipeline
from tickethub.mail.extractors.rules import RulesExtractor
from tickethub.mail.reply_token import sign
from tickethub.server.runtime import HubRuntime

BOMB_HTML = "<blockquote>" * 60_000 + "Is the build broken?" + "</blockquote>" * 60_000


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """SQLite: what is tested here is the event loop, not the database."""
    return f"sqlite:///{tmp_path / 'hub.db'}"


async def test_healthz_answers_while_a_big_mail_is_parsed(
        runtime: HubRuntime, live_client: httpx.AsyncClient,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The parse of a big mail is held at a gate; /healthz must answer meanwhile, which it
    can only do when the parse runs off the event loop."""
    gate = threading.Event()
    real_parse = pipeline_module.parse_mail
    held: list[bool] = []

    def gated_parse(raw: bytes, **kwargs: Any) -> Any:
        held.append(gate.wait(timeout=30))  # False: nobody opened it (the loop was stuck)
        return real_parse(raw, **kwargs)

    monkeypatch.setattr(pipeline_module, "parse_mail", gated_parse)
    pipeline = make_pipeline(runtime, RulesExtractor())
    bomb = make_mail("", html=BOMB_HTML, subject="Build", message_id="<bomb@x>")
    task = asyncio.create_task(pipeline.process("box", "1", bomb))
    await asyncio.sleep(0)
    response = await live_client.get("/healthz")
    assert response.status_code == 200
    assert not task.done()
    gate.set()
    assert await task == "added"
    assert held == [True]


async def test_serve_goes_past_a_poison_mail_to_the_answer_behind_it(
        mail_servers: MailServers, runtime: HubRuntime) -> None:
    """``serve`` with ``imap_url``: the folder holds the 600-parenthesis To, the nested-HTML
    bomb, then a valid email answer. The answer is applied, nothing is quarantined, and
    /healthz answers throughout."""
    folder = f"poison{uuid.uuid4().hex[:8]}"
    secret = "s" * 32
    settings = runtime.settings.model_copy(update={
        "imap_url": f"imap://{mail_servers.user}@{mail_servers.imap_host}:"
                    f"{mail_servers.imap_port}/{folder}",
        "imap_password": SecretStr(mail_servers.password), "imap_idle_seconds": 5,
        "mail_reply_secret": SecretStr(secret),
    })
    hub = HubRuntime(settings)
    try:
        ticket, _ = hub.tickets.ask(SYSTEM, TicketDraft(
            kind=Kind.QUESTION, title="Which port?", body="", assignee="bob@example.org"))
        token = sign(secret.encode(), ticket.id, "bob@example.org")
        poison = (b"From: eve@example.org\r\nTo: " + b"(" * 600 + b"\r\nSubject: x\r\n"
                  b"Message-ID: <poison@x>\r\n\r\nhello\r\n")
        bomb = make_mail("", html=BOMB_HTML, subject="Build", message_id="<bomb@x>")
        answer = make_mail("Port 8443.", sender="bob@example.org",
                           to=f"reply+{token}@hub.example", subject="Re: Which port?",
                           message_id="<answer@x>")
        await asyncio.to_thread(fill_folder, mail_servers, folder, [poison, bomb, answer])
        transport = httpx.ASGITransport(app=create_app(hub))
        async with hub.running(), httpx.AsyncClient(transport=transport,
                                                    base_url="http://hub") as client:
            health = []
            deadline = asyncio.get_running_loop().time() + 60
            while asyncio.get_running_loop().time() < deadline:
                health.append((await client.get("/healthz")).status_code)
                if hub.tickets.get(ticket.id).status == Status.ANSWERED:
                    break
                await asyncio.sleep(0.1)
        assert hub.tickets.get(ticket.id).status == Status.ANSWERED
        assert set(health) == {200}
        from tickethub.store.mail_store import SqlMailState

        assert SqlMailState(hub.store).quarantined() == []
    finally:
        hub.close()


async def test_serve_writes_each_fetched_chunk_in_one_transaction_off_the_loop(
        mail_servers: MailServers, runtime: HubRuntime) -> None:
    """``serve``'s mailbox (``channels.email``): a chunk is processed in a worker thread,
    its mails' tickets, records and cursor in one transaction — a failure inside the
    chunk leaves none of it — while the hub runs with its group commit bound to the
    loop (the chunk's writes must not wait on that queue: it would wait on them)."""
    from tickethub.channels.email import _chunk_transaction
    from tickethub.domain.tickets import TicketQuery
    from tickethub.mail.imap import ImapMailbox, ImapURL
    from tickethub.mail.sources import RawMail
    from tickethub.store.mail_store import SqlMailState

    folder = f"chunk{uuid.uuid4().hex[:8]}"
    mails = [make_mail(f"How do I set up mirror {i}? Any ideas?", subject=f"Mirror {i}",
                       message_id=f"<chunk{i}@x>") for i in range(3)]
    await asyncio.to_thread(fill_folder, mail_servers, folder, mails)
    url = ImapURL.parse(f"imap://{mail_servers.user}@{mail_servers.imap_host}:"
                        f"{mail_servers.imap_port}/{folder}")
    state = SqlMailState(runtime.store)
    box = ImapMailbox(url, mail_servers.password, state, runtime.clock, batch=3,
                      retry_delay=0.05, write_batch=lambda: _chunk_transaction(runtime.store),
                      in_thread=True)
    pipeline = make_pipeline(runtime, RulesExtractor())
    loop_thread = threading.get_ident()
    threads: set[int] = set()
    fail_at = ["<chunk2@x>"]

    async def process(raw: RawMail) -> str:
        threads.add(threading.get_ident())
        outcome = await pipeline.process(box.name, raw.key, raw.raw)
        if fail_at and f"<{fail_at[0][1:-1]}>".encode() in raw.raw:
            raise RuntimeError("the database went away")
        return outcome

    try:
        async with runtime.running():
            with pytest.raises(RuntimeError):
                await box.run(process)
            assert state.cursor(box.name) is None
            assert not any(state.is_recorded(f"<chunk{i}@x>") for i in range(3))
            assert runtime.tickets.list(TicketQuery(created_by="mail")).items == []
            fail_at.clear()
            assert await box.run(process) == 3
        cursor = state.cursor(box.name)
        assert cursor is not None and cursor.last_uid == 3
        assert all(state.is_recorded(f"<chunk{i}@x>") for i in range(3))
        assert loop_thread not in threads
    finally:
        box.close()
