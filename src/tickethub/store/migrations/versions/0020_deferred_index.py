"""deferred index: the index for "which deferred tickets come back when" covers only the
deferred tickets (partial, ``ix_tickets_deferred_until``) instead of every ticket by
status (``ix_tickets_status_attention``), so the changes of status of all the others
(an ask, an answer) no longer write to it

Revision ID: 0020_deferred_index
Revises: 0019_ap_step_claims_index
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0020_deferred_index"
down_revision = "0019_ap_step_claims_index"
branch_labels = None
depends_on = None

_DEFERRED_ONLY = sa.text("status = 'deferred'")


def upgrade() -> None:
    op.create_index("ix_tickets_deferred_until", "tickets", ["next_attention_at"],
                    postgresql_where=_DEFERRED_ONLY, sqlite_where=_DEFERRED_ONLY)
    op.drop_index("ix_tickets_status_attention", table_name="tickets")


def downgrade() -> None:
    op.create_index("ix_tickets_status_attention", "tickets", ["status", "next_attention_at"])
    op.drop_index("ix_tickets_deferred_until", table_name="tickets")
