"""What reaches the kernel: one event from a channel, in one shape whatever its source.

Channels build an :class:`AgentEvent` (GitHub in ``agents/github_events.py``, chat and
inbound webhooks through ``Kernel.event_in``) with a :class:`Surface` that answers back
where the event came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Post:
    """One piece of text on the surface: a comment, an issue body, a chat line."""

    author: str  # the author's name on the source ("octocat", "@alice:matrix.org")
    text: str
    ref: str  # where it is ("octo/repo#7 comment 12", "ticket 5 message 3")
    by_bot: bool = False


class Surface(Protocol):
    """Where an event happened, and where the agent's results go back."""

    source: str  # "github", "chat", "webhook", "hub"

    async def thread(self) -> list[Post]:
        """The thread the event belongs to, oldest first (issue body first)."""
        ...

    async def linked(self) -> list[Post]:
        """Linked issues and pull requests (their titles and bodies)."""
        ...

    async def comment(self, body: str) -> str:
        """Post ``body``; returns the new comment's id."""
        ...

    async def read_comment(self, comment_id: str) -> str:
        ...

    async def edit_comment(self, comment_id: str, body: str) -> None:
        ...

    async def label(self, add: list[str], remove: list[str]) -> None:
        ...


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """``name`` is ``<event>.<action>`` (``issue_comment.created``); ``author`` is the
    writer's name on ``surface.source``; ``comment_id`` names the comment that carried
    the event, if one did; ``payload`` is the raw event (kept out of prompts except
    through the context builder)."""

    name: str
    author: str
    text: str
    surface: Surface
    comment_id: str | None = None
    author_is_bot: bool = False
    payload: dict[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> str:
        return self.surface.source

    @property
    def label(self) -> str:
        return f"{self.source}:{self.name}"
