"""Import in: GitHub issues with a label become tickets (kind ``task``), with their
comments (kept as messages, never applied as commands), labels and milestone, linked
both ways so they stay in sync: the hub mirrors the ticket back out, and later comments
and issue changes come in like those of any mirrored issue.

Importing is idempotent: an issue imported before is only brought up to date. The label
is remembered on the connection, so issues labelled later are imported as their webhook
arrives.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from tickethub.channels.github.client import GitHubGateway
from tickethub.channels.github.inbound import GithubInbound
from tickethub.domain.actors import SYSTEM, Actor, ActorKind, Role
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketDraft, normalize_labels
from tickethub.errors import NotFound
from tickethub.services.github_sync import GithubSyncService, IssueLink, check_repo
from tickethub.services.tickets import TicketService


@dataclass
class ImportReport:
    created: int = 0
    existing: int = 0
    comments: int = 0


class GithubImporter:
    def __init__(self, tickets: TicketService, sync: GithubSyncService,
                 gateway: GitHubGateway, inbound: GithubInbound) -> None:
        self._tickets = tickets
        self._sync = sync
        self._gateway = gateway
        self._inbound = inbound

    async def import_repo(self, by: Actor, repo: str, label: str) -> ImportReport:
        full_name = check_repo(repo)
        conn = await asyncio.to_thread(self._sync.connection, full_name)
        if conn is None:
            raise NotFound(f"{repo} is not connected; run `tickethub github connect {repo}` "
                           "first", field="repo")
        await asyncio.to_thread(
            lambda: self._sync.connect(by, full_name, labels=conn.labels, kinds=conn.kinds,
                                       parent_id=conn.parent_id, match_all=conn.match_all,
                                       import_label=label, poll=conn.poll))
        report = ImportReport()
        for issue in await self._gateway.issues_with_label(full_name, label):
            created = await self.import_issue(full_name, issue)
            if created:
                report.created += 1
            else:
                report.existing += 1
            for comment in await self._gateway.issue_comments(full_name, int(issue["number"])):
                outcome = await self._inbound.comment(full_name, int(issue["number"]),
                                                      comment, "", apply=False)
                report.comments += outcome == "imported" or outcome == "untrusted"
        return report

    async def import_issue(self, repo: str, issue: dict[str, Any]) -> bool:
        """Make the ticket for ``issue``; False when it had one already."""
        number = int(issue["number"])
        if await asyncio.to_thread(self._sync.link_by_number, repo, number) is not None:
            return False
        author = str((issue.get("user") or {}).get("login") or "ghost")
        labels = normalize_labels(tuple(str(x.get("name")) for x in issue.get("labels") or ()))
        refs: dict[str, Any] = {"github": str(issue.get("html_url") or
                                              f"https://github.com/{repo}/issues/{number}")}
        milestone = issue.get("milestone") or {}
        if milestone.get("title"):
            refs["github_milestone"] = str(milestone["title"])
        assignees = [str(a.get("login")) for a in issue.get("assignees") or () if a]
        draft = TicketDraft(
            kind=Kind.TASK, title=str(issue.get("title") or f"{repo}#{number}")[:500],
            body=str(issue.get("body") or ""), labels=labels, refs=refs,
            assignee=f"github:{assignees[0]}" if assignees else None,
        )
        creator = Actor(f"github:{author}", Role.AGENT, ActorKind.PERSON)
        ticket, _ = await asyncio.to_thread(self._tickets.ask, creator, draft,
                                            f"github-import:{repo}#{number}")
        await asyncio.to_thread(self._sync.save_link, IssueLink(
            ticket_id=ticket.id, repo=repo, number=number, issue_id=int(issue["id"]),
            state=str(issue.get("state") or "open"), labels=labels,
            assignee=assignees[0] if assignees else None))
        if issue.get("state") == "closed":
            await asyncio.to_thread(self._tickets.transition, SYSTEM, ticket.id, Status.DONE,
                                    "github", reason="closed on GitHub before the import")
        return True
