"""token scopes: what a token adds to its actor's role (e.g. ``read:all``)

Agents read only their own tickets by default; a token can be given a wider read scope
explicitly. Existing tokens get no scope.

Revision ID: 0008_token_scopes
Revises: 0007_deadline_indexes
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_token_scopes"
down_revision = "0007_deadline_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("scopes", sa.String(200), nullable=False,
                                   server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("scopes")
