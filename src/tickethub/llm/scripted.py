"""``ScriptedLLM``: replies given in advance, for tests that must run offline."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tickethub.llm.port import Completion, Message, Tool

Reply = Completion | str | Callable[[Sequence[Message]], Completion | str]


class ScriptedLLM:
    """Returns its replies in order (a string, a :class:`Completion`, or a function of the
    messages); records every call in ``calls``. Raises ``AssertionError`` when out of
    replies, so a test notices an unexpected extra call."""

    def __init__(self, *replies: Reply, model: str = "scripted") -> None:
        self._replies = list(replies)
        self.model = model
        self.calls: list[tuple[list[Message], list[Tool] | None, dict[str, Any] | None]] = []

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> Completion:
        self.calls.append((list(messages), list(tools) if tools else None, response_format))
        if not self._replies:
            raise AssertionError("ScriptedLLM has no reply left for this call")
        reply = self._replies.pop(0)
        if callable(reply):
            reply = reply(messages)
        if isinstance(reply, str):
            return Completion(content=reply, model=self.model)
        return reply
