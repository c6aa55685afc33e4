"""Email as an answer channel, against the real SMTP and IMAP servers: a notification goes
to the assignee through the delivery worker; their reply answers the ticket; a forged
reply that copies the subject, or replays someone else's token, does not."""

from __future__ import annotations

import asyncio
import email
import imaplib
import smtplib
import time
import uuid
from email.message import EmailMessage
from email.policy import default
from pathlib import Path

import pytest
from pydantic import SecretStr

from tests.mail.conftest import MailServers
from tickethub.channels.email import EmailChannel, ReplyReader, SmtpSender
from tickethub.domain.actors import SYSTEM, Actor, ActorKind, Role
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft, TicketQuery
from tickethub.mail.build import make_pipeline
from tickethub.mail.extractors.rules import RulesExtractor
from tickethub.mail.imap import ImapMailbox, ImapURL
from tickethub.mail.parse import parse_mail
from tickethub.mail.reply_token import sign, verified_ticket
from tickethub.mail.sources import RawMail
from tickethub.server.runtime import HubRuntime
from tickethub.store.mail_store import SqlMailState

KEY = b"k" * 32


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """SQLite only here: these tests wait on real mail servers, and what they store goes
    through the same pipeline and services that test_pipeline runs on both databases."""
    return f"sqlite:///{tmp_path / 'hub.db'}"
AGENT = Actor("deploy-bot", Role.AGENT, ActorKind.AGENT)


def fetch_all(servers: MailServers, user: str) -> list[EmailMessage]:
    client = imaplib.IMAP4(servers.imap_host, servers.imap_port)
    client.login(user, servers.password)
    client.select("INBOX", readonly=True)
    _, data = client.search(None, "ALL")
    found = []
    for num in data[0].split():
        _, parts = client.fetch(num, "(BODY.PEEK[])")
        found.append(email.message_from_bytes(parts[0][1], policy=default))
    client.logout()
    return found  # type: ignore[return-value]


def wait_for_mail(servers: MailServers, user: str, timeout: float = 20) -> EmailMessage:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = fetch_all(servers, user)
        except imaplib.IMAP4.error:
            found = []  # the SMTP server adds a new user; Dovecot sees it within a second
        if found:
            return found[-1]
        time.sleep(0.3)
    raise AssertionError(f"no mail for {user}")


def send(servers: MailServers, message: EmailMessage) -> None:
    with smtplib.SMTP(servers.smtp_host, servers.smtp_port, timeout=10) as smtp:
        smtp.send_message(message)


def reply_to(notification: EmailMessage, sender: str, text: str, to: str | None = None,
             with_token: bool = True) -> EmailMessage:
    reply = EmailMessage()
    reply["From"] = sender
    reply["To"] = to or (str(notification["Reply-To"]) if with_token else "hub@localhost")
    reply["Subject"] = "Re: " + str(notification["Subject"])
    reply["Message-ID"] = f"<r-{uuid.uuid4().hex}@example.org>"
    if with_token:
        reply["In-Reply-To"] = str(notification["Message-ID"])
        reply["References"] = str(notification["Message-ID"])
    quoted = "\n".join("> " + line for line in notification.get_content().splitlines())
    reply.set_content(f"{text}\n\nOn Mon, the hub wrote:\n{quoted}\n")
    return reply


async def test_notification_and_reply_round_trip(mail_servers: MailServers,
                                                 runtime: HubRuntime) -> None:
    person = f"p{uuid.uuid4().hex[:8]}"
    address = f"{person}@{mail_servers.domain}"
    hub_box = f"h{uuid.uuid4().hex[:8]}"
    channel = EmailChannel(
        runtime.tickets, SmtpSender(mail_servers.smtp_host, mail_servers.smtp_port), key=KEY,
        mail_from=f"{hub_box}@{mail_servers.domain}", reply_domain=mail_servers.domain,
        notify={}, public_url="http://hub.example")
    runtime.add_channel(channel)
    async with runtime.running():
        await asyncio.sleep(0.3)  # the channel's first round starts at the end of the log
        ticket, _ = runtime.tickets.ask(AGENT, TicketDraft(
            Kind.QUESTION, "Which region for the new cluster?", body="eu or us?",
            assignee=address))
        notification = await asyncio.to_thread(wait_for_mail, mail_servers, person)
    assert f"#{ticket.id}" in str(notification["Subject"])
    assert str(notification["X-Tickethub-Token"]) == sign(KEY, ticket.id, address)
    assert str(notification["Reply-To"]).startswith("reply+")

    # the assignee replies (to the signed reply address, which lands in the hub's box),
    # and a forger copies the subject, and another person replays the assignee's token
    hub_address = f"{hub_box}@{mail_servers.domain}"
    good = reply_to(notification, address, "Use eu-west-1 please.", to=hub_address)
    good["X-Tickethub-Token"] = str(notification["X-Tickethub-Token"])
    forged = reply_to(notification, "mallory@evil.example", "Use us-east-1.",
                      to=hub_address, with_token=False)
    replayed = reply_to(notification, "mallory@evil.example", "Use ap-south-1.",
                        to=hub_address)
    for message in (forged, replayed, good):
        await asyncio.to_thread(send, mail_servers, message)
    await asyncio.to_thread(wait_for_mail, mail_servers, hub_box)
    await asyncio.sleep(1.5)  # all three delivered

    reader = ReplyReader(runtime.tickets, key=KEY, responders={}, notify={})
    pipeline = make_pipeline(runtime, RulesExtractor(), reply_handler=reader.handle)
    box = ImapMailbox(ImapURL.parse(f"imap://{hub_box}@{mail_servers.imap_host}:"
                                    f"{mail_servers.imap_port}/INBOX"),
                      mail_servers.password, SqlMailState(runtime.store), runtime.clock)

    async def process(raw: RawMail) -> str:
        return await pipeline.process(box.name, raw.key, raw.raw)

    await box.run(process)
    box.close()
    assert pipeline.summary.counts["read"] == 3
    assert pipeline.summary.counts["replies"] == 1
    answered = runtime.tickets.get(ticket.id)
    assert answered.status.value == "answered"
    assert answered.answer is not None
    assert answered.answer.text == "Use eu-west-1 please."  # the quote is stripped
    assert answered.answer.by == address and answered.answer.via == "email"
    texts = " ".join(m.body for m in runtime.tickets.messages(ticket.id))
    assert "us-east-1" not in texts and "ap-south-1" not in texts


