"""issue-manager: ``/shipped`` — when the owner says a story is done, the model updates
the issue (a closing comment and a ``done`` label; the label needs the owner's approval)
and asks the owner about anything it cannot settle."""

from __future__ import annotations

from tickethub.agents.manifest import Manifest
from tickethub.agents.run import Run

INSTRUCTIONS = ("The owner says the story in this thread is done. Post a short comment "
                "saying what was delivered (from the owner's words and the thread), add "
                "the label 'done', and if something stays unclear ask the owner.")


class IssueManager:
    manifest = Manifest.parse({
        "name": "issue-manager",
        "description": "Updates the linked issue when the owner says a story is done.",
        "triggers": ["/shipped"],
        "scopes": ["comment", "label", "ask_human"],
        "sensitive": ["label"],
        "limits": {"llm_calls": 4, "tool_calls": 4, "tokens": 30000, "seconds": 600},
    })

    async def run(self, run: Run) -> None:
        await run.converse(INSTRUCTIONS)


agent = IssueManager()
