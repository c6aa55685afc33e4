"""login links: one-time sign-in links for the web inbox

Revision ID: 0006_login_links
Revises: 0005_mail
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_login_links"
down_revision = "0005_mail"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "login_links",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("actor_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["actor_id"], ["actors.id"]),
        sa.PrimaryKeyConstraint("token_hash"),
    )


def downgrade() -> None:
    op.drop_table("login_links")
