"""mail: mailbox cursors, processed mails, quarantine

Revision ID: 0005_mail
Revises: 0004_agent_protocol
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_mail"
down_revision = "0004_agent_protocol"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "mail_cursors",
        sa.Column("mailbox", sa.String(length=500), primary_key=True),
        sa.Column("uidvalidity", sa.BigInteger(), nullable=True),
        sa.Column("last_uid", sa.BigInteger(), nullable=True),
        sa.Column("updated_at", _TS, nullable=False),
    )
    op.create_table(
        "mail_messages",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("message_id", sa.String(length=500), nullable=False, unique=True),
        sa.Column("mailbox", sa.String(length=500), nullable=False),
        sa.Column("thread_root", sa.String(length=500), nullable=False),
        sa.Column("parent_id", sa.String(length=500), nullable=True),
        sa.Column("subject_key", sa.String(length=300), nullable=False),
        sa.Column("from_addr", sa.String(length=300), nullable=False),
        sa.Column("ticket_ids", sa.JSON(), nullable=False),
        sa.Column("raised", sa.JSON(), nullable=False),
        sa.Column("ops", sa.JSON(), nullable=False),
        sa.Column("processed_at", _TS, nullable=False),
    )
    op.create_index("ix_mail_messages_thread", "mail_messages", ["thread_root"])
    op.create_index("ix_mail_messages_subject", "mail_messages", ["subject_key"])
    op.create_table(
        "mail_quarantine",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("mailbox", sa.String(length=500), nullable=False),
        sa.Column("source_key", sa.String(length=500), nullable=False),
        sa.Column("message_id", sa.String(length=500), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("raw_head", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.UniqueConstraint("mailbox", "sha256", name="uq_mail_quarantine_raw"),
    )


def downgrade() -> None:
    op.drop_table("mail_quarantine")
    op.drop_index("ix_mail_messages_subject", table_name="mail_messages")
    op.drop_index("ix_mail_messages_thread", table_name="mail_messages")
    op.drop_table("mail_messages")
    op.drop_table("mail_cursors")
