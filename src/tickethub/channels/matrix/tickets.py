"""Tickets routed to a Matrix room (ref ``matrix_room``): the outbound half of tickets
in chat (``conversations/ticket_threads.py`` is the inbound half).

A new ticket is posted as a top-level message and its ref ``chat_thread`` set to that
post's thread; later messages on the ticket from other channels (an agent's follow-up)
appear in the same thread, and so does the outcome. Messages that came from chat are
not echoed back.
"""

from __future__ import annotations

from collections.abc import Sequence

from tickethub.channels.base import Channel, DeliveryFailed
from tickethub.channels.matrix.transport import TRANSPORT, MatrixTransport
from tickethub.conversations.engine import BOT
from tickethub.conversations.model import ThreadRef
from tickethub.conversations.ticket_threads import THREAD_REF
from tickethub.domain.events import Event, EventType
from tickethub.errors import NotFound
from tickethub.services.ports import Delivery
from tickethub.services.tickets import TicketService

ROOM_REF = "matrix_room"
_VIA = "chat:" + TRANSPORT
_POSTED = (EventType.TICKET_CREATED, EventType.MESSAGE_POSTED, EventType.TICKET_ANSWERED,
           EventType.TICKET_TRANSITIONED, EventType.TICKET_EXPIRED)


class MatrixTicketChannel(Channel):
    name = "matrix"

    def __init__(self, tickets: TicketService, transport: MatrixTransport) -> None:
        self._tickets = tickets
        self._transport = transport

    def targets(self, event: Event) -> Sequence[str]:
        if event.type not in _POSTED or event.data.get("via") == _VIA:
            return ()
        try:
            ticket = self._tickets.get(event.ticket_id)
        except NotFound:
            return ()
        room = ticket.refs.get(ROOM_REF)
        return (str(room),) if room else ()

    async def deliver(self, delivery: Delivery, event: Event) -> None:
        await self._transport.connect()
        ticket = self._tickets.get(event.ticket_id)
        room = delivery.target
        if event.type is EventType.TICKET_CREATED:
            text = (f"Ticket #{ticket.id} ({ticket.kind.value}) from {ticket.created_by}: "
                    f"{ticket.title}\n{ticket.body}\nReply in this thread to answer.")
            event_id = await self._transport.post(room, text.strip(), delivery.idempotency_key)
            self._tickets.set_ref(BOT, ticket.id, THREAD_REF,
                                  ThreadRef(TRANSPORT, room, event_id).key)
            return
        key = ticket.refs.get(THREAD_REF)
        if not key:
            raise DeliveryFailed("the ticket is not posted yet", retry_after=1.0)
        thread = ThreadRef.parse(str(key))
        if event.type is EventType.MESSAGE_POSTED:
            found = [m for m in self._tickets.messages(ticket.id)
                     if m.id == event.data.get("message_id")]
            if not found or found[0].author == BOT.name:
                return
            text = f"{found[0].author}: {found[0].body}"
        else:
            text = f"Ticket #{ticket.id} is now {ticket.status.value}."
        await self._transport.post(thread.room, text, delivery.idempotency_key,
                                   thread_root=thread.root)
