"""The GitHub Actions runner, the workflow's side: ``python -m
tickethub.agents.runners.remote --agent my_agent:agent`` in the owner's repository.

It fetches the run's context from the signed URL the dispatch carried (``CONTEXT_URL``),
runs the agent with the owner's own model (``AGENT_LLM_BASE_URL``, ``AGENT_LLM_API_KEY``,
``AGENT_LLM_MODEL``: repository secrets) and a toolbox that only *records* the actions
the agent wants, then posts them to the hub as a signed
:class:`~tickethub.agents.runners.result.RunResult`. The workflow holds no GitHub token
of the hub's and writes nothing itself: the hub applies the actions through the same
scopes, approvals, budget and audit as for an agent running in the hub.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any, cast

import httpx
from pydantic import TypeAdapter, ValidationError

from tickethub.agents.budget import Budget, BudgetExceeded
from tickethub.agents.context import Context, Piece
from tickethub.agents.events import AgentEvent, Post
from tickethub.agents.manifest import Limits, Scope
from tickethub.agents.plugin import PersonalAgent
from tickethub.agents.run import Run
from tickethub.agents.runners.grants import SIGNATURE_HEADER, body_signature
from tickethub.agents.runners.result import Action, ReportedUsage, RunResult
from tickethub.agents.tools import SPECS, Toolbox, ToolResult
from tickethub.llm.port import LLM

_ACTION: TypeAdapter[Action] = TypeAdapter(Action)


class RecordingTools:
    """The toolbox of a run in a workflow: checks scope, arguments and the tool budget,
    and records the action for the hub to apply (nothing is written from here)."""

    def __init__(self, scopes: frozenset[Scope], budget: Budget) -> None:
        self._scopes = scopes
        self._budget = budget
        self.actions: list[Action] = []
        self.posted: list[str] = []

    def specs(self) -> list[dict[str, Any]]:
        return [{"type": "function", "function": {
            "name": scope.value, "description": SPECS[scope]["description"],
            "parameters": {"type": "object", "additionalProperties": False,
                           **{k: v for k, v in SPECS[scope].items() if k != "description"}}}}
            for scope in sorted(self._scopes)]

    async def call(self, name: str, args: dict[str, Any], why: str = "") -> ToolResult:
        if name not in {s.value for s in self._scopes}:
            return ToolResult(False, f"refused: the scope {name!r} is not granted")
        try:
            action = _ACTION.validate_python({**args, "type": name, "why": why[:2000]})
        except ValidationError as exc:
            return ToolResult(False, f"refused: {exc.errors()[0]['msg']}")
        self._budget.before_tool_call()
        self.actions.append(action)
        if name == "comment":
            self.posted.append(f"pending-{len(self.actions)}")
        return ToolResult(True, f"{name} recorded; the hub applies it after the run")


class _ContextSurface:
    """The thread as the hub built it; writes go through ``run.call`` only."""

    def __init__(self, source: str, pieces: list[Piece]) -> None:
        self.source = source
        self._pieces = pieces

    async def thread(self) -> list[Post]:
        return [Post(p.author, p.text, p.ref) for p in self._pieces if p.kind == "thread"]

    async def linked(self) -> list[Post]:
        return [Post(p.author, p.text, p.ref) for p in self._pieces if p.kind == "linked"]

    async def _refuse(self, *args: Any) -> Any:
        raise RuntimeError("in a workflow, act with run.call(...); the hub applies it")

    comment = read_comment = edit_comment = label = _refuse


def build_run(document: dict[str, Any], llm: LLM) -> Run:
    """A ``Run`` from the hub's context document, with a recording toolbox."""
    pieces = [Piece(p["kind"], p["author"], p["ref"], p["text"], bool(p["trusted"]))
              for p in document["context"]["pieces"]]
    limits = Limits(**document["limits"])
    budget = Budget(limits)
    ev = document["event"]
    event = AgentEvent(ev["name"], ev["author"], ev["text"],
                       _ContextSurface(ev["source"], pieces), ev.get("comment_id"))
    tools = RecordingTools(frozenset(Scope(s) for s in document["scopes"]), budget)
    # ``Run`` is typed with the hub's toolbox; this one has the same surface.
    return Run(int(document["run_id"]), str(document["owner"]), event,
               Context(tuple(pieces), int(document["context"]["dropped"])),
               dict(document["config"]), cast(Toolbox, tools), budget, llm)


async def execute(agent: PersonalAgent, context_url: str, llm: LLM,
                  client: httpx.AsyncClient) -> tuple[RunResult, httpx.Response]:
    """Fetch, run, post; returns the result sent and the hub's answer."""
    fetched = await client.get(context_url)
    fetched.raise_for_status()
    document = fetched.json()
    run = build_run(document, llm)
    status, error = "done", None
    try:
        await agent.run(run)
    except BudgetExceeded as exc:
        status, error = "failed", str(exc)
    except Exception as exc:  # reported to the hub, which marks the run failed
        status, error = "failed", f"{type(exc).__name__}: {exc}"[:2000]
    used = run.budget.used
    tools = cast(RecordingTools, run.tools)
    result = RunResult(run_id=run.id, status=status, error=error,
                       actions=tools.actions,
                       usage=ReportedUsage(llm_calls=used.llm_calls, tokens=used.tokens,
                                           cost=used.cost or None))
    body = result.model_dump_json().encode()
    answer = await client.post(
        document["result_url"], content=body,
        headers={"Content-Type": "application/json",
                 SIGNATURE_HEADER: body_signature(document["result_key"], body)})
    return result, answer


def _load(target: str) -> PersonalAgent:
    """``module:attribute`` (the template's own package) or an installed agent's name."""
    from tickethub.agents.registry import AgentRegistry, default_registry

    if ":" not in target:
        return default_registry().get(target)
    registry = AgentRegistry()
    registry.load(target, "workflow")
    if registry.errors:
        raise SystemExit(f"error: {target}: {next(iter(registry.errors.values()))}")
    return registry.get(registry.names()[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tickethub.agents.runners.remote",
        description="Run a personal agent in a GitHub Actions workflow for the hub: fetch "
                    "the run's context from CONTEXT_URL, run the agent with the model at "
                    "AGENT_LLM_BASE_URL, post its actions back signed.")
    parser.add_argument("--agent", required=True,
                        help="module:attribute of the agent, or an installed agent's name")
    parser.add_argument("--context-url", default=os.environ.get("CONTEXT_URL"),
                        help="the signed URL from the dispatch [env CONTEXT_URL]")
    args = parser.parse_args(argv)
    if not args.context_url:
        print("error: no context URL (--context-url or CONTEXT_URL)", file=sys.stderr)
        return 2
    from tickethub.llm.openai_compatible import OpenAICompatible

    base_url = os.environ.get("AGENT_LLM_BASE_URL", "https://api.openai.com/v1")
    llm = OpenAICompatible(base_url, os.environ.get("AGENT_LLM_API_KEY"),
                           model=os.environ.get("AGENT_LLM_MODEL", "gpt-4o-mini"))
    agent = _load(args.agent)

    async def go() -> int:
        async with httpx.AsyncClient(timeout=30) as client:
            result, answer = await execute(agent, args.context_url, llm, client)
        print(json.dumps({"run_id": result.run_id, "status": result.status,
                          "actions": [a.type for a in result.actions],
                          "hub": answer.status_code}))
        if answer.status_code != 202:
            print(f"error: the hub refused the result: {answer.text[:500]}",
                  file=sys.stderr)
            return 1
        return 0 if result.status == "done" else 1
    return asyncio.run(go())


if __name__ == "__main__":
    sys.exit(main())
