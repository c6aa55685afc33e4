"""The GitHub channel's tables and the SQL ``GithubStore`` (migrations ``0003_github``
and ``0010_github_inbox_retry``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    delete,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from tickethub.domain.github import CommentRecord, InboxItem, IssueLink, RepoConnection
from tickethub.store.bulk import inserted_id
from tickethub.store.sql_store import SqlStore
from tickethub.store.tables import metadata
from tickethub.store.types import UTCDateTime

github_repos = Table(
    "github_repos", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("full_name", String(200), nullable=False, unique=True),
    Column("labels", JSON, nullable=False),
    Column("kinds", JSON, nullable=False),
    Column("parent_id", Integer, nullable=True),
    Column("match_all", Boolean, nullable=False),
    Column("import_label", String(100), nullable=True),
    Column("poll", Boolean, nullable=False),
    Column("poll_since", String(40), nullable=True),
    Column("poll_etag", String(200), nullable=True),
    Column("next_poll_at", UTCDateTime, nullable=True),
    Column("last_polled_at", UTCDateTime, nullable=True),
    Column("connected_by", String(100), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

github_issues = Table(
    "github_issues", metadata,
    Column("ticket_id", Integer, ForeignKey("tickets.id"), primary_key=True),
    Column("repo", String(200), nullable=False),
    Column("number", Integer, nullable=False),
    Column("issue_id", BigInteger, nullable=False),
    Column("state", String(16), nullable=False),
    Column("status_comment_id", BigInteger, nullable=True),
    Column("status_hash", String(64), nullable=True),
    Column("labels", JSON, nullable=False),
    Column("assignee", String(100), nullable=True),
    Column("parent_linked", Boolean, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("repo", "number", name="uq_github_issues_number"),
)

github_comments = Table(
    "github_comments", metadata,
    Column("comment_id", BigInteger, primary_key=True, autoincrement=False),
    Column("repo", String(200), nullable=False),
    Column("ticket_id", Integer, nullable=False),
    Column("author", String(100), nullable=False),
    Column("trusted", Boolean, nullable=False),
    Column("body_hash", String(64), nullable=False),
    Column("command", String(20), nullable=True),
    Column("outcome", String(20), nullable=True),
    Column("consumed", Boolean, nullable=False),
    Column("edits", Integer, nullable=False),
    Column("deleted", Boolean, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Index("ix_github_comments_ticket", "ticket_id"),
)

github_writes = Table(
    "github_writes", metadata,
    Column("key", String(300), primary_key=True),
    Column("object_id", BigInteger, nullable=True),
    Column("attempted_at", UTCDateTime, nullable=False),
    Column("done_at", UTCDateTime, nullable=True),
)

github_inbox = Table(
    "github_inbox", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("delivery_id", String(100), nullable=False, unique=True),
    Column("event", String(50), nullable=False),
    Column("payload", Text, nullable=False),
    Column("status", String(12), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("error", Text, nullable=True),
    Column("received_at", UTCDateTime, nullable=False),
    Column("processed_at", UTCDateTime, nullable=True),
    Column("next_attempt_at", UTCDateTime, nullable=True),  # pending after a failure
    Index("ix_github_inbox_status", "status", "id"),
)


def _conn(row: Any) -> RepoConnection:
    return RepoConnection(
        id=row.id, full_name=row.full_name, labels=tuple(row.labels or ()),
        kinds=tuple(row.kinds or ()), parent_id=row.parent_id, match_all=row.match_all,
        import_label=row.import_label, poll=row.poll, poll_since=row.poll_since,
        poll_etag=row.poll_etag, next_poll_at=row.next_poll_at,
        last_polled_at=row.last_polled_at, connected_by=row.connected_by,
        created_at=row.created_at,
    )


def _conn_values(c: RepoConnection) -> dict[str, Any]:
    return {"full_name": c.full_name, "labels": list(c.labels), "kinds": list(c.kinds),
            "parent_id": c.parent_id, "match_all": c.match_all,
            "import_label": c.import_label, "poll": c.poll, "poll_since": c.poll_since,
            "poll_etag": c.poll_etag, "next_poll_at": c.next_poll_at,
            "last_polled_at": c.last_polled_at, "connected_by": c.connected_by,
            "created_at": c.created_at}


def _link(row: Any) -> IssueLink:
    return IssueLink(
        ticket_id=row.ticket_id, repo=row.repo, number=row.number, issue_id=row.issue_id,
        state=row.state, status_comment_id=row.status_comment_id,
        status_hash=row.status_hash, labels=tuple(row.labels or ()), assignee=row.assignee,
        parent_linked=row.parent_linked, created_at=row.created_at, updated_at=row.updated_at,
    )


def _comment(row: Any) -> CommentRecord:
    return CommentRecord(
        comment_id=row.comment_id, repo=row.repo, ticket_id=row.ticket_id, author=row.author,
        trusted=row.trusted, body_hash=row.body_hash, command=row.command,
        outcome=row.outcome, consumed=row.consumed, edits=row.edits, deleted=row.deleted,
        created_at=row.created_at,
    )


def _inbox_item(row: Any) -> InboxItem:
    return InboxItem(row.id, row.delivery_id, row.event, row.payload, row.status,
                     row.attempts, row.error, row.received_at, row.next_attempt_at)


class SqlGithubStore:
    """Each call is one short transaction on the hub's store (sharing its write lock)."""

    def __init__(self, store: SqlStore) -> None:
        self._store = store

    # connections
    def add_connection(self, conn: RepoConnection) -> RepoConnection:
        with self._store.write() as uow:
            new_id = inserted_id(uow.connection.execute(
                insert(github_repos).values(_conn_values(conn))))
        return RepoConnection(**{**_conn_values(conn), "id": new_id,
                                 "labels": conn.labels, "kinds": conn.kinds})

    def update_connection(self, conn: RepoConnection) -> None:
        with self._store.write() as uow:
            uow.connection.execute(update(github_repos).where(github_repos.c.id == conn.id)
                                   .values(_conn_values(conn)))

    def delete_connection(self, full_name: str) -> bool:
        with self._store.write() as uow:
            return bool(uow.connection.execute(
                delete(github_repos).where(github_repos.c.full_name == full_name)).rowcount)

    def connections(self) -> list[RepoConnection]:
        with self._store.read() as uow:
            rows = uow.connection.execute(select(github_repos).order_by(github_repos.c.id))
            return [_conn(r) for r in rows]

    # links
    def link(self, ticket_id: int) -> IssueLink | None:
        with self._store.read() as uow:
            row = uow.connection.execute(
                select(github_issues).where(github_issues.c.ticket_id == ticket_id)).first()
        return _link(row) if row else None

    def link_by_number(self, repo: str, number: int) -> IssueLink | None:
        with self._store.read() as uow:
            row = uow.connection.execute(select(github_issues).where(
                github_issues.c.repo == repo, github_issues.c.number == number)).first()
        return _link(row) if row else None

    def save_link(self, link: IssueLink) -> None:
        values = {"repo": link.repo, "number": link.number, "issue_id": link.issue_id,
                  "state": link.state, "status_comment_id": link.status_comment_id,
                  "status_hash": link.status_hash, "labels": list(link.labels),
                  "assignee": link.assignee, "parent_linked": link.parent_linked,
                  "created_at": link.created_at, "updated_at": link.updated_at}
        with self._store.write() as uow:
            changed = uow.connection.execute(
                update(github_issues).where(github_issues.c.ticket_id == link.ticket_id)
                .values(values)).rowcount
            if not changed:
                uow.connection.execute(
                    insert(github_issues).values(ticket_id=link.ticket_id, **values))

    def links(self, repo: str | None) -> list[IssueLink]:
        stmt = select(github_issues).order_by(github_issues.c.ticket_id)
        if repo:
            stmt = stmt.where(github_issues.c.repo == repo)
        with self._store.read() as uow:
            return [_link(r) for r in uow.connection.execute(stmt)]

    # comments
    def comment(self, comment_id: int) -> CommentRecord | None:
        with self._store.read() as uow:
            row = uow.connection.execute(select(github_comments).where(
                github_comments.c.comment_id == comment_id)).first()
        return _comment(row) if row else None

    def save_comment(self, record: CommentRecord, at: datetime) -> None:
        values = {"repo": record.repo, "ticket_id": record.ticket_id, "author": record.author,
                  "trusted": record.trusted, "body_hash": record.body_hash,
                  "command": record.command, "outcome": record.outcome,
                  "consumed": record.consumed, "edits": record.edits,
                  "deleted": record.deleted, "updated_at": at}
        with self._store.write() as uow:
            changed = uow.connection.execute(
                update(github_comments)
                .where(github_comments.c.comment_id == record.comment_id)
                .values(values)).rowcount
            if not changed:
                uow.connection.execute(insert(github_comments).values(
                    comment_id=record.comment_id, created_at=record.created_at or at,
                    **values))

    # exactly-once writes
    def write_state(self, key: str) -> tuple[bool, int | None]:
        with self._store.read() as uow:
            row = uow.connection.execute(
                select(github_writes).where(github_writes.c.key == key)).first()
        return (False, None) if row is None else (True, row.object_id)

    def claim_write(self, key: str, at: datetime) -> None:
        with self._store.write() as uow:
            exists = uow.connection.execute(
                select(github_writes.c.key).where(github_writes.c.key == key)).first()
            if not exists:
                uow.connection.execute(insert(github_writes).values(key=key, attempted_at=at))

    def finish_write(self, key: str, object_id: int | None, at: datetime) -> None:
        with self._store.write() as uow:
            changed = uow.connection.execute(
                update(github_writes).where(github_writes.c.key == key)
                .values(object_id=object_id, done_at=at)).rowcount
            if not changed:
                uow.connection.execute(insert(github_writes).values(
                    key=key, object_id=object_id, attempted_at=at, done_at=at))

    # inbox
    def inbox_add(self, delivery_id: str, event: str, payload: str,
                  at: datetime) -> int | None:
        try:
            with self._store.write() as uow:
                exists = uow.connection.execute(select(github_inbox.c.id).where(
                    github_inbox.c.delivery_id == delivery_id)).first()
                if exists:
                    return None
                return inserted_id(uow.connection.execute(insert(github_inbox).values(
                    delivery_id=delivery_id, event=event, payload=payload, status="pending",
                    attempts=0, received_at=at)))
        except IntegrityError:  # the same delivery raced in on another connection
            return None

    def inbox_pending(self, limit: int, now: datetime) -> list[InboxItem]:
        due = or_(github_inbox.c.next_attempt_at.is_(None),
                  github_inbox.c.next_attempt_at <= now)
        with self._store.read() as uow:
            rows = uow.connection.execute(
                select(github_inbox).where(github_inbox.c.status == "pending", due)
                .order_by(github_inbox.c.id).limit(limit))
            return [_inbox_item(r) for r in rows]

    def inbox_item(self, delivery_id: str) -> InboxItem | None:
        with self._store.read() as uow:
            row = uow.connection.execute(select(github_inbox).where(
                github_inbox.c.delivery_id == delivery_id)).first()
        return _inbox_item(row) if row else None

    def inbox_finish(self, item_id: int, status: str, error: str | None, at: datetime,
                     next_attempt_at: datetime | None = None) -> None:
        with self._store.write() as uow:
            uow.connection.execute(
                update(github_inbox).where(github_inbox.c.id == item_id)
                .values(status=status, error=error, processed_at=at,
                        next_attempt_at=next_attempt_at,
                        attempts=github_inbox.c.attempts + 1))

    def inbox_counts(self) -> dict[str, int]:
        with self._store.read() as uow:
            rows = uow.connection.execute(
                select(github_inbox.c.status, func.count()).group_by(github_inbox.c.status))
            return {r[0]: int(r[1]) for r in rows}
