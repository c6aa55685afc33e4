"""message decisions: ``messages.decision``

Every answer, approval (maybe edited) and denial is kept as an ``answer`` message; the
new nullable column says which decision it records (``answered``, ``approved``,
``edited``, ``denied``), so a reopened ticket still shows every earlier outcome. Older
rows keep ``NULL``: they were written before decisions were recorded.

Revision ID: 0009_message_decisions
Revises: 0008_token_scopes
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_message_decisions"
down_revision = "0008_token_scopes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("decision", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("decision")
