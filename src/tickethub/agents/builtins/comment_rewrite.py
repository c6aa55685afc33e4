"""comment-rewrite: ``/rewrite <text>`` — the owner's comment is edited in place into
``<text>`` with its typos fixed; the original stays in the run's audit line."""

from __future__ import annotations

from tickethub.agents.manifest import Manifest
from tickethub.agents.run import Run

INSTRUCTIONS = ("You fix typos, spelling and grammar in the owner's comment. Keep its "
                "meaning, tone, formatting and language. Reply with the corrected comment "
                "only, nothing else.")


class CommentRewrite:
    manifest = Manifest.parse({
        "name": "comment-rewrite",
        "description": "Fixes typos in the owner's own comment, editing it in place.",
        "triggers": ["/rewrite"],
        "scopes": ["edit_owner_comment"],
        "config_schema": {"type": "object", "additionalProperties": False, "properties": {
            "style": {"enum": ["typos", "polish"], "description": "typos only, or polish"}}},
        "limits": {"llm_calls": 1, "tool_calls": 1, "tokens": 8000, "seconds": 60},
        "context_chars": 8000,
    })

    async def run(self, run: Run) -> None:
        text = run.event.text.strip().removeprefix("/rewrite").strip()
        if not text:
            return
        style = run.config.get("style", "typos")
        extra = " You may also make it clearer." if style == "polish" else ""
        completion = await run.complete([
            {"role": "system", "content": INSTRUCTIONS + extra},
            {"role": "user", "content": text}])
        fixed = (completion.content or "").strip()
        if fixed:
            await run.call("edit_owner_comment", "the owner asked for /rewrite", body=fixed)


agent = CommentRewrite()
