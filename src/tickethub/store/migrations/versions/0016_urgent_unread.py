"""urgent and unread: an index serving "most urgent first" per status without a sort;
read marks remember the event they were made at, so later activity shows unread

Revision ID: 0016_urgent_unread
Revises: 0015_web_reads
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0016_urgent_unread"
down_revision = "0015_web_reads"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # (status, due_at, id DESC) also serves everything (status, due_at) did (deadlines).
    op.create_index("ix_tickets_status_due_id", "tickets",
                    ["status", "due_at", sa.text("id DESC")])
    op.drop_index("ix_tickets_status_due", table_name="tickets")
    with op.batch_alter_table("web_reads") as batch:
        batch.add_column(sa.Column("seen_seq", sa.Integer(), nullable=False,
                                   server_default="0"))
    # Marks made before this revision count as read up to now.
    op.execute("UPDATE web_reads SET seen_seq = COALESCE((SELECT MAX(seq) FROM events), 0)")


def downgrade() -> None:
    with op.batch_alter_table("web_reads") as batch:
        batch.drop_column("seen_seq")
    op.create_index("ix_tickets_status_due", "tickets", ["status", "due_at"])
    op.drop_index("ix_tickets_status_due_id", table_name="tickets")
