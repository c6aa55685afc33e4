"""chat sync tokens: where each chat account (the Matrix bot) stopped reading its
platform's event stream, so a restarted hub goes on from there instead of re-reading the
last events of each room (``chat_sync_tokens``)

Revision ID: 0018_chat_sync_tokens
Revises: 0017_ap_step_claims
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0018_chat_sync_tokens"
down_revision = "0017_ap_step_claims"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chat_sync_tokens",
        sa.Column("account", sa.String(500), primary_key=True),
        sa.Column("token", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("chat_sync_tokens")
