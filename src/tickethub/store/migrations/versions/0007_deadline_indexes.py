"""deadline indexes: (status, due_at) and (status, next_attention_at)

The deadline loop asks for the earliest deadline of a waiting ticket after every burst of
changes. With an index on the deadline alone that read walked every waiting ticket; led
by the status it is one index seek per status, however many tickets wait.

Revision ID: 0007_deadline_indexes
Revises: 0006_login_links
Create Date: 2026-11-23
"""

from alembic import op

revision = "0007_deadline_indexes"
down_revision = "0006_login_links"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_tickets_due", table_name="tickets")
    op.drop_index("ix_tickets_attention", table_name="tickets")
    op.create_index("ix_tickets_status_due", "tickets", ["status", "due_at"])
    op.create_index("ix_tickets_status_attention", "tickets", ["status", "next_attention_at"])


def downgrade() -> None:
    op.drop_index("ix_tickets_status_attention", table_name="tickets")
    op.drop_index("ix_tickets_status_due", table_name="tickets")
    op.create_index("ix_tickets_attention", "tickets", ["next_attention_at"])
    op.create_index("ix_tickets_due", "tickets", ["due_at"])
