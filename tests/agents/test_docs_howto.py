"""docs/personal-agents.md: the "Write one" and "Test it" blocks run as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[2] / "docs" / "personal-agents.md"


async def test_the_how_to_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 2
    namespace: dict[str, Any] = {}
    exec(compile("\n".join(blocks), str(DOC), "exec"), namespace)
    await namespace["test_shout"]()


def test_the_workflow_in_the_docs_is_the_templates() -> None:
    from tickethub.agents.template import WORKFLOW

    (shown,) = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S)
    assert shown == WORKFLOW.format(name="standup-notes", package="standup_notes")
