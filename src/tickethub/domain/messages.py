"""Messages: who said what on a ticket, through which channel."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class MessageKind(StrEnum):
    COMMENT = "comment"
    ANSWER = "answer"
    SYSTEM = "system"


class Decision(StrEnum):
    """What an ``answer`` message decided: the record of one resolution, kept when the
    ticket is reopened and resolved again. ``edited`` is an approval with edited data."""

    ANSWERED = "answered"
    APPROVED = "approved"
    EDITED = "edited"
    DENIED = "denied"


@dataclass(frozen=True, slots=True)
class Message:
    """One message. ``external_id`` (a comment id, a Message-ID, a chat event id) is unique
    per channel, so nothing is imported twice. ``trusted`` is false for text from people
    who may not steer the agent: it is kept, but never handed over as an instruction.
    ``decision`` is set on the messages that record an answer, approval or denial (kind
    ``answer``); their ``data`` is what was decided and ``body`` the text given, maybe
    empty."""

    id: int
    ticket_id: int
    author: str
    via: str
    body: str
    kind: MessageKind
    trusted: bool
    created_at: datetime
    external_id: str | None = None
    data: Any = None
    decision: Decision | None = None


@dataclass(frozen=True, slots=True)
class MessageDraft:
    """A message to store (``MessageRepository.add_many``): a ``Message`` without its id
    and time."""

    ticket_id: int
    author: str
    via: str
    body: str
    kind: MessageKind
    trusted: bool
    external_id: str | None = None
    data: Any = None
    decision: Decision | None = None
