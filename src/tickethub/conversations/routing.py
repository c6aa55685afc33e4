"""The routing order — the same on every transport — and its trace.

For each message, in this order; the first rule that claims it wins:

0. **ticket thread**: in the thread of a hub ticket the bot posted
   (``ticket_threads.py``), a responder's message answers the ticket; anyone else's is
   kept on it (the engine applies this rule before the ones below);
1. **prompt reply**: a reply to one of the bot's own questions goes to that question's
   conversation (if the sender may move it on: its participant or an authorized
   responder; anyone else's reply is kept on the ticket, not obeyed);
2. **escape**: ``cancel`` or ``help`` (alone, optionally addressed to the bot) acts on
   the sender's open conversation in this thread;
3. **conversation**: the sender's open conversation in this thread takes the message;
4. **trigger**: commands, then regexes, then events of the registered handlers, in
   registration order;
5. **kept**: text in a thread where someone else has an open conversation is kept on
   that conversation's ticket, never obeyed;
6. **ignored**: nothing claimed it.

Every decision is written as one trace line per rule consulted, e.g.
``1 prompt-reply: no (not a reply) · 2 escape: no · 3 conversation: #4 foodselection``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from tickethub.conversations.handlers import Handler, match_trigger, strip_address
from tickethub.services.chat_state import ConversationRecord

RouteKind = Literal["ticket", "conversation", "escape", "start", "kept", "ignored"]
ESCAPES = ("cancel", "help")


@dataclass(slots=True)
class Route:
    kind: RouteKind
    conversation: ConversationRecord | None = None
    handler: Handler | None = None
    text: str = ""
    escape: str | None = None
    match: re.Match[str] | None = None
    trace: list[str] = field(default_factory=list)

    @property
    def explained(self) -> str:
        return " · ".join(self.trace)


@dataclass(frozen=True, slots=True)
class Inbound:
    """What routing looks at: the sender, the text, the message kind, the conversation
    whose prompt it replies to (if any), and whether it came by direct message."""

    sender: str
    body: str
    kind: str = "message"
    prompt_of: ConversationRecord | None = None
    direct: bool = False
    replied: bool = False


def route(msg: Inbound, open_here: Sequence[ConversationRecord], handlers: Sequence[Handler],
          bot_names: tuple[str, ...], may_steer: Callable[[str], bool]) -> Route:
    """Decide where ``msg`` goes; ``open_here``: the thread's open conversations."""
    trace: list[str] = []
    text, addressed = strip_address(msg.body, bot_names)
    mine = next((c for c in open_here if c.participant == msg.sender), None)

    def may_move(conversation: ConversationRecord) -> bool:
        return conversation.participant == msg.sender or may_steer(msg.sender)

    # 1. a reply to the bot's own question
    target = msg.prompt_of
    if target is not None and target.status == "open":
        if may_move(target):
            trace.append(f"1 prompt-reply: #{target.id} {target.handler}")
            escape = text.lower() if text.lower() in ESCAPES else None
            return Route("escape" if escape else "conversation", target, text=text,
                         escape=escape, trace=trace)
        trace.append(f"1 prompt-reply: #{target.id} belongs to {target.participant}, "
                     f"{msg.sender} may not answer it → kept")
        return Route("kept", target, text=text, trace=trace)
    trace.append("1 prompt-reply: no" + ("" if msg.replied else " (not a reply)"))

    # 2. escape words
    if text.lower() in ESCAPES and msg.kind == "message":
        if mine is not None:
            trace.append(f"2 escape: {text.lower()} → #{mine.id} {mine.handler}")
            return Route("escape", mine, text=text, escape=text.lower(), trace=trace)
        if text.lower() == "help" and addressed:
            trace.append("2 escape: help (no open conversation)")
            return Route("escape", None, text=text, escape="help", trace=trace)
    trace.append("2 escape: no")

    # 3. the sender's open conversation in this thread
    if mine is not None and msg.kind == "message":
        trace.append(f"3 conversation: #{mine.id} {mine.handler}")
        return Route("conversation", mine, text=text, trace=trace)
    trace.append("3 conversation: none for " + msg.sender)

    # 4. commands, regexes, events
    for handler in handlers:
        hit = match_trigger(handler, msg.kind, text, addressed or msg.direct)
        if hit is not None:
            trace.append(f"4 trigger: {handler.name}")
            return Route("start", None, handler, text=hit[0], match=hit[1], trace=trace)
    trace.append("4 trigger: none")

    # 5. someone else's conversation holds this thread
    if open_here:
        other = open_here[0]
        trace.append(f"5 kept: on #{other.id} of {other.participant}, not obeyed")
        return Route("kept", other, text=text, trace=trace)
    trace.append("6 ignored")
    return Route("ignored", text=text, trace=trace)
