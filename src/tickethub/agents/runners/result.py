"""The result an Actions workflow posts back: the actions its agent wants the hub to take
and the model use it reports. A wire schema (pydantic at the edge); the hub applies the
actions through the run's toolbox, so scopes, approvals, the budget and the audit apply
exactly as for an agent running in the hub."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

_TEXT = Field(min_length=1, max_length=60_000)


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid")

    why: str = Field("", max_length=2_000, description="Why the agent wants it (audited).")

    def arguments(self) -> dict[str, Any]:
        """The tool's arguments (everything but ``type`` and ``why``)."""
        return self.model_dump(exclude={"type", "why"})


class Comment(_Action):
    type: Literal["comment"]
    body: str = _TEXT


class EditOwnComment(_Action):
    type: Literal["edit_own_comment"]
    comment_id: str = Field(min_length=1, max_length=40)
    body: str = _TEXT


class EditOwnerComment(_Action):
    type: Literal["edit_owner_comment"]
    body: str = _TEXT


class Label(_Action):
    type: Literal["label"]
    add: list[str] = Field(default_factory=list, max_length=20)
    remove: list[str] = Field(default_factory=list, max_length=20)


class OpenTicket(_Action):
    type: Literal["open_ticket"]
    title: str = Field(min_length=1, max_length=200)
    body: str = Field("", max_length=60_000)


class AskHuman(_Action):
    type: Literal["ask_human"]
    question: str = _TEXT


class UpdateTask(_Action):
    type: Literal["update_task"]
    note: str = _TEXT


Action = Annotated[Comment | EditOwnComment | EditOwnerComment | Label | OpenTicket
                   | AskHuman | UpdateTask, Field(discriminator="type")]


class ReportedUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    llm_calls: int = Field(0, ge=0)
    tokens: int = Field(0, ge=0)
    cost: float | None = Field(None, ge=0)


class RunResult(BaseModel):
    """``run_id`` must be the run the signed URL was for; ``status`` ``failed`` (with
    ``error``) when the agent could not finish — its actions are then not applied."""

    model_config = ConfigDict(extra="forbid")

    run_id: int
    status: Literal["done", "failed"] = "done"
    error: str | None = Field(None, max_length=2_000)
    actions: list[Action] = Field(default_factory=list, max_length=20)
    usage: ReportedUsage = Field(default_factory=ReportedUsage)
