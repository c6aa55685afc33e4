"""What a personal agent declares about itself: its triggers, the scopes (tools) it may
use, which of those need the owner's approval first, its budget and the JSON Schema of
its configuration.

A manifest is data, checked once when the agent is loaded (``Manifest.parse``) so a
broken plugin fails at discovery, naming the field, not in the middle of a run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tickethub.errors import ValidationFailed
from tickethub.services.answer_schema import SchemaChecker

# Manifests and configurations are checked by the same offline, RE2-backed checker as
# every caller schema (default limits; small documents, so no worker processes).
_SCHEMAS = SchemaChecker()


class TriggerKind(StrEnum):
    COMMAND = "command"  # "/rewrite" at the start of the owner's comment or chat line
    EVENT = "event"  # "issue_comment.created": any such event (text from others untrusted)
    MENTION = "mention"  # "@owner": the owner's name mentioned in someone's text
    SCHEDULE = "schedule"  # "every 1h": the kernel's clock starts it


class Scope(StrEnum):
    """What an agent may do; each scope is one tool (least privilege: a tool whose scope
    the manifest does not name is refused and audited)."""

    COMMENT = "comment"  # post a comment where the event came from
    EDIT_OWN_COMMENT = "edit_own_comment"  # edit a comment this agent posted
    EDIT_OWNER_COMMENT = "edit_owner_comment"  # edit the owner's comment that triggered it
    LABEL = "label"  # add or remove labels where the event came from
    OPEN_TICKET = "open_ticket"  # open a hub ticket under the run
    ASK_HUMAN = "ask_human"  # ask the owner a question (a hub ticket to them)
    UPDATE_TASK = "update_task"  # close the hub (Agent Protocol) task behind the thread


_NAME = re.compile(r"^[a-z][a-z0-9-]{1,48}$")
_COMMAND = re.compile(r"^/[a-z][a-z0-9-]{0,31}$")
_EVENT = re.compile(r"^[a-z_]+(\.[a-z_]+)?$")
_EVERY = re.compile(r"^every (\d+)(s|m|h|d)$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True, slots=True)
class Trigger:
    kind: TriggerKind
    value: str  # "/rewrite", "issue_comment.created", "@owner", "every 1h"

    @classmethod
    def parse(cls, text: str, field_name: str = "triggers") -> Trigger:
        """``/cmd``, ``@owner``, ``every 1h`` (or ``schedule:1h``), else an event name."""
        text = text.strip()
        if text.startswith("/"):
            if not _COMMAND.match(text):
                raise ValidationFailed(f"{text!r} is not a slash command like /rewrite",
                                       field=field_name)
            return cls(TriggerKind.COMMAND, text)
        if text == "@owner":
            return cls(TriggerKind.MENTION, text)
        if text.startswith("schedule:"):
            text = "every " + text.removeprefix("schedule:").strip()
        if text.startswith("every "):
            if not _EVERY.match(text):
                raise ValidationFailed(f"{text!r} is not a schedule like 'every 1h'",
                                       field=field_name)
            return cls(TriggerKind.SCHEDULE, text)
        if not _EVENT.match(text):
            raise ValidationFailed(f"{text!r} is not a trigger (/command, @owner, "
                                   "'every 1h' or an event like issue_comment.created)",
                                   field=field_name)
        return cls(TriggerKind.EVENT, text)

    @property
    def every_seconds(self) -> int:
        """A schedule's period in seconds."""
        match = _EVERY.match(self.value)
        assert match is not None and self.kind is TriggerKind.SCHEDULE
        return int(match.group(1)) * _UNIT[match.group(2)]


@dataclass(frozen=True, slots=True)
class Limits:
    """A run's budget; the kernel stops the run cleanly when one is spent."""

    llm_calls: int = 4
    tokens: int = 20_000
    tool_calls: int = 6
    seconds: float = 120.0
    cost: float | None = None  # in the provider's currency, where it reports cost


class RunnerKind(StrEnum):
    HUB = "hub"  # the kernel calls the agent's ``run`` in the hub's process (default)
    ACTIONS = "actions"  # a GitHub Actions workflow in the owner's repository runs it


_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_WORKFLOW = re.compile(r"^[A-Za-z0-9_.-]+\.ya?ml$")


