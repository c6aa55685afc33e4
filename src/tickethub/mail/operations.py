"""The operations a mail may cause on the issue tree, validated before anything changes.

Operations are data, never free-form edits: code applies them (``mail.apply``). Every
operation carries an ``evidence`` quote from the mail's own text; an operation whose quote
is not in the mail, or that names an issue the extractor was not shown, is rejected and
recorded, never applied.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

OpName = Literal["add", "answer", "complete", "status", "ignore"]
CLOSING_STATUSES = frozenset({"answered", "done", "cancelled"})


MAX_EVIDENCE = 1000
"""The longest evidence quote an operation carries (characters)."""


class Operation(BaseModel):
    """One change to the tree. ``target`` and ``parent`` are ticket ids from the context."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    op: OpName
    evidence: str = Field("", max_length=MAX_EVIDENCE,
                          description="A verbatim quote of the mail's own text.")
    target: int | None = Field(None, description="Issue acted on (answer/complete/status).")
    kind: Literal["question", "task"] | None = Field(None, description="For add.")
    title: str | None = Field(None, max_length=300, description="For add: one line.")
    summary: str | None = Field(None, max_length=4000, description="For add.")
    parent: int | None = Field(None, description="For add: parent issue; default the "
                               "thread's first issue, else the root issue.")
    assignee: str | None = Field(None, max_length=200)
    due: date | None = Field(None, description="For add, or status open with a deadline.")
    new_status: Literal["open", "deferred", "cancelled"] | None = Field(
        None, description="For status: reopen/undefer/deadline, defer, or cancel.")

    @model_validator(mode="after")
    def _shape(self) -> Operation:
        if self.op == "add":
            if self.kind is None or not (self.title or "").strip():
                raise ValueError("add needs kind and title")
        elif self.op in ("answer", "complete", "status"):
            if self.target is None:
                raise ValueError(f"{self.op} needs a target issue")
            if self.op == "status" and self.new_status is None:
                raise ValueError("status needs new_status")
        if self.op != "ignore" and not self.evidence.strip():
            raise ValueError(f"{self.op} needs an evidence quote")
        return self

    @property
    def resulting_status(self) -> str | None:
        """The status the operation asks for (``None`` for add and ignore)."""
        return {"answer": "answered", "complete": "done"}.get(self.op) or self.new_status

    @property
    def is_closing(self) -> bool:
        return self.op in ("answer", "complete") or self.new_status in CLOSING_STATUSES


class OperationList(BaseModel):
    """What an extractor returns for one mail (also the LLM's response schema)."""

    model_config = ConfigDict(extra="forbid")

    operations: list[Operation] = Field(default_factory=list, max_length=8)


def normalized(text: str) -> str:
    """``text`` lower-cased, its whitespace runs one space, trimmed. (``str.split`` cuts
    where ``re``'s ``\\s`` does, the same characters, at a quarter of a regex's cost.)"""
    return " ".join(text.split()).lower()


def quote_found(evidence: str, text: str) -> bool:
    """True when ``evidence`` occurs in ``text``, ignoring case and whitespace runs."""
    needle = normalized(evidence).strip(" .\"'")
    return bool(needle) and needle in normalized(text)


def rejection(op: Operation, known: set[int], text: str) -> str | None:
    """Why ``op`` must not be applied, or ``None`` when it may be."""
    if op.op == "ignore":
        return None
    if op.target is not None and op.target not in known:
        return f"unknown target issue {op.target}"
    if op.parent is not None and op.parent not in known:
        return f"unknown parent issue {op.parent}"
    if not quote_found(op.evidence, text):
        return "evidence is not a quote of the mail"
    return None
