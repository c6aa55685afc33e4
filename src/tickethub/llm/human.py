"""``HumanLLM``: a model whose replies come from a person, through a ticket."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from tickethub.llm.port import Completion, Message, Tool


class Person(Protocol):
    """Whoever the hub asks. The hub's own implementation opens (or continues) a ticket
    and waits for its answer: :class:`tickethub.services.conversations_openai.HubPerson`."""

    async def reply(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool] | None,
        response_format: dict[str, Any] | None,
    ) -> Completion: ...


class HumanLLM:
    """The LLM port answered by a person. Tool calls the person makes were validated
    against the tool's JSON Schema before they reach the caller."""

    def __init__(self, person: Person, *, model: str = "human") -> None:
        self._person = person
        self.model = model

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> Completion:
        return await self._person.reply(messages, tools, response_format)
