"""personal agents: owners' identities as rows, so routing filters in SQL

Revision ID: 0013_agent_identities
Revises: 0012_chat_conversations
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0013_agent_identities"
down_revision = "0012_chat_conversations"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_identities",
        sa.Column("installation_id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(["installation_id"], ["agent_installations.id"]),
        sa.PrimaryKeyConstraint("installation_id", "source"),
    )
    op.create_index("ix_agent_identities_source_name", "agent_identities",
                    ["source", "name"])
    # The identities installations already have (their JSON column stays the record).
    conn = op.get_bind()
    installations = sa.table("agent_installations", sa.column("id", sa.Integer()),
                             sa.column("identities", sa.JSON()))
    rows = [{"installation_id": r.id, "source": str(source)[:40], "name": str(name)[:200]}
            for r in conn.execute(sa.select(installations.c.id, installations.c.identities))
            for source, name in (r.identities or {}).items() if name]
    if rows:
        identities = sa.table("agent_identities", sa.column("installation_id", sa.Integer()),
                              sa.column("source", sa.String()), sa.column("name", sa.String()))
        op.bulk_insert(identities, rows)


def downgrade() -> None:
    op.drop_index("ix_agent_identities_source_name", table_name="agent_identities")
    op.drop_table("agent_identities")
