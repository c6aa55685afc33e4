"""The GitHub channel's state in memory: the ``GithubStore`` port
(``services/github_sync.py``) over a ``MemoryStore``, with ``store/github_store.py``'s
contracts (``tests/store/test_store_contract_github.py`` runs on every store).

Tables: ``github_repos`` (id → connection; one per full name), ``github_issues``
(ticket id → link; one per repository and number), ``github_comments`` (comment id →
record and when it was stored), ``github_writes`` (key → (object id, done)) and
``github_inbox`` (id → delivery; one per delivery id, in ``github_deliveries``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from tickethub.domain.github import CommentRecord, InboxItem, IssueLink, RepoConnection
from tickethub.store.memory_state import ConstraintViolation, as_utc
from tickethub.store.memory_store import MemoryStore


def _connection(conn: RepoConnection) -> RepoConnection:
    return replace(conn, labels=tuple(conn.labels), kinds=tuple(conn.kinds),
                   next_poll_at=as_utc(conn.next_poll_at),
                   last_polled_at=as_utc(conn.last_polled_at),
                   created_at=as_utc(conn.created_at))


class MemoryGithubStore:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        state = store.state
        self._repos: dict[int, RepoConnection] = state.table("github_repos")
        self._links: dict[int, IssueLink] = state.table("github_issues")
        self._comments: dict[int, CommentRecord] = state.table("github_comments")
        self._writes: dict[str, int | None] = state.table("github_writes")
        self._inbox: dict[int, InboxItem] = state.table("github_inbox")
        self._deliveries: dict[str, int] = state.table("github_deliveries")

    # connections
    def add_connection(self, conn: RepoConnection) -> RepoConnection:
        with self._store.transaction() as changes:
            if any(c.full_name == conn.full_name for c in self._repos.values()):
                raise ConstraintViolation(f"{conn.full_name} is connected already")
            [new_id] = self._store.state.next_ids("github_repos", 1)
            changes.put(self._repos, new_id, _connection(replace(conn, id=new_id)))
            return replace(conn, id=new_id)

    def update_connection(self, conn: RepoConnection) -> None:
        with self._store.transaction() as changes:
            if conn.id not in self._repos:
                return
            if any(c.full_name == conn.full_name and c.id != conn.id
                   for c in self._repos.values()):
                raise ConstraintViolation(f"{conn.full_name} is connected already")
            changes.put(self._repos, conn.id, _connection(conn))

    def delete_connection(self, full_name: str) -> bool:
        with self._store.transaction() as changes:
            found = next((i for i, c in self._repos.items() if c.full_name == full_name),
                         None)
            if found is None:
                return False
            changes.drop(self._repos, found)
            return True

    def connections(self) -> list[RepoConnection]:
        with self._store.transaction():
            return list(self._repos.values())

    # links
    def link(self, ticket_id: int) -> IssueLink | None:
        with self._store.transaction():
            return self._links.get(ticket_id)

    def link_by_number(self, repo: str, number: int) -> IssueLink | None:
        with self._store.transaction():
            return next((x for x in self._links.values()
                         if x.repo == repo and x.number == number), None)

    def save_link(self, link: IssueLink) -> None:
        with self._store.transaction() as changes:
            if link.ticket_id not in self._store.state.tickets:
                raise ConstraintViolation(f"no ticket {link.ticket_id} to link")
            if link.created_at is None or link.updated_at is None:
                raise ConstraintViolation("a link's times are required")
            if any(x.repo == link.repo and x.number == link.number
                   and x.ticket_id != link.ticket_id for x in self._links.values()):
                raise ConstraintViolation(f"{link.repo}#{link.number} is linked already")
            changes.put(self._links, link.ticket_id, replace(
                link, labels=tuple(link.labels), created_at=as_utc(link.created_at),
                updated_at=as_utc(link.updated_at)))

    def links(self, repo: str | None) -> list[IssueLink]:
        with self._store.transaction():
            return sorted((x for x in self._links.values() if not repo or x.repo == repo),
                          key=lambda x: x.ticket_id)

    # comments
    def comment(self, comment_id: int) -> CommentRecord | None:
        with self._store.transaction():
            return self._comments.get(comment_id)

    def save_comment(self, record: CommentRecord, at: datetime) -> None:
        with self._store.transaction() as changes:
            old = self._comments.get(record.comment_id)
            created_at = old.created_at if old is not None else record.created_at or at
            changes.put(self._comments, record.comment_id,
                        replace(record, created_at=as_utc(created_at)))

    # exactly-once writes
    def write_state(self, key: str) -> tuple[bool, int | None]:
        with self._store.transaction():
            return (True, self._writes[key]) if key in self._writes else (False, None)

    def claim_write(self, key: str, at: datetime) -> None:
        with self._store.transaction() as changes:
            if key not in self._writes:
                changes.put(self._writes, key, None)

    def finish_write(self, key: str, object_id: int | None, at: datetime) -> None:
        with self._store.transaction() as changes:
            changes.put(self._writes, key, object_id)

    # inbox
    def inbox_add(self, delivery_id: str, event: str, payload: str,
                  at: datetime) -> int | None:
        with self._store.transaction() as changes:
            if delivery_id in self._deliveries:
                return None
            [new_id] = self._store.state.next_ids("github_inbox", 1)
            changes.put(self._inbox, new_id, InboxItem(new_id, delivery_id, event, payload,
                                                       "pending", 0, None, as_utc(at)))
            changes.put(self._deliveries, delivery_id, new_id)
            return new_id

    def inbox_pending(self, limit: int, now: datetime) -> list[InboxItem]:
        with self._store.transaction():
            due = [i for i in self._inbox.values() if i.status == "pending"
                   and (i.next_attempt_at is None or i.next_attempt_at <= now)]
            return due[:limit]

    def inbox_item(self, delivery_id: str) -> InboxItem | None:
        with self._store.transaction():
            found = self._deliveries.get(delivery_id)
            return None if found is None else self._inbox[found]

    def inbox_finish(self, item_id: int, status: str, error: str | None, at: datetime,
                     next_attempt_at: datetime | None = None) -> None:
        with self._store.transaction() as changes:
            item = self._inbox.get(item_id)
            if item is not None:
                changes.put(self._inbox, item_id, replace(
                    item, status=status, error=error, attempts=item.attempts + 1,
                    next_attempt_at=as_utc(next_attempt_at)))

    def inbox_counts(self) -> dict[str, int]:
        with self._store.transaction():
            counts: dict[str, int] = {}
            for item in self._inbox.values():
                counts[item.status] = counts.get(item.status, 0) + 1
            return counts
