"""The LLM seam: one small port, :class:`LLM` with ``complete(messages, tools,
response_format)``, and its providers.

* :class:`OpenAICompatible` — any endpoint speaking OpenAI's chat-completions wire format
  (OpenAI, Ollama, vLLM, llama.cpp server);
* :class:`HumanLLM` — the hub asks a person through a ticket;
* :class:`ScriptedLLM` — replies given in advance, for tests.

Messages, tools and ``response_format`` are plain OpenAI-shaped dicts: that wire format is
what every provider and every agent framework already speaks.
"""

from tickethub.llm.errors import (
    NoHumanReply,
    UpstreamAuthFailed,
    UpstreamError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from tickethub.llm.human import HumanLLM
from tickethub.llm.openai_compatible import OpenAICompatible
from tickethub.llm.port import LLM, Completion, ToolCall, Usage
from tickethub.llm.scripted import ScriptedLLM

__all__ = [
    "LLM",
    "Completion",
    "HumanLLM",
    "NoHumanReply",
    "OpenAICompatible",
    "ScriptedLLM",
    "ToolCall",
    "UpstreamAuthFailed",
    "UpstreamError",
    "UpstreamTimeout",
    "UpstreamUnavailable",
    "Usage",
]
