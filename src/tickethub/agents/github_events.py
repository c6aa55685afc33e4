"""GitHub deliveries as agent events: ``issue_comment`` and ``issues`` payloads become
:class:`AgentEvent` values whose surface is the issue (or pull request) on GitHub."""

from __future__ import annotations

import re
from typing import Any

from tickethub.agents.events import AgentEvent, Post
from tickethub.channels.github.client import GitHubError, GitHubGateway

_REF = re.compile(r"(?:(?<=\s)|^)#(\d+)\b|github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull)/(\d+)")
MAX_LINKED = 5


class GithubSurface:
    """Issue ``number`` of ``repo``, through ``gateway`` (which carries the token the
    run was given)."""

    source = "github"

    def __init__(self, gateway: GitHubGateway, repo: str, number: int) -> None:
        self.gateway = gateway
        self.repo = repo
        self.number = number

    async def thread(self) -> list[Post]:
        issue = await self.gateway.get_issue(self.repo, self.number)
        posts = [_post(issue, f"{self.repo}#{self.number}",
                       f"{issue.get('title') or ''}\n\n{issue.get('body') or ''}".strip())]
        for c in await self.gateway.issue_comments(self.repo, self.number):
            posts.append(_post(c, f"{self.repo}#{self.number} comment {c.get('id')}",
                               str(c.get("body") or "")))
        return posts

    async def linked(self) -> list[Post]:
        """Issues and pull requests referenced from the issue body (``#12`` or a URL)."""
        issue = await self.gateway.get_issue(self.repo, self.number)
        refs: list[tuple[str, int]] = []
        for match in _REF.finditer(str(issue.get("body") or "")):
            repo = (match.group(2) or self.repo).lower()
            number = int(match.group(1) or match.group(3))
            if (repo, number) != (self.repo, self.number) and (repo, number) not in refs:
                refs.append((repo, number))
        out = []
        for repo, number in refs[:MAX_LINKED]:
            try:
                other = await self.gateway.get_issue(repo, number)
            except GitHubError:
                continue  # gone or not readable with this token: left out
            kind = "pull request" if "pull_request" in other else "issue"
            text = f"[{kind}] {other.get('title') or ''}\n\n{other.get('body') or ''}"
            out.append(_post(other, f"{repo}#{number}", text.strip()))
        return out

    async def comment(self, body: str) -> str:
        created = await self.gateway.create_comment(self.repo, self.number, body)
        return str(created["id"])

    async def read_comment(self, comment_id: str) -> str:
        for c in await self.gateway.issue_comments(self.repo, self.number):
            if str(c.get("id")) == comment_id:
                return str(c.get("body") or "")
        return ""

    async def edit_comment(self, comment_id: str, body: str) -> None:
        await self.gateway.update_comment(self.repo, int(comment_id), body)

    async def label(self, add: list[str], remove: list[str]) -> None:
        issue = await self.gateway.get_issue(self.repo, self.number)
        current = [str(x.get("name")) for x in issue.get("labels") or ()]
        wanted = [x for x in current if x not in remove] + [x for x in add if x not in current]
        await self.gateway.set_labels(self.repo, self.number, wanted)


def _post(item: dict[str, Any], ref: str, text: str) -> Post:
    user = item.get("user") or {}
    return Post(str(user.get("login") or "ghost"), text, ref,
                by_bot=str(user.get("type") or "") == "Bot")


def agent_event(event: str, payload: dict[str, Any], gateway: GitHubGateway
                ) -> AgentEvent | None:
    """The agent event of a GitHub delivery, or ``None`` for deliveries agents do not
    see (only issue and comment events on a repository are routed)."""
    repo = str((payload.get("repository") or {}).get("full_name") or "").lower()
    issue = payload.get("issue") or {}
    if not repo or not issue.get("number") or event not in ("issue_comment", "issues"):
        return None
    action = str(payload.get("action") or "")
    surface = GithubSurface(gateway, repo, int(issue["number"]))
    if event == "issue_comment":
        comment = payload.get("comment") or {}
        user = comment.get("user") or {}
        return AgentEvent(f"issue_comment.{action}", str(user.get("login") or "ghost"),
                          str(comment.get("body") or ""), surface,
                          comment_id=str(comment.get("id")),
                          author_is_bot=str(user.get("type") or "") == "Bot",
                          payload=payload)
    sender = payload.get("sender") or {}
    return AgentEvent(f"issues.{action}", str(sender.get("login") or "ghost"),
                      f"{issue.get('title') or ''}\n\n{issue.get('body') or ''}".strip(),
                      surface, author_is_bot=str(sender.get("type") or "") == "Bot",
                      payload=payload)
