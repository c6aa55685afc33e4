"""The tables. Migrations in ``migrations/versions`` create exactly these."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from tickethub.domain.status import Status
from tickethub.store.types import UTCDateTime

metadata = MetaData()

# The condition of the partial index on deferred tickets, as SQL. Queries that are to use
# that index say it in these very words: SQLite uses a partial index only for a query
# whose WHERE holds its condition literally (not through a bound parameter).
DEFERRED_ONLY = f"status = '{Status.DEFERRED.value}'"

tickets = Table(
    "tickets",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("parent_id", Integer, ForeignKey("tickets.id"), nullable=True),
    Column("path", String(400), nullable=False, default=""),
    Column("depth", Integer, nullable=False, default=0),
    Column("kind", String(16), nullable=False),
    Column("title", String(500), nullable=False),
    Column("body", Text, nullable=False, default=""),
    Column("status", String(16), nullable=False),
    Column("created_by", String(100), nullable=False),
    Column("assignee", String(200), nullable=True),
    Column("labels", JSON, nullable=False),
    Column("due_at", UTCDateTime, nullable=True),
    Column("next_attention_at", UTCDateTime, nullable=True),
    Column("answer_text", Text, nullable=True),
    Column("answer_data", JSON, nullable=True),
    Column("answer_by", String(100), nullable=True),
    Column("answer_via", String(50), nullable=True),
    Column("answer_at", UTCDateTime, nullable=True),
    Column("response_schema", JSON, nullable=True),
    Column("proposal", JSON, nullable=True),
    Column("refs", JSON, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("version", Integer, nullable=False, default=1),
    Column("idempotency_key", String(200), nullable=True),
    Column("request_hash", String(64), nullable=True),
    UniqueConstraint("created_by", "idempotency_key", name="uq_tickets_idempotency"),
    Index("ix_tickets_status", "status"),
    Index("ix_tickets_parent", "parent_id"),
    Index("ix_tickets_path", "path"),
    Index("ix_tickets_created_by", "created_by"),
    Index("ix_tickets_assignee", "assignee"),
    # Covers the inbox's counts per view (status and assignee), read from the index alone.
    Index("ix_tickets_status_assignee", "status", "assignee"),
    # Only deferred tickets have a time to come back (``next_attention_at``), and only
    # they are looked up by it: a partial index, which every other ticket's changes of
    # status leave alone (migration 0020; it was on (status, next_attention_at)).
    Index("ix_tickets_deferred_until", "next_attention_at",
          sqlite_where=text(DEFERRED_ONLY), postgresql_where=text(DEFERRED_ONLY)),
)
# Deadlines (status, due_at) and the inbox's "most urgent first": per status, due date
# ascending then newest, read in order without a sort (store/inbox_queries.py).
Index("ix_tickets_status_due_id", tickets.c.status, tickets.c.due_at, tickets.c.id.desc())

ticket_labels = Table(
    "ticket_labels",
    metadata,
    Column("ticket_id", Integer, ForeignKey("tickets.id"), primary_key=True),
    Column("label", String(100), primary_key=True),
    Index("ix_ticket_labels_label", "label"),
)

ticket_refs = Table(
    "ticket_refs",
    metadata,
    Column("ticket_id", Integer, ForeignKey("tickets.id"), primary_key=True),
    Column("name", String(100), primary_key=True),
    Column("value", String(500), primary_key=True),
    Index("ix_ticket_refs_lookup", "name", "value"),
)

messages = Table(
    "messages",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("ticket_id", Integer, ForeignKey("tickets.id"), nullable=False),
    Column("author", String(100), nullable=False),
    Column("via", String(50), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("body", Text, nullable=False),
    Column("trusted", Boolean, nullable=False),
    Column("external_id", String(500), nullable=True),
    Column("data", JSON, nullable=True),
    Column("decision", String(16), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("via", "external_id", name="uq_messages_external"),
    Index("ix_messages_ticket", "ticket_id"),
)

events = Table(
    "events",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("type", String(40), nullable=False),
    Column("ticket_id", Integer, nullable=False),
    Column("ticket_path", String(400), nullable=False),
    Column("actor", String(100), nullable=False),
    Column("data", JSON, nullable=False),
    Column("at", UTCDateTime, nullable=False),
    # The HTTP request that wrote the event (X-Request-ID), if one did (ops/request_id.py).
    Column("request_id", String(128), nullable=True),
    Index("ix_events_ticket", "ticket_id", "seq"),
    sqlite_autoincrement=True,
)

actors = Table(
    "actors",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("kind", String(16), nullable=False),
    Column("role", String(16), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

identities = Table(
    "identities",
    metadata,
    Column("actor_id", Integer, ForeignKey("actors.id"), nullable=False),
    Column("channel", String(50), nullable=False),
    Column("external_id", String(300), nullable=False),
    UniqueConstraint("channel", "external_id", name="uq_identities"),
)

tokens = Table(
    "tokens",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("actor_id", Integer, ForeignKey("actors.id"), nullable=False),
    Column("name", String(100), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("prefix", String(16), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("revoked_at", UTCDateTime, nullable=True),
    # What the token adds to its actor's role: scope names, space-separated.
    Column("scopes", String(200), nullable=False, server_default=""),
)

deliveries = Table(
    "deliveries",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("channel", String(50), nullable=False),
    Column("target", String(200), nullable=False),
    Column("event_seq", Integer, nullable=False),
    Column("idempotency_key", String(300), nullable=False, unique=True),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("next_attempt_at", UTCDateTime, nullable=False),
    Column("last_error", Text, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("delivered_at", UTCDateTime, nullable=True),
    Index("ix_deliveries_due", "channel", "status", "next_attempt_at"),
)

channel_cursors = Table(
    "channel_cursors",
    metadata,
    Column("channel", String(50), primary_key=True),
    Column("last_seq", Integer, nullable=False),
)

webhooks = Table(
    "webhooks",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("url", String(2000), nullable=False),
    Column("secret", String(200), nullable=False),
    Column("event_types", JSON, nullable=False),
    Column("created_by", String(100), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("active", Boolean, nullable=False, default=True),
)
