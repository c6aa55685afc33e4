"""The GitHub channel's own state: connected repositories (with their routing rules and
polling cursor), ticket ↔ issue links, the comment ledger, the write ledger that makes
outbound writes exactly-once, and the durable inbox of webhook deliveries.

Contracts:

* ``connect`` is for admins; ``repo`` is ``owner/name`` (stored lower-case, since GitHub
  names are case-insensitive). A connection routes a ticket when ``match_all`` is set, or
  when every criterion it has matches (any of ``labels``; any of ``kinds``; the ticket is
  ``parent_id`` or below it). A connection with no criterion routes nothing by itself:
  it still receives comments on issues it already has, and imports.
* ``receive`` stores a webhook delivery once per ``delivery_id`` and returns it, or
  ``None`` for a replay, which is stored nothing and has no second effect.
* A delivery whose processing fails waits its own turn (``next_attempt_at``, stored, so
  a restart keeps it) by the ``RetrySchedule``; ``pending`` returns only deliveries that
  are due, so one that keeps failing never holds up the others. When the schedule's
  window has passed, ``failed`` marks it ``failed`` for good.
* ``claim_write``/``finish_write`` bracket one outbound write with a stable key: a key
  that was attempted but not finished tells the caller to look on GitHub for the object
  (by the marker it embedded) before writing again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

from tickethub.domain.actors import Actor, require_admin
from tickethub.domain.github import CommentRecord as CommentRecord
from tickethub.domain.github import InboxItem as InboxItem
from tickethub.domain.github import IssueLink as IssueLink
from tickethub.domain.github import RepoConnection as RepoConnection
from tickethub.domain.status import Kind
from tickethub.domain.tickets import Ticket, normalize_labels
from tickethub.errors import NotFound, ValidationFailed
from tickethub.services.ports import Clock

_REPO = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")


def check_repo(full_name: str, field: str = "repo") -> str:
    """``owner/name`` lower-cased, or ``ValidationFailed`` naming ``field``."""
    name = full_name.strip()
    if not _REPO.match(name) or name.endswith((".git", "/.", "/..")):
        raise ValidationFailed(f"{full_name!r} is not a repository name like owner/repo",
                               field=field)
    return name.lower()


@dataclass(frozen=True, slots=True)
class RetrySchedule:
    """When a delivery that failed is tried again: ``first`` seconds after the first
    failure, doubling with each failure, at most ``longest`` seconds apart (unless GitHub
    asks for longer, e.g. a rate-limit reset), for ``window`` seconds after the delivery
    arrived. The last try is at the end of the window; if it fails too, the delivery has
    failed for good."""

    first: float = 1.0
    longest: float = 300.0
    window: float = 24 * 3600.0

    def wait(self, attempts: int, retry_after: float | None = None) -> float:
        """Seconds to wait after the ``attempts``-th failed try."""
        delay = min(self.first * 2.0 ** min(max(attempts - 1, 0), 60), self.longest)
        return max(delay, retry_after) if retry_after is not None else delay

    def next_attempt(self, received_at: datetime, attempts: int, now: datetime,
                     retry_after: float | None = None) -> datetime | None:
        """When to try again after the ``attempts``-th failure at ``now``; ``None``
        once the window has passed."""
        deadline = received_at + timedelta(seconds=self.window)
        if now >= deadline:
            return None
        wait = min(self.wait(attempts, retry_after), self.window)  # (no overflow)
        return min(now + timedelta(seconds=wait), deadline)

    def tries(self) -> int:
        """How many tries a delivery that always fails gets over the whole window."""
        elapsed, attempts = 0.0, 1
        while elapsed < self.window:
            elapsed = min(elapsed + self.wait(attempts), self.window)
            attempts += 1
        return attempts


class GithubStore(Protocol):
    def add_connection(self, conn: RepoConnection) -> RepoConnection: ...
    def update_connection(self, conn: RepoConnection) -> None: ...
    def delete_connection(self, full_name: str) -> bool: ...
    def connections(self) -> list[RepoConnection]: ...
    def link(self, ticket_id: int) -> IssueLink | None: ...
    def link_by_number(self, repo: str, number: int) -> IssueLink | None: ...
    def save_link(self, link: IssueLink) -> None: ...
    def links(self, repo: str | None) -> list[IssueLink]: ...
    def comment(self, comment_id: int) -> CommentRecord | None: ...
    def save_comment(self, record: CommentRecord, at: datetime) -> None: ...
    def write_state(self, key: str) -> tuple[bool, int | None]: ...
    def claim_write(self, key: str, at: datetime) -> None: ...
    def finish_write(self, key: str, object_id: int | None, at: datetime) -> None: ...
    def inbox_add(self, delivery_id: str, event: str, payload: str,
                  at: datetime) -> int | None: ...
    def inbox_pending(self, limit: int, now: datetime) -> list[InboxItem]: ...
    def inbox_item(self, delivery_id: str) -> InboxItem | None: ...
    def inbox_finish(self, item_id: int, status: str, error: str | None, at: datetime,
                     next_attempt_at: datetime | None = None) -> None: ...
    def inbox_counts(self) -> dict[str, int]: ...


class GithubSyncService:
    """Use cases over the GitHub channel's state. Thread-safe (one transaction a call).
    ``inbox_retry`` is when failed webhook deliveries are tried again."""

    def __init__(self, store: GithubStore, clock: Clock,
                 inbox_retry: RetrySchedule | None = None) -> None:
        self._store = store
        self._clock = clock
        self.inbox_retry = inbox_retry or RetrySchedule()

    # -- connections ---------------------------------------------------------------------

    def connect(self, by: Actor, repo: str, *, labels: Sequence[str] = (),
                kinds: Sequence[str] = (), parent_id: int | None = None,
                match_all: bool = False, import_label: str | None = None,
                poll: bool = False) -> RepoConnection:
        """Connect ``repo`` (or change its rule when it is connected already)."""
        require_admin(by, "connecting a repository")
        full_name = check_repo(repo)
        known = {k.value for k in Kind}
        bad = sorted(set(kinds) - known)
        if bad:
            raise ValidationFailed(f"unknown kinds {bad}; known: {sorted(known)}", field="kind")
        conn = RepoConnection(
            id=0, full_name=full_name, labels=normalize_labels(tuple(labels)),
            kinds=tuple(sorted(set(kinds))), parent_id=parent_id, match_all=match_all,
            import_label=import_label.strip() if import_label else None, poll=poll,
            connected_by=by.name, created_at=self._clock.now(),
        )
        existing = self.connection(full_name)
        if existing is None:
            return self._store.add_connection(conn)
        updated = replace(existing, labels=conn.labels, kinds=conn.kinds, parent_id=parent_id,
                          match_all=match_all, import_label=conn.import_label or
                          existing.import_label, poll=poll)
        self._store.update_connection(updated)
        return updated

    def disconnect(self, by: Actor, repo: str) -> None:
        require_admin(by, "disconnecting a repository")
        if not self._store.delete_connection(check_repo(repo)):
            raise NotFound(f"{repo} is not connected", field="repo")

    def connections(self) -> list[RepoConnection]:
        return self._store.connections()

    def connection(self, repo: str) -> RepoConnection | None:
        name = repo.lower()
        return next((c for c in self._store.connections() if c.full_name == name), None)

    def route(self, ticket: Ticket) -> RepoConnection | None:
        """The first connection (oldest first) whose rule sends ``ticket`` out."""
        return next((c for c in self._store.connections() if c.routes(ticket)), None)

    def save_poll(self, conn: RepoConnection, since: str | None, etag: str | None,
                  next_poll_at: datetime) -> RepoConnection:
        updated = replace(conn, poll_since=since, poll_etag=etag, next_poll_at=next_poll_at,
                          last_polled_at=self._clock.now())
        self._store.update_connection(updated)
        return updated

    # -- links and comments --------------------------------------------------------------

    def link(self, ticket_id: int) -> IssueLink | None:
        return self._store.link(ticket_id)

    def link_by_number(self, repo: str, number: int) -> IssueLink | None:
        return self._store.link_by_number(repo.lower(), number)

    def save_link(self, link: IssueLink) -> IssueLink:
        now = self._clock.now()
        saved = replace(link, repo=link.repo.lower(), created_at=link.created_at or now,
                        updated_at=now)
        self._store.save_link(saved)
        return saved

    def links(self, repo: str | None = None) -> list[IssueLink]:
        return self._store.links(repo.lower() if repo else None)

    def comment(self, comment_id: int) -> CommentRecord | None:
        return self._store.comment(comment_id)

    def save_comment(self, record: CommentRecord) -> None:
        self._store.save_comment(record, self._clock.now())

    # -- exactly-once writes -------------------------------------------------------------

    def write_state(self, key: str) -> tuple[bool, int | None]:
        """``(attempted, object_id)`` for the write ``key``."""
        return self._store.write_state(key)

    def claim_write(self, key: str) -> None:
        self._store.claim_write(key, self._clock.now())

    def finish_write(self, key: str, object_id: int | None) -> None:
        self._store.finish_write(key, object_id, self._clock.now())

    # -- webhook inbox -------------------------------------------------------------------

    def receive(self, delivery_id: str, event: str, payload: str) -> InboxItem | None:
        """Store a delivery; the stored item, or ``None`` for a replay."""
        if not delivery_id.strip():
            raise ValidationFailed("X-GitHub-Delivery is missing", field="X-GitHub-Delivery")
        if not event.strip():
            raise ValidationFailed("X-GitHub-Event is missing", field="X-GitHub-Event")
        now = self._clock.now()
        delivery, name = delivery_id.strip()[:100], event.strip()[:50]
        item_id = self._store.inbox_add(delivery, name, payload, now)
        if item_id is None:
            return None
        return InboxItem(item_id, delivery, name, payload, "pending", 0, None, now)

    def pending(self, limit: int = 50) -> list[InboxItem]:
        """Pending deliveries that are due now, in arrival order."""
        return self._store.inbox_pending(limit, self._clock.now())

    def inbox_item(self, delivery_id: str) -> InboxItem | None:
        return self._store.inbox_item(delivery_id)

    def processed(self, item: InboxItem, status: str = "done") -> None:
        self._store.inbox_finish(item.id, status, None, self._clock.now())

    def failed(self, item: InboxItem, error: str, retry_after: float | None = None, *,
               final: bool = False) -> datetime | None:
        """Record a failed try (``retry_after``: the seconds GitHub asked to wait, if it
        did); returns when the delivery is tried next, or ``None`` when it has failed
        for good (the retry window has passed, or ``final``: trying again cannot help)."""
        now = self._clock.now()
        next_at = None if final else self.inbox_retry.next_attempt(
            item.received_at, item.attempts + 1, now, retry_after)
        self._store.inbox_finish(item.id, "pending" if next_at else "failed", error[:2000],
                                 now, next_at)
        return next_at

    def inbox_counts(self) -> dict[str, int]:
        return self._store.inbox_counts()
