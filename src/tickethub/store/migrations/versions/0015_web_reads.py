"""web reads: per-person read marks and saved inbox views; an index for view counts

Revision ID: 0015_web_reads
Revises: 0014_request_ids
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0015_web_reads"
down_revision = "0014_request_ids"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "web_reads",
        sa.Column("actor_id", sa.Integer(), sa.ForeignKey("actors.id"), nullable=False),
        sa.Column("ticket_id", sa.Integer(), sa.ForeignKey("tickets.id"), nullable=False),
        sa.Column("read_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("actor_id", "ticket_id"),
    )
    op.create_table(
        "web_saved_views",
        sa.Column("actor_id", sa.Integer(), sa.ForeignKey("actors.id"), nullable=False),
        sa.Column("name", sa.String(length=60), nullable=False),
        sa.Column("query", sa.String(length=1000), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("actor_id", "name"),
    )
    op.create_index("ix_tickets_status_assignee", "tickets", ["status", "assignee"])


def downgrade() -> None:
    op.drop_index("ix_tickets_status_assignee", table_name="tickets")
    op.drop_table("web_saved_views")
    op.drop_table("web_reads")