def test_reply_tokens_bind_ticket_and_recipient() -> None:
    token = sign(KEY, 12, "Ann@Example.org")
    assert verified_ticket(KEY, "ann@example.org", f"reply+{token}@hub") == 12
    assert verified_ticket(KEY, "bob@example.org", f"reply+{token}@hub") is None
    forged = token.replace(token[-3:], "aaa") if not token.endswith("aaa") else token[:-3] + "bbb"
    assert verified_ticket(KEY, "ann@example.org", forged) is None
    assert verified_ticket(b"other-key" * 4, "ann@example.org", token) is None
    assert verified_ticket(KEY, "ann@example.org", f"<th.{token}.abc@hub>") == 12


@pytest.mark.parametrize("responders, sender, extra, answered", [
    ({"boss@example.org": "boss"}, "boss@example.org", "", True),  # a configured responder
    ({}, "ops@example.org", "", True),  # the assignee
    ({}, "boss@example.org", "", False),  # a valid token, but not an authorized address
    ({}, "ops@example.org", "Auto-Submitted: auto-replied\n", False),  # out of office
])
def test_only_authorized_addresses_answer(runtime: HubRuntime, responders: dict[str, str],
                                          sender: str, extra: str, answered: bool) -> None:
    ticket, _ = runtime.tickets.ask(AGENT, TicketDraft(Kind.QUESTION, "Ship it?",
                                                       assignee="ops@example.org"))
    raw = (f"From: {sender}\nTo: reply+{sign(KEY, ticket.id, sender)}@hub.example\n{extra}"
           f"Subject: Re: Ship it?\nMessage-ID: <a-{uuid.uuid4().hex}@x>\n\nYes, ship it.\n")
    reader = ReplyReader(runtime.tickets, key=KEY, responders=responders, notify={})
    assert reader.handle(parse_mail(raw.encode())) is answered
    assert (runtime.tickets.get(ticket.id).status.value == "answered") is answered


async def test_the_hub_follows_its_mailbox_and_mails_assignees(
        mail_servers: MailServers, runtime: HubRuntime) -> None:
    """``serve`` wiring: with smtp_host and imap_url set, the runtime notifies by mail and
    follows the mailbox with IDLE while it runs."""
    hub_box = f"h{uuid.uuid4().hex[:8]}"
    person = f"p{uuid.uuid4().hex[:8]}"
    send(mail_servers, _plain(f"{hub_box}@{mail_servers.domain}", "hello", "<warm@x>"))
    await asyncio.to_thread(wait_for_mail, mail_servers, hub_box)  # the box exists
    settings = runtime.settings.model_copy(update={
        "smtp_host": mail_servers.smtp_host, "smtp_port": mail_servers.smtp_port,
        "imap_url": f"imap://{hub_box}@{mail_servers.imap_host}:{mail_servers.imap_port}/INBOX",
        "imap_password": SecretStr(mail_servers.password), "imap_idle_seconds": 5,
        "mail_from": f"{hub_box}@{mail_servers.domain}", "data_dir": runtime.settings.data_dir,
    })
    hub = HubRuntime(settings)
    try:
        assert any(isinstance(c, EmailChannel) for c in hub.channels)
        async with hub.running():
            await asyncio.sleep(1.0)
            send(mail_servers, _plain(f"{hub_box}@{mail_servers.domain}",
                                      "The VPN drops every hour, any ideas?", "<vpn@x>",
                                      subject="VPN drops"))
            deadline = asyncio.get_running_loop().time() + 20
            while asyncio.get_running_loop().time() < deadline:
                found = [t for t in hub.tickets.list(TicketQuery(created_by="mail")).items
                         if t.title == "VPN drops"]
                if found:
                    break
                await asyncio.sleep(0.3)
            assert found, "the hub did not pick the mail up"
            hub.tickets.assign(SYSTEM, found[0].id, f"{person}@{mail_servers.domain}")
            notification = await asyncio.to_thread(wait_for_mail, mail_servers, person)
        assert "VPN drops" in str(notification["Subject"])
    finally:
        hub.close()


def _plain(to: str, text: str, message_id: str, subject: str = "hi") -> EmailMessage:
    message = EmailMessage()
    message["From"] = "dana@example.org"
    message["To"] = to
    message["Subject"] = subject
    message["Message-ID"] = message_id
    message.set_content(text)
    return message
