"""Records of the GitHub channel that the store keeps (``services.github_sync`` is
the port): repository connections, issue links, the comment ledger, the webhook inbox."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tickethub.domain.tickets import Ticket


@dataclass(frozen=True, slots=True)
class RepoConnection:
    id: int
    full_name: str
    labels: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    parent_id: int | None = None
    match_all: bool = False
    import_label: str | None = None
    poll: bool = False
    poll_since: str | None = None
    poll_etag: str | None = None
    next_poll_at: datetime | None = None
    last_polled_at: datetime | None = None
    connected_by: str = ""
    created_at: datetime | None = None

    @property
    def owner(self) -> str:
        return self.full_name.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.full_name.split("/", 1)[1]

    def routes(self, ticket: Ticket) -> bool:
        """True when this connection's rule sends ``ticket`` to the repository."""
        if self.match_all:
            return True
        if not (self.labels or self.kinds or self.parent_id is not None):
            return False
        if self.labels and not set(self.labels) & set(ticket.labels):
            return False
        if self.kinds and ticket.kind.value not in self.kinds:
            return False
        return self.parent_id is None or f"/{self.parent_id}/" in ticket.path


@dataclass(frozen=True, slots=True)
class IssueLink:
    """A ticket mirrored as issue ``repo#number`` (``issue_id`` is GitHub's database id,
    which the sub-issue API takes). ``state`` is ``open``, ``closed``, ``deleted`` or
    ``transferred``; the last two end mirroring."""

    ticket_id: int
    repo: str
    number: int
    issue_id: int
    state: str = "open"
    status_comment_id: int | None = None
    status_hash: str | None = None
    labels: tuple[str, ...] = ()
    assignee: str | None = None
    parent_linked: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def gone(self) -> bool:
        return self.state in ("deleted", "transferred")

    @property
    def url_ref(self) -> str:
        return f"{self.repo}#{self.number}"


@dataclass(frozen=True, slots=True)
class CommentRecord:
    """One GitHub comment seen on a mirrored issue. ``outcome`` says what it did:
    ``answered``/``applied`` (a command took effect), ``rejected`` (a command the hub
    refused), ``unknown`` (not a command we know), ``untrusted`` (kept, no effect) or
    ``message`` (kept as a trusted message). ``consumed`` is true once it resolved the
    ticket, i.e. the agent may have acted on it."""

    comment_id: int
    repo: str
    ticket_id: int
    author: str
    trusted: bool
    body_hash: str
    command: str | None = None
    outcome: str | None = None
    consumed: bool = False
    edits: int = 0
    deleted: bool = False
    created_at: datetime | None = None  # when GitHub says the comment was made


@dataclass(frozen=True, slots=True)
class InboxItem:
    """A stored webhook delivery: ``pending`` (due at ``next_attempt_at``, or at once
    when that is ``None``), ``done``, ``ignored`` or ``failed``."""

    id: int
    delivery_id: str
    event: str
    payload: str
    status: str
    attempts: int
    error: str | None
    received_at: datetime
    next_attempt_at: datetime | None = None
