"""ap step claims: which hub process's in-hub Agent Protocol worker handles a step left
running, until when (``ap_steps.claimed_until``), so several processes hand it off once

Revision ID: 0017_ap_step_claims
Revises: 0016_urgent_unread
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0017_ap_step_claims"
down_revision = "0016_urgent_unread"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ap_steps") as batch:
        batch.add_column(sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ap_steps") as batch:
        batch.drop_column("claimed_until")
