"""``EmailChannel``: notify the person a ticket is assigned to, by mail.

Targets are addresses: an assignee that is an address, or the address ``mail_notify``
gives for an assignee name. Each notification carries a signed reply token (in Reply-To,
in ``X-Tickethub-Token`` and in its Message-ID), so the recipient's reply answers the
ticket. The Message-ID is derived from the delivery's idempotency key: a resend after a
crash is the same message, which mail clients and the hub's own reader drop as a repeat.
"""

from __future__ import annotations

import asyncio
import hashlib
import smtplib
from collections.abc import Sequence
from email.message import EmailMessage
from email.utils import formatdate
from typing import TYPE_CHECKING

from tickethub.channels.base import Channel, DeliveryFailed
from tickethub.domain.events import Event, EventType
from tickethub.mail.reply_token import load_key, reply_address, sign
from tickethub.services.ports import Delivery

if TYPE_CHECKING:
    from tickethub.channels.email.smtp import SmtpSender
    from tickethub.services.host import Host
    from tickethub.services.tickets import TicketService

_NOTIFY = frozenset({EventType.TICKET_CREATED, EventType.TICKET_ASSIGNED,
                     EventType.MESSAGE_POSTED})


class EmailChannel(Channel):
    name = "email"

    def __init__(self, tickets: TicketService, sender: SmtpSender, *, key: bytes,
                 mail_from: str, reply_domain: str, notify: dict[str, str],
                 public_url: str) -> None:
        self._tickets = tickets
        self._sender = sender
        self._key = key
        self._from = mail_from
        self._domain = reply_domain
        self._notify = {k.lower(): v for k, v in notify.items()}
        self._public_url = public_url.rstrip("/")

    @classmethod
    def from_runtime(cls, runtime: Host) -> EmailChannel:
        from tickethub.channels.email.smtp import SmtpSender

        s = runtime.settings
        secret = s.mail_reply_secret.get_secret_value() if s.mail_reply_secret else None
        return cls(runtime.tickets, SmtpSender.from_settings(s),
                   key=load_key(secret, s.data_dir), mail_from=s.mail_from,
                   reply_domain=s.mail_reply_domain or s.mail_from.rpartition("@")[2],
                   notify=s.mail_notify, public_url=runtime.public_url())

    def address_of(self, assignee: str | None) -> str | None:
        if not assignee:
            return None
        if "@" in assignee:
            return assignee.strip().lower()
        return self._notify.get(assignee.lower())

    def targets(self, event: Event) -> Sequence[str]:
        if event.type not in _NOTIFY or event.data.get("via") == "email":
            return []
        if event.type is EventType.TICKET_ASSIGNED:
            address = self.address_of(event.data.get("to"))
        else:
            try:
                address = self.address_of(self._tickets.get(event.ticket_id).assignee)
            except Exception:
                return []
        return [address] if address else []

    async def deliver(self, delivery: Delivery, event: Event) -> None:
        message = self.compose(delivery, event)
        try:
            await asyncio.to_thread(self._sender.send, message)
        except (smtplib.SMTPException, OSError) as exc:
            raise DeliveryFailed(f"SMTP: {type(exc).__name__}: {exc}") from exc

    def compose(self, delivery: Delivery, event: Event) -> EmailMessage:
        ticket = self._tickets.get(event.ticket_id)
        to = delivery.target
        token = sign(self._key, ticket.id, to)
        key_hash = hashlib.sha256(delivery.idempotency_key.encode()).hexdigest()[:16]
        message = EmailMessage()
        message["From"] = self._from
        message["To"] = to
        message["Subject"] = f"[tickethub #{ticket.id}] {ticket.title}"
        message["Message-ID"] = f"<th.{token}.{key_hash}@{self._domain}>"
        message["Date"] = formatdate(localtime=False)
        message["Reply-To"] = reply_address(self._key, ticket.id, to, self._domain)
        message["X-Tickethub-Token"] = token
        message["X-Tickethub-Delivery"] = delivery.idempotency_key
        message["Auto-Submitted"] = "auto-generated"
        what = {EventType.TICKET_ASSIGNED: "was assigned to you",
                EventType.TICKET_CREATED: "is new and assigned to you",
                EventType.MESSAGE_POSTED: "has a new message"}.get(event.type, "changed")
        lines = [f"Ticket #{ticket.id} {what}: {ticket.title}",
                 f"Kind: {ticket.kind.value}, status: {ticket.status.value}", ""]
        if ticket.body:
            lines += [ticket.body[:4000], ""]
        if event.type is EventType.MESSAGE_POSTED:
            latest = self._tickets.messages(ticket.id)[-1:]
            for m in latest:
                lines += [f"{m.author} wrote:", m.body[:4000], ""]
        lines += ["Reply to this mail to answer the ticket (your text above any quote).",
                  f"{self._public_url}/tickets/{ticket.id}"]
        message.set_content("\n".join(lines))
        return message
