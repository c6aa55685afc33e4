"""github channel: repository connections, issue links, comment ledger, webhook inbox

Revision ID: 0003_github
Revises: 0002_web_sessions
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_github"
down_revision = "0002_web_sessions"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "github_repos",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("full_name", sa.String(length=200), nullable=False, unique=True),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("kinds", sa.JSON(), nullable=False),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.Column("match_all", sa.Boolean(), nullable=False),
        sa.Column("import_label", sa.String(length=100), nullable=True),
        sa.Column("poll", sa.Boolean(), nullable=False),
        sa.Column("poll_since", sa.String(length=40), nullable=True),
        sa.Column("poll_etag", sa.String(length=200), nullable=True),
        sa.Column("next_poll_at", _TS, nullable=True),
        sa.Column("last_polled_at", _TS, nullable=True),
        sa.Column("connected_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
    )
    op.create_table(
        "github_issues",
        sa.Column("ticket_id", sa.Integer(), sa.ForeignKey("tickets.id"), primary_key=True),
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("issue_id", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("status_comment_id", sa.BigInteger(), nullable=True),
        sa.Column("status_hash", sa.String(length=64), nullable=True),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("assignee", sa.String(length=100), nullable=True),
        sa.Column("parent_linked", sa.Boolean(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.UniqueConstraint("repo", "number", name="uq_github_issues_number"),
    )
    op.create_table(
        "github_comments",
        sa.Column("comment_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("ticket_id", sa.Integer(), nullable=False),
        sa.Column("author", sa.String(length=100), nullable=False),
        sa.Column("trusted", sa.Boolean(), nullable=False),
        sa.Column("body_hash", sa.String(length=64), nullable=False),
        sa.Column("command", sa.String(length=20), nullable=True),
        sa.Column("outcome", sa.String(length=20), nullable=True),
        sa.Column("consumed", sa.Boolean(), nullable=False),
        sa.Column("edits", sa.Integer(), nullable=False),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.Index("ix_github_comments_ticket", "ticket_id"),
    )
    op.create_table(
        "github_writes",
        sa.Column("key", sa.String(length=300), primary_key=True),
        sa.Column("object_id", sa.BigInteger(), nullable=True),
        sa.Column("attempted_at", _TS, nullable=False),
        sa.Column("done_at", _TS, nullable=True),
    )
    op.create_table(
        "github_inbox",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("delivery_id", sa.String(length=100), nullable=False, unique=True),
        sa.Column("event", sa.String(length=50), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("received_at", _TS, nullable=False),
        sa.Column("processed_at", _TS, nullable=True),
        sa.Index("ix_github_inbox_status", "status", "id"),
    )


def downgrade() -> None:
    for table in ("github_inbox", "github_writes", "github_comments", "github_issues",
                  "github_repos"):
        op.drop_table(table)
