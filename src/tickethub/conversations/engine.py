"""The conversation engine: inbound chat messages in, replies out, state in the hub.

Contract:

* :meth:`ConversationEngine.receive` queues a message in the hub's database (a retry of
  the same platform event id is dropped) and then handles every pending message of its
  thread, oldest first (:meth:`drain`). Handling reads the thread's snapshot, routes
  (``routing.py``), runs the handler and commits the result with a compare-and-set on
  the thread's version; a process that loses the race reads again. So one thread's
  messages are handled one at a time, in arrival order, across processes.
* A conversation is a ticket (kind ``task``, labels ``chat`` and the handler's name,
  refs ``chat_thread``/``chat_participant``): what the participant said and what the bot
  answered are its messages; a finished form answers it with the form's result, a cancel
  or a timeout cancels it, a hand-off leaves it open labelled ``handoff`` for a person.
* Timeouts are a ``due_at`` on the conversation row, so :meth:`expire_due` finds them
  after a restart too, ends them and tells the participant in the thread.

Ticket writes happen after the commit, by the process that won it. Handlers are
synchronous; transports call the engine from a worker thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tickethub.conversations.handlers import Handler, Step, Turn
from tickethub.conversations.model import ChatMessage, Outcome, Reply, ThreadRef
from tickethub.conversations.routing import Inbound, Route, route
from tickethub.conversations.ticket_threads import answer_from_chat, ticket_of_thread
from tickethub.domain.actors import Actor, ActorKind, Role
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket, TicketDraft
from tickethub.domain.visibility import READ_ALL
from tickethub.services.chat_state import (
    ChatState,
    ConversationChange,
    ConversationRecord,
    InboxItem,
    ThreadSnapshot,
)
from tickethub.services.ports import Clock
from tickethub.services.tickets import TicketService

log = logging.getLogger(__name__)

BOT = Actor(name="chatbot", role=Role.RESPONDER, kind=ActorKind.SYSTEM)
SECRET_PLACEHOLDER = "[withheld: sent for a step that takes secrets by direct message]"
_DUE_BATCH = 100


@dataclass(slots=True)
class _Plan:
    """What handling one message will do: rows to commit, then (after the commit, with
    the written conversation ids) ticket writes and the replies."""

    route: Route
    changes: list[ConversationChange] = field(default_factory=list)
    after: Callable[[list[int]], list[Reply]] = lambda ids: []


class ConversationEngine:
    def __init__(self, state: ChatState, tickets: TicketService, clock: Clock,
                 handlers: Sequence[Handler], *, bot_names: tuple[str, ...] = ("bot",),
                 responders: frozenset[str] = frozenset()) -> None:
        names = [h.name for h in handlers]
        if len(set(names)) != len(names):
            raise ValueError(f"handler names must be unique: {names}")
        self._state = state
        self._tickets = tickets
        self._clock = clock
        self._handlers = list(handlers)
        self._by_name = {h.name: h for h in handlers}
        self._bot_names = bot_names
        self._responders = responders

    # -- inbound ------------------------------------------------------------------------

    def receive(self, msg: ChatMessage) -> Outcome:
        """Queue ``msg`` and handle its thread; a repeated event id does nothing."""
        thread = self.accept(msg)
        if thread is None:
            return Outcome(duplicate=True)
        return self.drain(thread)

    def accept(self, msg: ChatMessage) -> str | None:
        """Store ``msg`` in its thread's queue, to be handled by :meth:`drain` (in this
        process or another), and return the thread's key; ``None`` for a repeated
        event id. Once this returns, the message survives any restart."""
        thread = msg.thread
        if msg.direct:
            waiting = self._awaiting_direct(msg.sender)
            if waiting is not None:  # the answer to a step that asked for a DM
                thread = ThreadRef.parse(waiting.thread)
        item = self._state.receive(thread.key, msg.transport, msg.event_id, msg.sender,
                                   msg.body, msg.to_data(), self._clock.now())
        return None if item is None else thread.key

    def pending_threads(self, transport: str) -> list[str]:
        """Threads with messages of ``transport`` accepted and not yet handled."""
        return self._state.pending_threads(transport)

    def drain(self, thread: str) -> Outcome:
        """Handle the thread's pending messages in order until none is left."""
        outcome = Outcome()
        while True:
            snap = self._state.snapshot(thread)
            item = snap.next_item
            if item is None:
                return outcome
            plan = self._plan(snap, item)
            ids = self._state.commit(thread, snap.version, item.seq, plan.route.explained,
                                     plan.changes, self._clock.now())
            if ids is None:
                continue  # another process handled it first: read again
            outcome.traces.append(plan.route.explained)
            try:
                outcome.replies.extend(plan.after(ids))
            except Exception:  # the state moved on; a failed audit write must not stop
                # the thread's queue (the inbox row keeps the message and its route)
                log.exception("ticket writes after %s %s failed", item.transport,
                              item.event_id)

    def sent(self, reply: Reply, event_id: str) -> None:
        """The transport sent ``reply`` as ``event_id``: a reply to it routes back."""
        if reply.prompt and reply.conversation_id is not None:
            self._state.add_prompt(event_id, reply.conversation_id, self._clock.now())

    def expire_due(self, transport: str | None = None) -> Outcome:
        """End the conversations whose timeout passed (also those that passed while the
        hub was down) and tell their participants; with ``transport``, only its threads
        (each transport's pump sends its own announcements)."""
        now = self._clock.now()
        outcome = Outcome()
        for due in self._state.due(now, _DUE_BATCH):
            if transport is not None and ThreadRef.parse(due.thread).transport != transport:
                continue
            while True:
                snap = self._state.snapshot(due.thread)
                current = next((c for c in snap.open if c.id == due.id), None)
                if current is None or current.due_at is None or current.due_at > now:
                    break
                ended = self._change(current, None, Step())
                trace = f"timeout: #{current.id} {current.handler} was due {current.due_at}"
                if self._state.commit(due.thread, snap.version, None, trace, [ended],
                                      now) is None:
                    continue
                text = (f"This {current.handler} timed out without an answer, so I stopped "
                        f"it and saved nothing. Start again with “@{self._bot_names[0]} "
                        f"{current.handler}”.")
                self._tickets.post_message(BOT, current.ticket_id, text, self._via(current))
                self._tickets.transition(BOT, current.ticket_id, Status.CANCELLED,
                                         self._via(current), reason="timed out")
                outcome.traces.append(trace)
                outcome.replies.append(Reply(ThreadRef.parse(current.thread), text))
                break
        return outcome

    # -- planning -----------------------------------------------------------------------

    def _plan(self, snap: ThreadSnapshot, item: InboxItem) -> _Plan:
        data = item.data
        posted = None if snap.open else ticket_of_thread(self._tickets, snap.thread)
        if posted is not None:
            return self._ticket_plan(posted, item, ThreadRef.parse(snap.thread))
        reply_to = data.get("reply_to")
        prompt_of = None
        if reply_to:
            owner = self._state.prompt(reply_to)
            if owner is not None:
                prompt_of = next((c for c in snap.open if c.id == owner), None)
        inbound = Inbound(item.sender, item.body, data.get("kind", "message"), prompt_of,
                          bool(data.get("direct")), replied=bool(reply_to))
        decided = route(inbound, snap.open, self._handlers, self._bot_names,
                        self._may_steer)
        turn = Turn(item.sender, decided.text, inbound.direct, self._clock.now(),
                    self._tickets, decided.match)
        thread = ThreadRef.parse(snap.thread)
        try:
            return self._act(decided, turn, item, thread)
        except Exception as exc:  # a plugin's bug must not stop the thread's queue
            log.exception("handler failed on %s %s", item.transport, item.event_id)
            decided.trace.append(f"error: {type(exc).__name__}")
            text = "Sorry, something went wrong with that; nothing was changed."
            return _Plan(decided, after=lambda ids: [Reply(thread, text)])

    def _ticket_plan(self, ticket: Ticket, item: InboxItem, thread: ThreadRef) -> _Plan:
        decided = Route("ticket", text=item.body, trace=[f"0 ticket thread: #{ticket.id}"])
        actor = self._actor(item.sender)
        via = "chat:" + thread.transport

        def after(ids: list[int]) -> list[Reply]:
            text = answer_from_chat(self._tickets, actor, ticket, item.body, via,
                                    item.event_id)
            return [Reply(thread, text)] if text else []
        return _Plan(decided, after=after)

    def _act(self, decided: Route, turn: Turn, item: InboxItem, thread: ThreadRef) -> _Plan:
        conv = decided.conversation
        if decided.kind == "ignored":
            return _Plan(decided)
        if decided.kind == "kept":
            assert conv is not None

            def keep(ids: list[int]) -> list[Reply]:
                self._tickets.post_message(self._actor(item.sender), conv.ticket_id,
                                           item.body, self._via(conv),
                                           external_id=item.event_id, trusted=False)
                return []
            return _Plan(decided, after=keep)
        if decided.kind == "escape" and decided.escape == "help":
            return self._help(decided, conv, thread)
        if decided.kind == "escape":  # cancel
            assert conv is not None
            text = f"OK, {conv.handler} cancelled; nothing was saved."
            return self._apply(decided, conv, Step(say=[text], ending="cancelled"), item,
                               thread)
        if decided.kind == "conversation":
            assert conv is not None
            step = self._by_name[conv.handler].advance(turn, conv.state["h"])
            return self._apply(decided, conv, step, item, thread)
        assert decided.handler is not None
        step = decided.handler.start(turn)
        if step.state is None and step.ending == "done" and step.result is None:
            return _Plan(decided, after=lambda ids: [Reply(thread, t) for t in step.say])
        return self._apply(decided, None, step, item, thread, decided.handler)

    def _help(self, decided: Route, conv: ConversationRecord | None, thread: ThreadRef
              ) -> _Plan:
        if conv is not None:
            text = self._by_name[conv.handler].help(conv.state["h"])
            reply = Reply(thread, text, conv.id, prompt=True)
            return _Plan(decided, after=lambda ids: [reply])
        names = ", ".join(h.name for h in self._handlers)
        text = f"I can start: {names}. Say “@{self._bot_names[0]} <name>”."
        return _Plan(decided, after=lambda ids: [Reply(thread, text)])

    def _apply(self, decided: Route, conv: ConversationRecord | None, step: Step,
               item: InboxItem, thread: ThreadRef, handler: Handler | None = None) -> _Plan:
        if conv is None:
            assert handler is not None
            conv = self._open_ticket(handler, item, thread)
        change = self._change(conv, handler, step)
        via = self._via(conv)
        participant = conv.participant
        ticket_id = conv.ticket_id
        obeyed = decided.kind != "kept"

        def after(ids: list[int]) -> list[Reply]:
            conversation_id = ids[0]
            body = SECRET_PLACEHOLDER if step.secret else item.body
            self._tickets.post_message(self._actor(item.sender), ticket_id, body, via,
                                       external_id=item.event_id, trusted=obeyed)
            replies = []
            for n, text in enumerate(step.say):
                asking = step.state is not None and n == len(step.say) - 1
                private = asking and step.direct
                replies.append(Reply(thread, text, conversation_id, prompt=asking,
                                     direct_to=participant if private else None))
                self._tickets.post_message(BOT, ticket_id, text, via)
            if step.state is None:
                self._end(ticket_id, step, via)
            return replies
        return _Plan(decided, [change], after)

    def _end(self, ticket_id: int, step: Step, via: str) -> None:
        if step.ending == "done":
            summary = step.say[-1] if step.say else "done"
            self._tickets.answer(BOT, ticket_id, summary, step.result, via)
        elif step.ending == "cancelled":
            self._tickets.transition(BOT, ticket_id, Status.CANCELLED, via,
                                     reason="cancelled in chat")
        else:  # handoff: the ticket waits for a person
            self._tickets.label(BOT, ticket_id, ["handoff"], [])

    def _open_ticket(self, handler: Handler, item: InboxItem, thread: ThreadRef
                     ) -> ConversationRecord:
        """The ticket that carries a new conversation; idempotent on the event id, so a
        process that loses the commit race and retries gets the same ticket."""
        draft = TicketDraft(
            kind=Kind.TASK, title=f"{handler.name}: {item.body.strip()[:120]}",
            body=f"Chat conversation with {item.sender} ({thread.transport}, room "
                 f"{thread.room}).",
            labels=("chat", handler.name.lower()),
            refs={"chat_thread": thread.key, "chat_participant": item.sender},
        )
        ticket, _ = self._tickets.ask(self._actor(item.sender), draft,
                                      idempotency_key=f"chat:{item.transport}:{item.event_id}")
        now = self._clock.now()
        return ConversationRecord(0, ticket.id, thread.key, item.sender, handler.name, {},
                                  "open", None, now, now)

    def _change(self, conv: ConversationRecord, handler: Handler | None, step: Step
                ) -> ConversationChange:
        name = handler.name if handler is not None else conv.handler
        timeout = self._by_name[name].timeout
        open_ = step.state is not None
        due = self._clock.now() + timeout if open_ and timeout is not None else None
        state: dict[str, Any] = ({"h": step.state, "direct": step.direct} if open_
                                 else {**conv.state, "ending": step.ending})
        return ConversationChange(conv.id or None, conv.ticket_id, conv.thread,
                                  conv.participant, name, state,
                                  "open" if open_ else "ended", due)

    # -- helpers ------------------------------------------------------------------------

    def _awaiting_direct(self, sender: str) -> ConversationRecord | None:
        waiting = [c for c in self._state.open_for(sender) if c.state.get("direct")]
        return waiting[0] if waiting else None

    def _may_steer(self, sender: str) -> bool:
        return sender in self._responders

    def _actor(self, sender: str) -> Actor:
        role = Role.RESPONDER if self._may_steer(sender) else Role.AGENT
        # The engine already matched the message to its thread's ticket, so the sender
        # reads it through the engine (as GitHub commenters do); their text stays
        # untrusted unless they may steer.
        return Actor(name=sender, role=role, kind=ActorKind.PERSON,
                     scopes=frozenset({READ_ALL}))

    @staticmethod
    def _via(conv: ConversationRecord) -> str:
        return "chat:" + ThreadRef.parse(conv.thread).transport
