"""personal agents: installations, runs and sealed secrets

Revision ID: 0011_personal_agents
Revises: 0010_github_inbox_retry
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

_TS = sa.DateTime(timezone=True)

revision = "0011_personal_agents"
down_revision = "0010_github_inbox_retry"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_installations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("owner", sa.String(length=100), nullable=False),
        sa.Column("agent", sa.String(length=50), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("identities", sa.JSON(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("owner", "agent", name="uq_agent_installations_owner_agent"),
    )
    op.create_index("ix_agent_installations_agent", "agent_installations", ["agent"])
    op.create_table(
        "agent_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("installation_id", sa.Integer(), nullable=False),
        sa.Column("ticket_id", sa.Integer(), nullable=True),
        sa.Column("trigger", sa.String(length=120), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("llm_calls", sa.Integer(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("tool_calls", sa.Integer(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("started_at", _TS, nullable=False),
        sa.Column("finished_at", _TS, nullable=True),
        sa.ForeignKeyConstraint(["installation_id"], ["agent_installations.id"]),
        sa.ForeignKeyConstraint(["ticket_id"], ["tickets.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_agent_runs_installation", "agent_runs", ["installation_id", "id"])
    op.create_table(
        "agent_secrets",
        sa.Column("owner", sa.String(length=100), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("sealed", sa.LargeBinary(), nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("owner", "name"),
    )


def downgrade() -> None:
    op.drop_table("agent_secrets")
    op.drop_index("ix_agent_runs_installation", table_name="agent_runs")
    op.drop_table("agent_runs")
    op.drop_index("ix_agent_installations_agent", table_name="agent_installations")
    op.drop_table("agent_installations")
