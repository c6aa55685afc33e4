"""ap step claims index: the in-hub worker looks for lapsed claims every third of a lease
in every process; a partial index over the claimed steps makes that a probe of the few
steps being handled instead of a scan of every step ever stored
(``ix_ap_steps_claimed``)

Revision ID: 0019_ap_step_claims_index
Revises: 0018_chat_sync_tokens
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0019_ap_step_claims_index"
down_revision = "0018_chat_sync_tokens"
branch_labels = None
depends_on = None

_CLAIMED = sa.text("claimed_until IS NOT NULL")


def upgrade() -> None:
    op.create_index("ix_ap_steps_claimed", "ap_steps", ["claimed_until"],
                    postgresql_where=_CLAIMED, sqlite_where=_CLAIMED)


def downgrade() -> None:
    op.drop_index("ix_ap_steps_claimed", table_name="ap_steps")
