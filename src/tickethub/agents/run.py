"""What an agent sees during one run: the event, its context, its configuration, the
model (through the budget) and the tools (through the scopes). Agents get nothing else —
no services, no store, no credentials."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tickethub.agents.budget import Budget
from tickethub.agents.context import Context
from tickethub.agents.events import AgentEvent
from tickethub.agents.tools import Toolbox, ToolResult
from tickethub.llm.port import LLM, Completion, Message, Tool


@dataclass
class Run:
    id: int
    owner: str
    event: AgentEvent
    context: Context
    config: dict[str, Any]
    tools: Toolbox
    budget: Budget
    llm: LLM
    final_text: str | None = None

    async def complete(self, messages: Sequence[Message],
                       tools: Sequence[Tool] | None = None,
                       response_format: dict[str, Any] | None = None) -> Completion:
        """One model call, counted against the run's budget (raises ``BudgetExceeded``)."""
        self.budget.before_llm_call()
        completion = await self.llm.complete(messages, tools, response_format)
        self.budget.after_llm_call(completion.usage)
        return completion

    async def call(self, name: str, why: str = "", **arguments: Any) -> ToolResult:
        """Use a tool (refused unless the manifest grants its scope)."""
        return await self.tools.call(name, dict(arguments), why)

    async def converse(self, instructions: str) -> str | None:
        """The standard loop: the model sees ``instructions`` and the context, and may
        call the granted tools until it answers with text (returned) or the budget ends
        the run."""
        messages: list[Message] = self.context.to_messages(instructions)
        while True:
            completion = await self.complete(messages, self.tools.specs() or None)
            if not completion.tool_calls:
                self.final_text = completion.content
                return completion.content
            messages.append(completion.to_message())
            for call in completion.tool_calls:
                why = completion.content or ""
                result = await self.tools.call(call.name, dict(call.arguments), why)
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": json.dumps({"ok": result.ok,
                                                        "result": result.text})})
