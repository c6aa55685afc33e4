"""agent protocol: tasks, steps and artifacts of the /ap/v1 door

Revision ID: 0004_agent_protocol
Revises: 0003_github
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_agent_protocol"
down_revision = "0003_github"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ap_tasks",
        sa.Column("task_id", sa.String(length=36), nullable=False),
        sa.Column("ticket_id", sa.Integer(), nullable=False),
        sa.Column("input", sa.Text(), nullable=True),
        sa.Column("additional_input", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["ticket_id"], ["tickets.id"]),
        sa.PrimaryKeyConstraint("task_id"),
        sa.UniqueConstraint("ticket_id"),
    )
    op.create_table(
        "ap_steps",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("step_id", sa.String(length=36), nullable=False),
        sa.Column("task_id", sa.String(length=36), nullable=False),
        sa.Column("input", sa.Text(), nullable=True),
        sa.Column("additional_input", sa.JSON(), nullable=True),
        sa.Column("input_message_id", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["ap_tasks.task_id"]),
        sa.ForeignKeyConstraint(["input_message_id"], ["messages.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("step_id"),
    )
    op.create_index("ix_ap_steps_task", "ap_steps", ["task_id", "id"])
    op.create_table(
        "ap_artifacts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("artifact_id", sa.String(length=36), nullable=False),
        sa.Column("task_id", sa.String(length=36), nullable=False),
        sa.Column("step_id", sa.String(length=36), nullable=True),
        sa.Column("agent_created", sa.Boolean(), nullable=False),
        sa.Column("file_name", sa.String(length=255), nullable=False),
        sa.Column("relative_path", sa.String(length=1000), nullable=True),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("storage_key", sa.String(length=200), nullable=False),
        sa.Column("created_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["ap_tasks.task_id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("artifact_id"),
    )
    op.create_index("ix_ap_artifacts_task", "ap_artifacts", ["task_id", "id"])
    op.create_index("ix_ap_artifacts_step", "ap_artifacts", ["step_id"])


def downgrade() -> None:
    op.drop_index("ix_ap_artifacts_step", table_name="ap_artifacts")
    op.drop_index("ix_ap_artifacts_task", table_name="ap_artifacts")
    op.drop_table("ap_artifacts")
    op.drop_index("ix_ap_steps_task", table_name="ap_steps")
    op.drop_table("ap_steps")
    op.drop_table("ap_tasks")
