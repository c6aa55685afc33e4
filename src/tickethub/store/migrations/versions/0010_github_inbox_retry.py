"""github inbox retry: a failed webhook delivery's next attempt, stored

A delivery whose processing fails (GitHub down while checking the commenter's
permission) waits its own turn instead of holding up the deliveries behind it, and that
turn survives a restart. NULL: due at once (new deliveries, and every row made before).

Revision ID: 0010_github_inbox_retry
Revises: 0009_message_decisions
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_github_inbox_retry"
down_revision = "0009_message_decisions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("github_inbox") as batch:
        batch.add_column(sa.Column("next_attempt_at", sa.DateTime(timezone=True),
                                   nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("github_inbox") as batch:
        batch.drop_column("next_attempt_at")
