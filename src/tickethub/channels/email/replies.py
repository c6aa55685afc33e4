"""``ReplyReader``: a mailed reply to a notification answers the ticket.

Check, then handle: a mail is a reply only when a signed token in its recipients,
``X-Tickethub-Token`` header, In-Reply-To or References verifies for its own From
address (``mail.reply_token``), it is not automatic (out-of-office replies and bounces
carry ``Auto-Submitted``), and that address may answer — it is in
``mail_responders`` (address → actor name) or it is where the ticket's assignee is
notified. The author's own text (quotes and signature stripped) becomes the answer; on
a ticket that no longer waits it is kept as a message. Anything else is not a reply and
goes on through the pipeline as ordinary mail.

The answer goes through the hub's one write path: ``ahandle`` (the hub's mailbox loop)
runs ``handle`` in a worker thread, whose commands join the hub's group commit and so
share transactions with every other door's writes; ``handle`` called in a thread of a
script or the CLI (no running hub) writes each in a transaction of its own.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.errors import TickethubError
from tickethub.mail.parse import ParsedMail
from tickethub.mail.reply_token import load_key, verified_ticket

if TYPE_CHECKING:
    from tickethub.services.host import Host
    from tickethub.services.tickets import TicketService

log = logging.getLogger(__name__)
VIA = "email"


class ReplyReader:
    def __init__(self, tickets: TicketService, *, key: bytes, responders: dict[str, str],
                 notify: dict[str, str]) -> None:
        self._tickets = tickets
        self._key = key
        self._responders = {k.lower(): v for k, v in responders.items()}
        self._notify = {k.lower(): v.lower() for k, v in notify.items()}

    @classmethod
    def from_runtime(cls, runtime: Host) -> ReplyReader:
        s = runtime.settings
        secret = s.mail_reply_secret.get_secret_value() if s.mail_reply_secret else None
        return cls(runtime.tickets, key=load_key(secret, s.data_dir),
                   responders=s.mail_responders, notify=s.mail_notify)

    def ticket_of(self, mail: ParsedMail) -> int | None:
        """The ticket this mail validly replies to, or ``None`` (check, no side effect)."""
        if not mail.from_addr:
            return None
        return verified_ticket(self._key, mail.from_addr, " ".join(mail.to + mail.cc),
                               mail.headers.get("x-tickethub-token", ""),
                               " ".join(mail.in_reply_to), " ".join(mail.references))

    async def ahandle(self, mail: ParsedMail) -> bool:
        """``handle`` off the event loop, in a worker thread: its reads do not stall the
        loop, and its write joins the hub's group commit (``TicketService.bind``),
        which a call on the loop's own thread could not."""
        return await asyncio.to_thread(self.handle, mail)

    def handle(self, mail: ParsedMail) -> bool:
        """Answer (or add to) the ticket ``mail`` validly replies to; whether it was a
        reply. Call it from a thread, not the event loop (see ``ahandle``)."""
        if mail.is_automatic:
            return False  # an out-of-office or bounce to a notification is no answer
        ticket_id = self.ticket_of(mail)
        if ticket_id is None:
            return False
        try:
            ticket = self._tickets.get(ticket_id)
        except TickethubError:
            return False
        actor = self._actor(mail.from_addr, ticket.assignee)
        if actor is None:
            log.warning("reply from %s to ticket %s ignored: not an authorized address",
                        mail.from_addr, ticket_id)
            return False
        text = mail.own_text.strip() or mail.text.strip()
        if not text:
            return False
        try:
            if ticket.waiting and ticket.response_schema is None:
                self._tickets.answer(actor, ticket.id, text, None, VIA)
            else:
                self._tickets.post_message(actor, ticket.id, text, VIA,
                                           external_id=mail.message_id)
        except TickethubError as exc:
            log.warning("reply %s to ticket %s not applied: %s", mail.message_id, ticket_id,
                        exc.detail)
            self._tickets.post_message(actor, ticket.id, text, VIA,
                                       external_id=mail.message_id, trusted=False)
        return True

    def _actor(self, address: str, assignee: str | None) -> Actor | None:
        address = address.lower()
        name = self._responders.get(address)
        if name is None and assignee:
            notified = assignee.lower() if "@" in assignee else self._notify.get(
                assignee.lower())
            if notified == address:
                name = assignee
        if name is None:
            return None
        return Actor(name=name, role=Role.RESPONDER, kind=ActorKind.PERSON)
