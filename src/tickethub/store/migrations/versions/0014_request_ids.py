"""request ids: the HTTP request that wrote each event (docs/operations.md)

Revision ID: 0014_request_ids
Revises: 0013_agent_identities
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0014_request_ids"
down_revision = "0013_agent_identities"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("events", sa.Column("request_id", sa.String(length=128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("events") as batch:
        batch.drop_column("request_id")
