"""Tables of the Agent Protocol door: tasks (each one a ticket), steps (turns on that
ticket) and artifacts (files under the data directory). Migration 0002 creates exactly
these; they hang off the shared ``metadata`` so autogenerate sees them."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    text,
)

from tickethub.store.tables import metadata
from tickethub.store.types import UTCDateTime

ap_tasks = Table(
    "ap_tasks",
    metadata,
    Column("task_id", String(36), primary_key=True),
    Column("ticket_id", Integer, ForeignKey("tickets.id"), nullable=False, unique=True),
    Column("input", Text, nullable=True),
    Column("additional_input", JSON, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
)

ap_steps = Table(
    "ap_steps",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("step_id", String(36), nullable=False, unique=True),
    Column("task_id", String(36), ForeignKey("ap_tasks.task_id"), nullable=False),
    Column("input", Text, nullable=True),
    Column("additional_input", JSON, nullable=True),
    Column("input_message_id", Integer, ForeignKey("messages.id"), nullable=False),
    Column("created_by", String(100), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    # Until when an in-hub worker's process has the step (``AgentTaskService.claim``).
    Column("claimed_until", UTCDateTime, nullable=True),
    Index("ix_ap_steps_task", "task_id", "id"),
    # Partial: ``lapsed_claims`` runs in every process every third of a lease, and only
    # the few steps being handled have a claim (migration 0019).
    Index("ix_ap_steps_claimed", "claimed_until",
          postgresql_where=text("claimed_until IS NOT NULL"),
          sqlite_where=text("claimed_until IS NOT NULL")),
)

ap_artifacts = Table(
    "ap_artifacts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("artifact_id", String(36), nullable=False, unique=True),
    Column("task_id", String(36), ForeignKey("ap_tasks.task_id"), nullable=False),
    Column("step_id", String(36), nullable=True),
    Column("agent_created", Boolean, nullable=False),
    Column("file_name", String(255), nullable=False),
    Column("relative_path", String(1000), nullable=True),
    Column("size", Integer, nullable=False),
    Column("storage_key", String(200), nullable=False),
    Column("created_by", String(100), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_ap_artifacts_task", "task_id", "id"),
    Index("ix_ap_artifacts_step", "step_id"),
)
