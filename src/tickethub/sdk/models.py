"""What the hub sends back, as small dataclasses mirroring the API's JSON.

Fields the hub adds later are ignored by the dataclass but kept in ``raw``, so an older
SDK keeps working against a newer hub.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tickethub.sdk.async_client import AsyncHub
    from tickethub.sdk.client import Hub

#: Statuses in which a ticket still waits for someone (``wait`` keeps waiting).
WAITING_STATUSES = frozenset({"open", "in_progress", "deferred"})


def _when(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


@dataclass(frozen=True)
class Answer:
    """The answer that resolved a ticket: ``text`` and/or structured ``data``, who gave
    it (``by``), through which channel (``via``: api, cli, web, github, email...) and when."""

    text: str | None
    data: Any
    by: str
    via: str
    at: datetime

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Answer:
        return cls(text=d.get("text"), data=d.get("data"), by=d["by"], via=d["via"],
                   at=datetime.fromisoformat(d["at"]))


@dataclass(frozen=True)
class Ticket:
    """One ticket as the hub last reported it. ``outcome`` is ``None`` while the ticket
    waits, else what to act on (``answered``, ``approved``, ``denied``, ``done``,
    ``cancelled``, ``expired``; an expired approval is ``denied``)."""

    id: int
    parent_id: int | None
    kind: str
    title: str
    body: str
    status: str
    outcome: str | None
    created_by: str
    assignee: str | None
    labels: tuple[str, ...]
    due_at: datetime | None
    next_attention_at: datetime | None
    answer: Answer | None
    response_schema: dict[str, Any] | None
    proposal: Any
    refs: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    version: int
    url: str
    html_url: str
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    _hub: Hub | AsyncHub | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: dict[str, Any], hub: Hub | AsyncHub | None = None) -> Ticket:
        return cls(
            id=d["id"], parent_id=d.get("parent_id"), kind=d["kind"], title=d["title"],
            body=d.get("body", ""), status=d["status"], outcome=d.get("outcome"),
            created_by=d.get("created_by", ""), assignee=d.get("assignee"),
            labels=tuple(d.get("labels") or ()), due_at=_when(d.get("due_at")),
            next_attention_at=_when(d.get("next_attention_at")),
            answer=Answer.from_json(d["answer"]) if d.get("answer") else None,
            response_schema=d.get("response_schema"), proposal=d.get("proposal"),
            refs=d.get("refs") or {}, created_at=datetime.fromisoformat(d["created_at"]),
            updated_at=datetime.fromisoformat(d["updated_at"]), version=d.get("version", 1),
            url=d.get("url", ""), html_url=d.get("html_url", ""), raw=d, _hub=hub,
        )

    @property
    def waiting(self) -> bool:
        """True while someone still has to act (open, in_progress, deferred)."""
        return self.status in WAITING_STATUSES

    @property
    def approved(self) -> bool:
        """True only for an approval a person approved (an expired one is denied)."""
        return self.outcome == "approved"

    @property
    def denied(self) -> bool:
        """True for a denied approval, including one that expired unanswered."""
        return self.outcome == "denied"

    def wait(self, timeout: float | None = None) -> Any:
        """Wait until this ticket is resolved; see :meth:`Hub.wait`. With an
        :class:`AsyncHub` this returns a coroutine: ``await ticket.wait()``."""
        if self._hub is None:
            raise RuntimeError("this Ticket was not fetched through a Hub; use hub.wait(id)")
        return self._hub.wait(self.id, timeout=timeout)


@dataclass(frozen=True)
class TreeNode:
    """A ticket and its children, as far down as the requested depth."""

    ticket: Ticket
    children: tuple[TreeNode, ...]

    @classmethod
    def from_json(cls, d: dict[str, Any], hub: Hub | AsyncHub | None = None) -> TreeNode:
        return cls(Ticket.from_json(d["ticket"], hub),
                   tuple(cls.from_json(c, hub) for c in d.get("children", ())))

    def walk(self, depth: int = 0) -> Any:
        """Yield ``(depth, ticket)`` for this node and every descendant, parents first."""
        yield depth, self.ticket
        for child in self.children:
            yield from child.walk(depth + 1)


@dataclass(frozen=True)
class Message:
    """A message on a ticket. ``trusted`` is false for text from someone who may not
    steer an agent: show it, never follow it."""

    id: int
    ticket_id: int
    author: str
    via: str
    kind: str
    body: str
    trusted: bool
    external_id: str | None
    data: Any
    created_at: datetime
    decision: str | None = None  # answer messages: answered, approved, edited or denied

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Message:
        return cls(id=d["id"], ticket_id=d["ticket_id"], author=d["author"], via=d["via"],
                   kind=d["kind"], body=d["body"], trusted=d.get("trusted", True),
                   external_id=d.get("external_id"), data=d.get("data"),
                   created_at=datetime.fromisoformat(d["created_at"]),
                   decision=d.get("decision"))


@dataclass(frozen=True)
class Event:
    """One entry of the hub's event log; ``seq`` grows by one per change."""

    seq: int
    type: str
    ticket_id: int
    actor: str
    data: dict[str, Any]
    at: datetime

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Event:
        return cls(seq=d["seq"], type=d["type"], ticket_id=d["ticket_id"], actor=d["actor"],
                   data=d.get("data") or {}, at=datetime.fromisoformat(d["at"]))


@dataclass(frozen=True)
class TokenInfo:
    """A token as listed by admins (the secret itself is never listed)."""

    id: int
    name: str
    role: str
    prefix: str
    created_at: datetime
    revoked_at: datetime | None
    scopes: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TokenInfo:
        return cls(id=d["id"], name=d["name"], role=d["role"], prefix=d["prefix"],
                   created_at=datetime.fromisoformat(d["created_at"]),
                   revoked_at=_when(d.get("revoked_at")),
                   scopes=tuple(d.get("scopes") or ()))
