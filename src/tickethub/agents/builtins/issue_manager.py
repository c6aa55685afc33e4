"""issue-manager: ``/shipped`` — when the owner says a story is done, the model updates
the issue (a closing comment and a ``done`` label; the label needs the owner's approval),
marks the hub task linked to the thread done — its Agent Protocol task completes with
the closing note as its output — and asks the owner about anything it cannot settle."""

from __future__ import annotations

from tickethub.agents.manifest import Manifest
from tickethub.agents.run import Run

INSTRUCTIONS = ("The owner says the story in this thread is done. Post a short comment "
                "saying what was delivered (from the owner's words and the thread), add "
                "the label 'done', mark the linked hub task done with update_task (its "
                "note: what was delivered), and if something stays unclear ask the owner.")


class IssueManager:
    manifest = Manifest.parse({
        "name": "issue-manager",
        "description": "Updates the linked issue and its Agent Protocol task when the "
                       "owner says a story is done.",
        "triggers": ["/shipped"],
        "scopes": ["comment", "label", "update_task", "ask_human"],
        "sensitive": ["label"],
        "limits": {"llm_calls": 5, "tool_calls": 5, "tokens": 30000, "seconds": 600},
    })

    async def run(self, run: Run) -> None:
        await run.converse(INSTRUCTIONS)


agent = IssueManager()