@dataclass(frozen=True, slots=True)
class Runner:
    """Where the agent's code runs. ``actions``: the hub dispatches ``workflow`` (a file
    under ``.github/workflows/``) in ``repo`` at ``ref`` and applies the result the
    workflow posts back (``agents/runners/actions.py``)."""

    kind: RunnerKind = RunnerKind.HUB
    repo: str | None = None
    workflow: str = "tickethub-agent.yml"
    ref: str = "main"

    @classmethod
    def parse(cls, raw: Any) -> Runner:
        """``"hub"``, ``"actions"`` (needs ``repo``) or an object with ``kind``,
        ``repo``, ``workflow``, ``ref``."""
        if raw is None:
            return cls()
        if isinstance(raw, str):
            raw = {"kind": raw}
        if not isinstance(raw, dict):
            raise ValidationFailed("runner is 'hub' or an object {kind, repo, workflow, "
                                   "ref}", field="manifest.runner")
        unknown = set(raw) - {"kind", "repo", "workflow", "ref"}
        if unknown:
            raise ValidationFailed(f"unknown runner fields: {sorted(unknown)}",
                                   field="manifest.runner")
        try:
            kind = RunnerKind(str(raw.get("kind", "hub")))
        except ValueError:
            raise ValidationFailed("runner kind is 'hub' or 'actions'",
                                   field="manifest.runner.kind") from None
        if kind is RunnerKind.HUB:
            return cls()
        repo = str(raw.get("repo") or "")
        if not _REPO.match(repo):
            raise ValidationFailed("an actions runner needs repo as OWNER/NAME",
                                   field="manifest.runner.repo")
        workflow = str(raw.get("workflow") or "tickethub-agent.yml")
        if not _WORKFLOW.match(workflow):
            raise ValidationFailed("workflow is a file name under .github/workflows/, "
                                   "like tickethub-agent.yml", field="manifest.runner.workflow")
        ref = str(raw.get("ref") or "main")
        if not ref.strip() or any(c.isspace() for c in ref):
            raise ValidationFailed("ref is a branch or tag name", field="manifest.runner.ref")
        return cls(kind, repo, workflow, ref)


@dataclass(frozen=True, slots=True)
class Manifest:
    name: str
    description: str
    triggers: tuple[Trigger, ...]
    scopes: frozenset[Scope]
    sensitive: frozenset[Scope] = frozenset()  # these go through an approval ticket
    config_schema: dict[str, Any] | None = None
    limits: Limits = field(default_factory=Limits)
    context_chars: int = 12_000  # the size budget of the context given to the model
    runner: Runner = field(default_factory=Runner)

    @classmethod
    def parse(cls, data: dict[str, Any]) -> Manifest:
        """A manifest from plain data (as a plugin writes it); raises ``ValidationFailed``
        naming the field when something is wrong."""
        if not isinstance(data, dict):
            raise ValidationFailed("a manifest must be an object", field="manifest")
        name = str(data.get("name") or "")
        if not _NAME.match(name):
            raise ValidationFailed("name must be 2-49 lower-case letters, digits or '-'",
                                   field="manifest.name")
        raw_triggers = data.get("triggers") or []
        if not isinstance(raw_triggers, list | tuple) or not raw_triggers:
            raise ValidationFailed("an agent needs at least one trigger",
                                   field="manifest.triggers")
        triggers = tuple(Trigger.parse(str(t), f"manifest.triggers.{i}")
                         for i, t in enumerate(raw_triggers))
        scopes = _scopes(data.get("scopes") or [], "manifest.scopes")
        sensitive = _scopes(data.get("sensitive") or [], "manifest.sensitive")
        if not sensitive <= scopes:
            raise ValidationFailed("sensitive scopes must also be in scopes",
                                   field="manifest.sensitive")
        schema = data.get("config_schema")
        if schema is not None:
            _SCHEMAS.check_schema(schema, "manifest.config_schema")
        limits = data.get("limits") or {}
        if not isinstance(limits, dict):
            raise ValidationFailed("limits must be an object", field="manifest.limits")
        try:
            parsed_limits = Limits(**limits)
        except TypeError as exc:
            raise ValidationFailed(str(exc), field="manifest.limits") from None
        return cls(name=name, description=str(data.get("description") or ""),
                   triggers=triggers, scopes=scopes, sensitive=sensitive,
                   config_schema=schema, limits=parsed_limits,
                   context_chars=int(data.get("context_chars") or 12_000),
                   runner=Runner.parse(data.get("runner")))

    def check_config(self, config: Any) -> None:
        """Raise ``ValidationFailed`` (naming the field under ``config``) unless
        ``config`` satisfies the agent's configuration schema."""
        if not isinstance(config, dict):
            raise ValidationFailed("configuration must be an object", field="config")
        _SCHEMAS.validate(config, self.config_schema, "config")

    def commands(self) -> frozenset[str]:
        """The slash commands (without '/') this agent answers to."""
        return frozenset(t.value[1:] for t in self.triggers if t.kind is TriggerKind.COMMAND)


def _scopes(raw: Any, field_name: str) -> frozenset[Scope]:
    if not isinstance(raw, list | tuple | set | frozenset):
        raise ValidationFailed("scopes must be a list", field=field_name)
    out = set()
    for i, item in enumerate(raw):
        try:
            out.add(Scope(str(item)))
        except ValueError:
            raise ValidationFailed(
                f"unknown scope {item!r}; known: {sorted(s.value for s in Scope)}",
                field=f"{field_name}.{i}") from None
    return frozenset(out)
