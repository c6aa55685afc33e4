"""Wire schemas of the Agent Protocol v1 door, as ``agent-protocol-openapi.yml`` names
them. Request bodies are validated here; responses are built as plain dicts by the
``*_out`` functions (the models below document them in the OpenAPI schema)."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from tickethub.api.wire_types import NoNul
from tickethub.services.agent_tasks import ArtifactRecord, StepView, TaskView

MAX_INPUT = 200_000
InputText = Annotated[str, StringConstraints(max_length=MAX_INPUT), NoNul]


class _Body(BaseModel):
    # The spec does not forbid other properties, so a spec client may send some.
    model_config = ConfigDict(extra="ignore", strict=True)


class TaskRequestBody(_Body):
    input: InputText | None = Field(None, description="Input prompt for the task.")
    additional_input: dict[str, Any] | None = Field(
        None, description="Input parameters for the task. Kept exactly as sent; scalar "
        "top-level keys are indexed and filter GET /ap/v1/agent/tasks (extension).")


class StepRequestBody(_Body):
    input: InputText | None = Field(None, description="Input prompt for the step.")
    additional_input: dict[str, Any] | None = Field(
        None, description="Input parameters for the task step.")


class Artifact(BaseModel):
    artifact_id: str
    agent_created: bool
    file_name: str
    relative_path: str | None = None


class Step(BaseModel):
    input: str | None = None
    additional_input: dict[str, Any] | None = None
    task_id: str
    step_id: str
    name: str | None = None
    status: Literal["created", "running", "completed"]
    output: str | None = None
    additional_output: dict[str, Any] | None = Field(
        None, description="While a person has not replied: {'waiting_for_human': "
        "{ticket_id, url, html_url}}; once replied: who replied and through which channel.")
    artifacts: list[Artifact] = []
    is_last: bool = False


class Task(BaseModel):
    input: str | None = None
    additional_input: dict[str, Any] | None = None
    task_id: str
    artifacts: list[Artifact] = []
    steps: list[Step] | None = Field(None, description="Only with ?include=steps "
                                     "(extension).")


class Pagination(BaseModel):
    total_items: int
    total_pages: int
    current_page: int
    page_size: int


class TaskListResponse(BaseModel):
    tasks: list[Task]
    pagination: Pagination


class TaskStepsListResponse(BaseModel):
    steps: list[Step]
    pagination: Pagination


class TaskArtifactsListResponse(BaseModel):
    artifacts: list[Artifact]
    pagination: Pagination


class NotFoundMessage(BaseModel):
    message: str = Field(examples=["Unable to find entity with the provided id"])


# -- responses as dicts ------------------------------------------------------------------


def artifact_out(a: ArtifactRecord) -> dict[str, Any]:
    return {"artifact_id": a.artifact_id, "agent_created": a.agent_created,
            "file_name": a.file_name, "relative_path": a.relative_path}


def step_out(view: StepView, waiting: dict[str, Any] | None = None) -> dict[str, Any]:
    state = view.state
    additional_output = state.additional_output
    if state.status != "completed" and waiting is not None:
        additional_output = {"waiting_for_human": waiting}
    return {
        "input": state.record.input,
        "additional_input": state.record.additional_input,
        "task_id": view.task_id,
        "step_id": state.step_id,
        "name": None,
        "status": state.status,
        "output": state.output,
        "additional_output": additional_output,
        "artifacts": [artifact_out(a) for a in view.artifacts],
        "is_last": state.is_last,
    }


def task_out(view: TaskView, waiting: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "input": view.record.input,
        "additional_input": view.record.additional_input,
        "task_id": view.record.task_id,
        "artifacts": [artifact_out(a) for a in view.artifacts],
    }
    if view.steps is not None:
        out["steps"] = [step_out(s, waiting) for s in view.steps]
    return out


def pagination(total: int, page: int, size: int) -> dict[str, int]:
    """The spec's pagination object; ``total_pages`` is rounded up."""
    return {"total_items": total, "total_pages": math.ceil(total / size),
            "current_page": page, "page_size": size}
