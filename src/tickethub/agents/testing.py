"""Testing a personal agent offline: a real hub (SQLite in a temporary folder), the real
kernel, a scripted model and an in-memory surface standing in for GitHub or chat::

    async with AgentHarness(my_agent, ScriptedLLM("HELLO")) as hub:
        run = await hub.say("/shout hello")
        assert run.status == "done"
        assert hub.surface.comments == ["HELLO"]

The owner is ``owner`` (identity ``owner`` on the surface's source); ``say(..., author=)``
sends text as someone else.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from tickethub.agents.events import AgentEvent, Post
from tickethub.agents.plugin import PersonalAgent
from tickethub.agents.tools import is_agent_text
from tickethub.domain.agent_runs import AgentRun
from tickethub.llm.port import LLM


class MemorySurface:
    """A thread in memory: ``posts`` (everything), ``comments`` (what agents posted,
    without their marker), ``labels``."""

    def __init__(self, source: str = "github") -> None:
        self.source = source
        self.posts: list[Post] = []
        self.bodies: dict[str, str] = {}
        self.labels: set[str] = set()
        self.linked_posts: list[Post] = []

    @property
    def comments(self) -> list[str]:
        return [b.split("\n\n<!-- tickethub-agent:")[0] for b in self.bodies.values()
                if is_agent_text(b)]

    def add(self, author: str, text: str) -> str:
        comment_id = str(len(self.bodies) + 1)
        self.bodies[comment_id] = text
        self.posts.append(Post(author, text, f"comment {comment_id}"))
        return comment_id

    async def thread(self) -> list[Post]:
        return [Post(p.author, self.bodies[p.ref.split()[-1]], p.ref) for p in self.posts]

    async def linked(self) -> list[Post]:
        return list(self.linked_posts)

    async def comment(self, body: str) -> str:
        return self.add("agent", body)

    async def read_comment(self, comment_id: str) -> str:
        return self.bodies.get(comment_id, "")

    async def edit_comment(self, comment_id: str, body: str) -> None:
        self.bodies[comment_id] = body

    async def label(self, add: list[str], remove: list[str]) -> None:
        self.labels = (self.labels - set(remove)) | set(add)


class AgentHarness:
    def __init__(self, agent: PersonalAgent, llm: LLM, config: dict[str, Any] | None = None,
                 owner: str = "owner", source: str = "github") -> None:
        self.agent = agent
        self.llm = llm
        self.config = config or {}
        self.owner = owner
        self.surface = MemorySurface(source)
        self._tmp = tempfile.TemporaryDirectory()
        self._running: Any = None

    async def __aenter__(self) -> AgentHarness:
        from tickethub.agents.component import install
        from tickethub.server.runtime import HubRuntime
        from tickethub.settings import Settings

        self.hub = HubRuntime(Settings(data_dir=Path(self._tmp.name), agents_enabled=False))
        self.agents = install(self.hub, llm=self.llm)
        self.agents.kernel.registry.register(self.agent, "test")
        self.agents.directory.install(self.owner, self.agent.manifest.name, self.config,
                                      {self.surface.source: self.owner})
        self._running = self.hub.running()
        await self._running.__aenter__()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.agents.kernel.drain()
        await self._running.__aexit__(kind, exc, tb)
        self.hub.close()
        self._tmp.cleanup()

    async def say(self, text: str, author: str | None = None,
                  name: str = "issue_comment.created") -> AgentRun | None:
        """Post ``text`` (as the owner unless ``author``) and run what it triggers;
        returns the run (``None`` when nothing ran)."""
        author = author or self.owner
        comment_id = self.surface.add(author, text)
        tasks = await self.agents.kernel.dispatch(
            AgentEvent(name, author, text, self.surface, comment_id=comment_id))
        runs = [await t for t in tasks]
        return runs[0] if runs else None

    def audit(self, run: AgentRun) -> list[dict[str, Any]]:
        """The run's audit lines (their structured data), in order."""
        assert run.ticket_id is not None
        return [m.data["audit"] for m in self.hub.tickets.messages(run.ticket_id)
                if isinstance(m.data, dict) and "audit" in m.data]
