"""``tickethub agent new NAME``: a project a person copies and changes — a package with
one agent, declared through the ``tickethub.agents`` entry point, and its tests (which
pass as generated, offline, with a scripted model)."""

from __future__ import annotations

import re
from pathlib import Path

from tickethub import __version__
from tickethub.errors import Conflict, ValidationFailed

_NAME = re.compile(r"^[a-z][a-z0-9-]{1,48}$")

PYPROJECT = '''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
description = "{name}: a personal agent for tickethub"
requires-python = ">=3.11"
dependencies = ["tickethub>={version}"]

[project.optional-dependencies]
dev = ["pytest>=8", "pytest-asyncio>=0.24"]

# This line is how the hub finds the agent: `pip install .` in the hub's environment.
[project.entry-points."tickethub.agents"]
{name} = "{package}:agent"

[tool.pytest.ini_options]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
pythonpath = ["src"]
'''

AGENT = '''"""{name}: answers ``/{command}`` from its owner with a comment the model writes.

Change the manifest (triggers, scopes, budget, configuration schema) and ``run``.
"""

from tickethub.agents import Manifest, Run

INSTRUCTIONS = "Answer the owner's request in one short paragraph."


class Agent:
    manifest = Manifest.parse({{
        "name": "{name}",
        "description": "Answers /{command} with a comment.",
        "triggers": ["/{command}"],
        "scopes": ["comment"],
        "config_schema": {{"type": "object", "additionalProperties": False,
                           "properties": {{"signature": {{"type": "string"}}}}}},
        "limits": {{"llm_calls": 2, "tool_calls": 1, "tokens": 8000, "seconds": 60}},
    }})

    async def run(self, run: Run) -> None:
        completion = await run.complete(run.context.to_messages(INSTRUCTIONS))
        text = (completion.content or "").strip()
        signature = run.config.get("signature")
        if signature:
            text = f"{{text}}\\n\\n{{signature}}"
        if text:
            await run.call("comment", "the owner asked", body=text)


agent = Agent()
'''

TESTS = '''"""{name}'s tests: a real hub on SQLite, a scripted model, an in-memory thread."""

from {package} import agent

from tickethub.agents.testing import AgentHarness
from tickethub.llm import ScriptedLLM


async def test_the_owner_gets_a_comment() -> None:
    async with AgentHarness(agent, ScriptedLLM("Here you are."),
                            config={{"signature": "-- bot"}}) as hub:
        run = await hub.say("/{command} please")
        assert run is not None and run.status == "done"
        assert hub.surface.comments == ["Here you are.\\n\\n-- bot"]


async def test_someone_else_cannot_trigger_it() -> None:
    async with AgentHarness(agent, ScriptedLLM()) as hub:
        assert await hub.say("/{command} please", author="stranger") is None
        assert hub.surface.comments == []
'''

WORKFLOW = '''# Runs {name} for tickethub in this repository (the manifest's
# "runner": {{"kind": "actions", "repo": "YOU/{name}"}}). The hub dispatches it with two
# inputs only: its run id and a signed URL (short-lived, this run only, fetched once) for
# the run's context. The agent's actions (comment, label, ask the owner, ...) go back to
# the hub as a signed result; the hub applies them after checking the manifest's scopes,
# the budget and the owner's approvals. So this workflow needs no write access at all.
name: tickethub agent
run-name: "tickethub run ${{{{ inputs.run_id }}}}"

on:
  workflow_dispatch:
    inputs:
      run_id:
        description: "The hub's run id"
        required: true
      context_url:
        description: "Signed, short-lived URL of the run's context"
        required: true

permissions:
  contents: read  # checkout only; the hub does the writing

concurrency:
  group: tickethub-run-${{{{ inputs.run_id }}}}

jobs:
  run:
    runs-on: ubuntu-latest
    timeout-minutes: 10
    steps:
      - uses: actions/checkout@v4
        with:
          persist-credentials: false
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - run: pip install .
      - name: Fetch the context, run the agent, post the result
        env:  # inputs through env, never spliced into the script
          CONTEXT_URL: ${{{{ inputs.context_url }}}}
          AGENT_LLM_BASE_URL: ${{{{ vars.AGENT_LLM_BASE_URL }}}}
          AGENT_LLM_MODEL: ${{{{ vars.AGENT_LLM_MODEL }}}}
          AGENT_LLM_API_KEY: ${{{{ secrets.AGENT_LLM_API_KEY }}}}
        run: python -m tickethub.agents.runners.remote --agent {package}:agent
'''

README = '''# {name}

A personal agent for tickethub. Test it: `pip install -e '.[dev]' && pytest`.
Install it into the hub's environment (`pip install .`), then
`tickethub agent install {name} --owner YOU --identity github=YOUR_LOGIN`.

To run it in this repository's GitHub Actions instead of in the hub, add
`"runner": {{"kind": "actions", "repo": "YOU/{name}"}}` to the manifest, push this
project with `.github/workflows/tickethub-agent.yml`, and set the repository secret
`AGENT_LLM_API_KEY` (and the variables `AGENT_LLM_BASE_URL`, `AGENT_LLM_MODEL`).
'''


def new_project(name: str, parent: Path) -> Path:
    """Write the project for agent ``name`` into ``parent/name``; returns its folder."""
    if not _NAME.match(name):
        raise ValidationFailed("an agent name is 2-49 lower-case letters, digits or '-', "
                               "starting with a letter", field="name")
    root = parent / name
    if root.exists():
        raise Conflict(f"{root} already exists", field="name")
    package = name.replace("-", "_")
    values = {"name": name, "package": package, "command": name.split("-")[0],
              "version": __version__}
    files = {
        root / "pyproject.toml": PYPROJECT,
        root / "README.md": README,
        root / "src" / package / "__init__.py": AGENT,
        root / "tests" / f"test_{package}.py": TESTS,
        root / ".github" / "workflows" / "tickethub-agent.yml": WORKFLOW,
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(**values))
    return root
