"""Mirror out: the outbound GitHub channel.

For every event about a ticket that a connection routes to a repository (or whose
parent is mirrored already), the mirror makes sure the ticket has its issue (a child
ticket's issue becomes a sub-issue of its parent's, added by the child's issue ``id``),
posts messages from other channels as comments, and brings the issue's open/closed
state, labels and assignee and the one status comment up to date. It only writes what
differs from what it wrote last, so events caused by GitHub itself end without a write.

Deliveries come from the hub's durable queue (``DeliveryWorker``); every create is
bracketed by the write ledger and found again by its marker, so a retry after a crash
neither loses nor duplicates an issue or comment. ``GitHubBusy`` becomes
``DeliveryFailed(retry_after)``; an issue gone from GitHub ends mirroring for that
ticket, with a note on the ticket.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from tickethub.channels.base import Channel, DeliveryFailed
from tickethub.channels.github import render
from tickethub.channels.github.client import GitHubBusy, GitHubGateway, GitHubGone, GitHubRefused
from tickethub.domain.actors import SYSTEM
from tickethub.domain.events import Event, EventType
from tickethub.domain.status import Status
from tickethub.domain.tickets import Ticket
from tickethub.errors import NotFound
from tickethub.services.github_sync import GithubSyncService, IssueLink
from tickethub.services.ports import Delivery
from tickethub.services.tickets import TicketService

log = logging.getLogger(__name__)

VIA = "github"
MIRRORED = frozenset(EventType) - {EventType.TICKET_LINKED}
_NOT_PLANNED = frozenset({Status.DENIED, Status.CANCELLED, Status.EXPIRED})


def github_login(assignee: str | None) -> str | None:
    """The GitHub login behind a hub assignee named ``github:<login>`` or ``@<login>``."""
    if not assignee:
        return None
    for prefix in ("github:", "@"):
        if assignee.startswith(prefix) and len(assignee) > len(prefix):
            return assignee[len(prefix):]
    return None


class GithubMirror(Channel):
    name = "github"

    def __init__(self, tickets: TicketService, sync: GithubSyncService,
                 gateway: GitHubGateway, link_back: Callable[[int], str]) -> None:
        self._tickets = tickets
        self._sync = sync
        self._gateway = gateway
        self._link_back = link_back

    def targets(self, event: Event) -> Sequence[str]:
        # Every ticket event is a delivery; ``deliver`` decides from the ticket and the
        # connections at that time (a rule cached here could be stale for an event that
        # the worker's cursor then moves past).
        return ["issues"] if event.type in MIRRORED else []

    async def deliver(self, delivery: Delivery, event: Event) -> None:
        try:
            await self.mirror(event, delivery.idempotency_key)
        except GitHubBusy as exc:
            raise DeliveryFailed(str(exc), retry_after=exc.retry_after) from exc
        except GitHubRefused as exc:
            raise DeliveryFailed(str(exc)) from exc

    async def mirror(self, event: Event, key: str) -> None:
        try:
            ticket = await asyncio.to_thread(self._tickets.get, event.ticket_id)
        except NotFound:
            return
        try:
            link = await self.ensure_issue(ticket)
            if link is None:
                return
            if event.type is EventType.MESSAGE_POSTED:
                await self._post_message(link, ticket, int(event.data["message_id"]), key)
            await self.sync_issue(link, ticket)
        except GitHubGone as exc:
            await self._gone(ticket.id, f"the GitHub issue answered {exc}")

    # -- the issue ------------------------------------------------------------------------

    async def ensure_issue(self, ticket: Ticket, depth: int = 0) -> IssueLink | None:
        """The ticket's live issue, made now if the ticket is routed; ``None`` if it is
        not routed or its issue is gone."""
        link = await asyncio.to_thread(self._sync.link, ticket.id)
        if link is not None:
            return None if link.gone else link
        parent_link = None
        if ticket.parent_id is not None and depth < 32:
            parent = await asyncio.to_thread(self._tickets.get, ticket.parent_id)
            parent_link = await self.ensure_issue(parent, depth + 1)
        if parent_link is not None:
            repo = parent_link.repo
        else:
            conn = await asyncio.to_thread(self._sync.route, ticket)
            if conn is None:
                return None
            repo = conn.full_name
        body = render.issue_body(ticket, self._link_back(ticket.id))
        login = github_login(ticket.assignee)
        issue_marker = render.marker(render.issue_key(ticket.id))

        async def find() -> dict[str, object] | None:
            for issue in await self._gateway.recent_issues(repo):
                if issue_marker in str(issue.get("body") or ""):
                    return issue
            return None

        async def create() -> dict[str, object]:
            return await self._gateway.create_issue(repo, ticket.title[:256], body,
                                                    ticket.labels, [login] if login else [])

        issue = await self._once_object(render.issue_key(ticket.id), find, create)
        link = await asyncio.to_thread(self._sync.save_link, IssueLink(
            ticket_id=ticket.id, repo=repo, number=int(str(issue["number"])),
            issue_id=int(str(issue["id"])), labels=ticket.labels,
            assignee=login, state=str(issue.get("state") or "open"),
        ))
        url = str(issue.get("html_url") or f"https://github.com/{repo}/issues/{link.number}")
        await asyncio.to_thread(self._tickets.set_ref, SYSTEM, ticket.id, "github", url)
        if parent_link is not None:
            link = await self._add_sub_issue(parent_link, link)
        return link

    async def _add_sub_issue(self, parent: IssueLink, child: IssueLink) -> IssueLink:
        try:
            await self._gateway.add_sub_issue(parent.repo, parent.number, child.issue_id)
        except GitHubRefused as exc:  # e.g. an older GHES: keep mirroring without it
            log.warning("could not make %s a sub-issue of %s: %s", child.url_ref,
                        parent.url_ref, exc)
        return await asyncio.to_thread(self._sync.save_link,
                                       replace(child, parent_linked=True))

    async def sync_issue(self, link: IssueLink, ticket: Ticket) -> IssueLink:
        """Bring state, labels, assignee and the status comment in line with ``ticket``."""
        changes: dict[str, object] = {}
        state = "open" if ticket.waiting else "closed"
        if state != link.state:
            changes["state"] = state
            if state == "closed":
                changes["state_reason"] = ("not_planned" if ticket.status in _NOT_PLANNED
                                           else "completed")
        if tuple(ticket.labels) != tuple(link.labels):
            changes["labels"] = list(ticket.labels)
        login = github_login(ticket.assignee)
        if login != link.assignee:
            changes["assignees"] = [login] if login else []
        if changes:
            await self._gateway.update_issue(link.repo, link.number, **changes)
            link = replace(link, state=state, labels=ticket.labels, assignee=login)
        status = render.status_body(ticket)
        status_hash = render.digest(status)
        if link.status_comment_id is None:
            status_marker = render.marker(f"status:{ticket.id}")
            comment_id = await self._once_comment(
                f"status:{ticket.id}", link, status_marker,
                lambda: self._gateway.create_comment(link.repo, link.number, status))
            link = replace(link, status_comment_id=comment_id, status_hash=status_hash)
        elif status_hash != link.status_hash:
            await self._gateway.update_comment(link.repo, link.status_comment_id, status)
            link = replace(link, status_hash=status_hash)
        return await asyncio.to_thread(self._sync.save_link, link)

    # -- messages -------------------------------------------------------------------------

    async def _post_message(self, link: IssueLink, ticket: Ticket, message_id: int,
                            key: str) -> None:
        messages = await asyncio.to_thread(self._tickets.messages, ticket.id)
        message = next((m for m in messages if m.id == message_id), None)
        if message is None or message.via == VIA:
            return  # came from GitHub: it is there already
        body = render.message_body(message, key)
        await self._once_comment(f"msg:{key}", link, render.marker(f"msg:{key}"),
                                 lambda: self._gateway.create_comment(link.repo, link.number,
                                                                      body))

    async def post_reply(self, repo: str, number: int, key: str, body: str) -> int:
        """A reply on issue ``repo#number``, made at most once per ``key``."""
        link = IssueLink(ticket_id=0, repo=repo, number=number, issue_id=0)
        return await self._once_comment(key, link, render.marker(key),
                                        lambda: self._gateway.create_comment(repo, number,
                                                                             body))

    # -- exactly once ---------------------------------------------------------------------

    async def _once_object(
        self, key: str,
        find: Callable[[], Awaitable[dict[str, object] | None]],
        create: Callable[[], Awaitable[dict[str, object]]],
    ) -> dict[str, object]:
        attempted, _ = await asyncio.to_thread(self._sync.write_state, key)
        found = await find() if attempted else None
        if found is None:
            await asyncio.to_thread(self._sync.claim_write, key)
            found = await create()
        await asyncio.to_thread(self._sync.finish_write, key, int(str(found["id"])))
        return found

    async def _once_comment(self, key: str, link: IssueLink, comment_marker: str,
                            create: Callable[[], Awaitable[dict[str, object]]]) -> int:
        _, object_id = await asyncio.to_thread(self._sync.write_state, key)
        if object_id is not None:
            return object_id

        async def find() -> dict[str, object] | None:
            for comment in await self._gateway.issue_comments(link.repo, link.number):
                if comment_marker in str(comment.get("body") or ""):
                    return comment
            return None

        return int(str((await self._once_object(key, find, create))["id"]))

    async def _gone(self, ticket_id: int, why: str) -> None:
        link = await asyncio.to_thread(self._sync.link, ticket_id)
        if link is None or link.gone:
            return
        await asyncio.to_thread(self._sync.save_link, replace(link, state="deleted"))
        await asyncio.to_thread(
            self._tickets.post_message, SYSTEM, ticket_id,
            f"GitHub issue {link.url_ref} is gone ({why}); mirroring stopped.", VIA,
            external_id=f"{link.repo}#{link.number}:gone")
        log.warning("GitHub issue %s is gone: %s", link.url_ref, why)
