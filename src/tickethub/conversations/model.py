"""The values every transport hands the engine and gets back: a chat message in, replies
out, and the thread they belong to.

One key across transports: a message belongs to the thread ``(transport, room, root)``
(Matrix ``m.thread`` root, Slack ``thread_ts``, Mattermost ``root_id``, a Telegram topic);
a top-level message roots its own thread, so the bot answers a command in a new thread
under it. A conversation is keyed by ``(thread, participant)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_SEP = "|"


@dataclass(frozen=True, slots=True)
class ThreadRef:
    """Where a thread lives on its platform."""

    transport: str
    room: str
    root: str

    @property
    def key(self) -> str:
        """The thread key stored in the hub: ``transport|room|root``."""
        return _SEP.join((self.transport, self.room, self.root))

    @classmethod
    def parse(cls, key: str) -> ThreadRef:
        transport, room, root = key.split(_SEP, 2)
        return cls(transport, room, root)


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One inbound chat message or event.

    ``event_id`` is the platform's id (retries repeat it); ``thread_root`` is ``None`` for
    a top-level message; ``reply_to`` is the event this message quotes or answers;
    ``direct`` marks a one-to-one room; ``kind`` is ``message`` or a platform event name
    (``member_joined``) for event triggers.
    """

    transport: str
    room: str
    event_id: str
    sender: str
    body: str
    thread_root: str | None = None
    reply_to: str | None = None
    direct: bool = False
    kind: str = "message"

    @property
    def thread(self) -> ThreadRef:
        return ThreadRef(self.transport, self.room, self.thread_root or self.event_id)

    def to_data(self) -> dict[str, Any]:
        return {"room": self.room, "thread_root": self.thread_root, "reply_to": self.reply_to,
                "direct": self.direct, "kind": self.kind}


@dataclass(frozen=True, slots=True)
class Reply:
    """A message the bot sends: into ``thread``, or privately to ``direct_to`` (a
    platform user id). ``prompt`` marks a question of ``conversation_id``; the transport
    reports the sent event id back (``engine.sent``) so a reply to it routes there."""

    thread: ThreadRef
    text: str
    conversation_id: int | None = None
    prompt: bool = False
    direct_to: str | None = None


@dataclass(slots=True)
class Outcome:
    """What handling one inbound message did: the replies to send (for every message of
    the thread this call handled, in order) and one routing trace per message."""

    replies: list[Reply] = field(default_factory=list)
    traces: list[str] = field(default_factory=list)
    duplicate: bool = False
