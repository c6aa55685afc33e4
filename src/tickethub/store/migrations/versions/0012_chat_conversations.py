"""chat conversations: per-thread inbox and version, conversations, bot prompts

Revision ID: 0012_chat_conversations
Revises: 0011_personal_agents
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_chat_conversations"
down_revision = "0011_personal_agents"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "chat_threads",
        sa.Column("thread", sa.String(length=500), primary_key=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
    )
    op.create_table(
        "chat_inbox",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("thread", sa.String(length=500), nullable=False),
        sa.Column("transport", sa.String(length=50), nullable=False),
        sa.Column("event_id", sa.String(length=500), nullable=False),
        sa.Column("sender", sa.String(length=300), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("route", sa.Text(), nullable=True),
        sa.Column("received_at", _TS, nullable=False),
        sa.UniqueConstraint("transport", "event_id", name="uq_chat_inbox_event"),
    )
    op.create_index("ix_chat_inbox_thread_status", "chat_inbox", ["thread", "status", "seq"])
    op.create_table(
        "chat_conversations",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("ticket_id", sa.Integer(), sa.ForeignKey("tickets.id"), nullable=False,
                  unique=True),
        sa.Column("thread", sa.String(length=500), nullable=False),
        sa.Column("participant", sa.String(length=300), nullable=False),
        sa.Column("handler", sa.String(length=100), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("due_at", _TS, nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
    )
    op.create_index("ix_chat_conversations_thread", "chat_conversations",
                    ["thread", "status"])
    op.create_index("ix_chat_conversations_participant", "chat_conversations",
                    ["participant", "status"])
    op.create_index("ix_chat_conversations_due", "chat_conversations", ["status", "due_at"])
    op.create_table(
        "chat_prompts",
        sa.Column("event_id", sa.String(length=500), primary_key=True),
        sa.Column("conversation_id", sa.Integer(), sa.ForeignKey("chat_conversations.id"),
                  nullable=False),
        sa.Column("created_at", _TS, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("chat_prompts")
    op.drop_table("chat_conversations")
    op.drop_table("chat_inbox")
    op.drop_table("chat_threads")
