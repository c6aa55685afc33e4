"""thread-summary: ``/summary`` — posts a summary of a long issue or chat thread."""

from __future__ import annotations

from tickethub.agents.manifest import Manifest
from tickethub.agents.run import Run

INSTRUCTIONS = ("Summarise the thread for the owner: the question, what was decided, what "
                "is open, who is waiting on whom. Post the summary with the comment tool, "
                "in at most {words} words.")


class ThreadSummary:
    manifest = Manifest.parse({
        "name": "thread-summary",
        "description": "Posts a summary of a long issue or chat thread on request.",
        "triggers": ["/summary"],
        "scopes": ["comment"],
        "config_schema": {"type": "object", "additionalProperties": False, "properties": {
            "words": {"type": "integer", "minimum": 20, "maximum": 1000}}},
        "limits": {"llm_calls": 3, "tool_calls": 2, "tokens": 30000, "seconds": 120},
        "context_chars": 24000,
    })

    async def run(self, run: Run) -> None:
        words = int(run.config.get("words", 200))
        text = await run.converse(INSTRUCTIONS.format(words=words))
        if text and not run.tools.posted:  # the model answered in text: post that
            await run.call("comment", "the owner asked for /summary", body=text)


agent = ThreadSummary()
