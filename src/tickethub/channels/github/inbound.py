"""Answers in: what a GitHub comment or issue change does to its ticket.

Contracts:

* A comment on a mirrored issue is kept on the ticket as a message (``via="github"``,
  ``external_id`` = the comment, so a webhook replay or a poll that sees it again adds
  nothing). Comments that carry the hub's marker are the hub's own and are skipped.
* Only a commenter who may steer (``permissions``) has an effect: a slash command
  (``commands``) is applied, a plain comment answers a waiting question; the hub
  acknowledges with a 👍 reaction, and explains a refused or unknown command in a reply.
  Anyone else's comment is kept, marked untrusted, and does nothing else.
* The first delivery the hub sees of a comment counts as the comment being made, with
  the comment as it is now and its ``created_at``: a ``created`` delivery, or an
  ``edited`` one whose ``created`` failed or is late (or a poll). Exactly once: a later
  ``created`` for the same comment id is a duplicate. An edit of a seen comment is
  recorded as a new untrusted message and never re-steers; when the edited comment
  already resolved the ticket, a reply says so. A deletion is recorded.
* Issue events from people who may steer: closed → done (or cancelled when "not
  planned"), reopened → open, labels and assignee → the ticket's. Deleted or
  transferred issues end (or move) the link, with a note on the ticket.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from tickethub.channels.github import render
from tickethub.channels.github.client import GitHubError, GitHubGateway
from tickethub.channels.github.commands import Command, UnknownCommand, defer_until, parse
from tickethub.channels.github.mirror import VIA, GithubMirror, github_login
from tickethub.channels.github.permissions import PermissionCache
from tickethub.domain.actors import SYSTEM, Actor, ActorKind, Role
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import Ticket, normalize_labels
from tickethub.domain.visibility import READ_ALL
from tickethub.errors import TickethubError
from tickethub.services.github_sync import CommentRecord, GithubSyncService, IssueLink
from tickethub.services.ports import Clock
from tickethub.services.tickets import TicketService

log = logging.getLogger(__name__)

# The hub's own notes to people on GitHub: not ``via="github"``, so the mirror posts them.
NOTICE_VIA = "hub"
_ISSUE_URL = re.compile(r"/issues/(\d+)$")
_COMMENT_ACTIONS = frozenset({"created", "edited", "deleted", ""})  # "": polling


def person(login: str, trusted: bool) -> Actor:
    """The hub actor behind a GitHub login; only a trusted one may steer. It reads the
    ticket its comment is on: the channel matched the comment to it."""
    return Actor(f"github:{login}", Role.RESPONDER if trusted else Role.AGENT,
                 ActorKind.PERSON, scopes=frozenset({READ_ALL}))


def issue_number_of(comment: dict[str, Any]) -> int | None:
    match = _ISSUE_URL.search(str(comment.get("issue_url") or ""))
    return int(match.group(1)) if match else None


class GithubInbound:
    def __init__(self, tickets: TicketService, sync: GithubSyncService,
                 permissions: PermissionCache, mirror: GithubMirror, gateway: GitHubGateway,
                 clock: Clock) -> None:
        self._tickets = tickets
        self._gateway = gateway
        self._sync = sync
        self._permissions = permissions
        self._mirror = mirror
        self._clock = clock
        self.importer: Any = None  # GithubImporter, set by install(); imports by label
        self._acks: set[asyncio.Task[None]] = set()
        # Others that see every delivery first (personal agents, agents/github_hook.py);
        # a listener must return quickly and never raise. ``claims`` names slash commands
        # a listener answers, so they get no "unknown command" reply here.
        self.listeners: list[Callable[[str, dict[str, Any]], Awaitable[None]]] = []
        self.claims: Callable[[str], bool] = lambda command: False

    # -- dispatch -------------------------------------------------------------------------

    async def handle(self, event: str, payload: dict[str, Any]) -> str:
        """Process one webhook delivery; returns what happened, for logs and tests."""
        if event == "ping":
            return "ping"
        for listener in self.listeners:
            await listener(event, payload)
        repo = str((payload.get("repository") or {}).get("full_name") or "").lower()
        if not repo:
            return "ignored: no repository"
        if event == "issue_comment":  # the connection is checked in the comment's lookup
            issue = payload.get("issue") or {}
            return await self.comment(repo, int(issue.get("number") or 0),
                                      payload.get("comment") or {},
                                      str(payload.get("action") or ""), payload,
                                      check_connection=True)
        conn = await asyncio.to_thread(self._sync.connection, repo)
        if conn is None:
            return _not_connected(event, repo)
        if event == "issues":
            return await self.issue(repo, str(payload.get("action") or ""), payload,
                                    conn.import_label)
        return f"ignored: {event} events are not used"

    # -- comments -------------------------------------------------------------------------

    async def comment(self, repo: str, number: int, comment: dict[str, Any], action: str,
                      payload: dict[str, Any] | None = None, *, apply: bool = True,
                      check_connection: bool = False) -> str:
        """Handle a comment (``action`` created/edited/deleted; empty: infer it, as
        polling does). ``apply=False`` keeps it without acting (imports of history)."""
        if action not in _COMMENT_ACTIONS:
            return f"ignored: issue_comment.{action}"
        body = str(comment.get("body") or "")
        comment_id = int(comment["id"])
        connected, link, record = await asyncio.to_thread(
            self._lookup, repo, number, comment_id, check_connection)
        if not connected:
            return _not_connected("issue_comment", repo)
        if link is None:
            return "ignored: issue not mirrored"
        if render.has_marker(body):
            return "ignored: the hub's own comment"
        user = comment.get("user") or {}
        login = str(user.get("login") or "ghost")
        if str(user.get("type") or "") == "Bot" and not apply:
            return "ignored: bot"
        if action == "deleted":
            return await self._deleted(link, record, comment_id, login, body)
        body_hash = render.digest(body)
        if record is not None:
            # A ``created`` after the hub saw the comment (through a late ``edited`` or a
            # poll) carries the text before the edits: it is not news.
            if action == "created" or record.body_hash == body_hash or record.deleted:
                return "duplicate"
            return await self._edited(link, record, comment_id, login, body, body_hash)
        association = comment.get("author_association")
        trusted = await self._permissions.may_steer(repo, login, association)
        parsed = parse(body)
        created_at = comment.get("created_at")
        record = CommentRecord(comment_id=comment_id, repo=repo, ticket_id=link.ticket_id,
                               author=login, trusted=trusted, body_hash=body_hash,
                               command=parsed.name if parsed else None,
                               created_at=_timestamp(created_at))
        meta = {"comment_id": comment_id, "login": login,
                "author_association": association, "url": comment.get("html_url"),
                "created_at": created_at, "first_seen_as": action or "listed"}
        outcome, detail = await asyncio.to_thread(
            self._keep_and_apply, record, link, parsed, body, meta, apply)
        if (outcome == "unknown" and isinstance(parsed, UnknownCommand)
                and not self.claims(parsed.name)):
            await self._reply(link, f"reply:{comment_id}",
                              render.unknown_command_reply(parsed.name, f"reply:{comment_id}"))
            await self._react(repo, comment_id, "confused")
        elif outcome == "rejected":
            name = parsed.name if parsed else "answer"
            await self._reply(link, f"reply:{comment_id}",
                              render.rejected_reply(name, detail, f"reply:{comment_id}"))
            await self._react(repo, comment_id, "confused")
        elif outcome in ("answered", "applied"):
            await self._react(repo, comment_id, "+1")
        return outcome

    def _lookup(self, repo: str, number: int, comment_id: int, check_connection: bool
                ) -> tuple[bool, IssueLink | None, CommentRecord | None]:
        """One worker-thread hop: is ``repo`` connected, the issue's link, the comment."""
        if check_connection and self._sync.connection(repo) is None:
            return False, None, None
        link = self._sync.link_by_number(repo, number)
        return True, link, (self._sync.comment(comment_id) if link is not None else None)

    def _keep_and_apply(self, record: CommentRecord, link: IssueLink,
                        parsed: Command | UnknownCommand | None, body: str,
                        meta: dict[str, Any], apply: bool) -> tuple[str, str]:
        """Keep the comment as a message, then (trusted and ``apply``) act on it, and
        record the outcome; one worker-thread hop for the whole critical path."""
        actor = person(record.author, record.trusted)
        self._tickets.post_message(
            actor, link.ticket_id, body or "(empty)", VIA,
            external_id=f"{record.repo}:comment:{record.comment_id}", trusted=record.trusted,
            data={"github": meta})
        detail = ""
        consumed = False
        if not record.trusted or not apply:
            outcome = "untrusted" if not record.trusted else "imported"
        elif isinstance(parsed, UnknownCommand):
            outcome = "unknown"
        else:
            try:
                outcome, consumed = self._apply(actor, link, parsed, body)
            except TickethubError as exc:
                outcome, detail = "rejected", exc.detail
        self._sync.save_comment(replace(record, outcome=outcome, consumed=consumed))
        return outcome, detail

    def _apply(self, actor: Actor, link: IssueLink, command: Command | None,
               body: str) -> tuple[str, bool]:
        """Run one trusted comment; returns ``(outcome, consumed)``."""
        ticket = self._tickets.get(link.ticket_id)
        t = self._tickets
        if command is None:
            if ticket.kind is not Kind.QUESTION or not ticket.waiting:
                return "message", False
            text, data = _answer_parts(body, ticket)
            t.answer(actor, ticket.id, text, data, VIA)
            return "answered", True
        arg = command.argument
        name = command.name
        if name == "answer":
            text, data = _answer_parts(arg, ticket)
            t.answer(actor, ticket.id, text, data, VIA)
            return "answered", True
        if name == "approve":
            t.approve(actor, ticket.id, arg or None, None, VIA)
            return "applied", True
        if name == "deny":
            t.deny(actor, ticket.id, arg or None, VIA)
            return "applied", True
        if name in ("done", "cancel"):
            target = Status.DONE if name == "done" else Status.CANCELLED
            t.transition(actor, ticket.id, target, VIA, reason=arg or None)
            return "applied", True
        if name == "reopen":
            t.transition(actor, ticket.id, Status.OPEN, VIA, reason=arg or None)
            return "applied", False
        if name == "defer":
            try:
                until = defer_until(arg, self._clock.now())
            except ValueError as exc:
                from tickethub.errors import ValidationFailed

                raise ValidationFailed(str(exc), field="until") from None
            t.transition(actor, ticket.id, Status.DEFERRED, VIA, until=until)
            return "applied", False
        # assign
        login = arg.strip().lstrip("@").split()[0] if arg.strip() else None
        t.assign(actor, ticket.id, f"github:{login}" if login else None)
        return "applied", False

    async def _edited(self, link: IssueLink, record: CommentRecord, comment_id: int,
                      login: str, body: str, body_hash: str) -> str:
        await asyncio.to_thread(
            self._tickets.post_message, person(login, False), link.ticket_id,
            f"(edited GitHub comment {comment_id})\n\n{body or '(empty)'}", VIA,
            external_id=f"{link.repo}:comment:{comment_id}:edit:{body_hash[:16]}",
            trusted=False, data={"github": {"edit_of": comment_id, "login": login}},
        )
        await asyncio.to_thread(self._sync.save_comment,
                                replace(record, body_hash=body_hash, edits=record.edits + 1))
        if record.consumed:
            key = f"reply:{comment_id}:edit:{body_hash[:16]}"
            await self._reply(link, key, render.edited_after_answer_reply(login, key))
            return "edit recorded after answer"
        return "edit recorded"

    async def _deleted(self, link: IssueLink, record: CommentRecord | None, comment_id: int,
                       login: str, body: str) -> str:
        if record is not None and record.deleted:
            return "duplicate"
        note = f"GitHub comment {comment_id} by @{login} was deleted."
        if record is not None and record.consumed:
            note += " Its answer had already been given to the agent and stands."
        await asyncio.to_thread(
            self._tickets.post_message, SYSTEM, link.ticket_id, note, VIA,
            external_id=f"{link.repo}:comment:{comment_id}:deleted", trusted=False,
            data={"github": {"deleted": comment_id, "login": login, "body": body}},
        )
        if record is not None:
            await asyncio.to_thread(self._sync.save_comment, replace(record, deleted=True))
        return "deletion recorded"

    # -- issues ---------------------------------------------------------------------------

    async def issue(self, repo: str, action: str, payload: dict[str, Any],
                    import_label: str | None = None) -> str:
        issue = payload.get("issue") or {}
        number = int(issue.get("number") or 0)
        link = await asyncio.to_thread(self._sync.link_by_number, repo, number)
        if link is None:
            names = {str(x.get("name")).lower() for x in issue.get("labels") or ()}
            if (import_label and import_label.lower() in names and self.importer is not None
                    and action in ("opened", "labeled", "reopened", "edited")):
                await self.importer.import_issue(repo, issue)
                return "imported"
            return "ignored: issue not mirrored"
        if action == "deleted":
            await self._end(link, "deleted", f"GitHub issue {link.url_ref} was deleted; "
                            "mirroring stopped.")
            return "issue deleted"
        if action == "transferred":
            return await self._transferred(link, payload)
        sender = payload.get("sender") or {}
        login = str(sender.get("login") or "")
        if not login:
            return "ignored: no sender"
        ticket = await asyncio.to_thread(self._tickets.get, link.ticket_id)
        if action in ("closed", "reopened"):
            return await self._open_closed(link, ticket, action, issue, login)
        if action in ("labeled", "unlabeled"):
            return await self._labels(link, ticket, issue, login)
        if action in ("assigned", "unassigned"):
            return await self._assignee(link, ticket, issue, login)
        if action in ("milestoned", "demilestoned"):
            milestone = issue.get("milestone") or {}
            await asyncio.to_thread(self._tickets.set_ref, SYSTEM, ticket.id,
                                    "github_milestone", milestone.get("title"))
            return "milestone recorded"
        return f"ignored: issues.{action}"

    async def _steers(self, repo: str, login: str) -> bool:
        return await self._permissions.may_steer(repo, login, None)

    async def _open_closed(self, link: IssueLink, ticket: Ticket, action: str,
                           issue: dict[str, Any], login: str) -> str:
        state = "closed" if action == "closed" else "open"
        await asyncio.to_thread(self._sync.save_link, replace(link, state=state))
        if (state == "closed") == (not ticket.waiting):
            return "in sync"
        if not await self._steers(link.repo, login):
            return "untrusted"
        actor = person(login, True)
        if state == "open":
            target = Status.OPEN
        else:
            target = (Status.CANCELLED if issue.get("state_reason") == "not_planned"
                      else Status.DONE)
        try:
            await asyncio.to_thread(self._tickets.transition, actor, ticket.id, target, VIA,
                                    reason=f"issue {action} on GitHub by @{login}")
        except TickethubError as exc:
            log.info("issue %s %s by %s not applied: %s", link.url_ref, action, login, exc)
            return "rejected"
        return "applied"

    async def _labels(self, link: IssueLink, ticket: Ticket, issue: dict[str, Any],
                      login: str) -> str:
        labels = normalize_labels(tuple(str(x.get("name")) for x in issue.get("labels") or ()))
        await asyncio.to_thread(self._sync.save_link, replace(link, labels=labels))
        if labels == ticket.labels:
            return "in sync"
        if not await self._steers(link.repo, login):
            return "untrusted"
        add = sorted(set(labels) - set(ticket.labels))
        remove = sorted(set(ticket.labels) - set(labels))
        await asyncio.to_thread(self._tickets.label, person(login, True), ticket.id, add,
                                remove)
        return "applied"

    async def _assignee(self, link: IssueLink, ticket: Ticket, issue: dict[str, Any],
                        login: str) -> str:
        assignees = [str(a.get("login")) for a in issue.get("assignees") or () if a]
        first = assignees[0] if assignees else None
        await asyncio.to_thread(self._sync.save_link, replace(link, assignee=first))
        wanted = f"github:{first}" if first else None
        if wanted == ticket.assignee or (first is None and github_login(ticket.assignee) is None):
            return "in sync"  # (a hub assignee without a GitHub login stays)
        if not await self._steers(link.repo, login):
            return "untrusted"
        await asyncio.to_thread(self._tickets.assign, person(login, True), ticket.id, wanted)
        return "applied"

    async def _transferred(self, link: IssueLink, payload: dict[str, Any]) -> str:
        changes = payload.get("changes") or {}
        new_issue = changes.get("new_issue") or {}
        new_repo = str((changes.get("new_repository") or {}).get("full_name") or "").lower()
        conn = await asyncio.to_thread(self._sync.connection, new_repo) if new_repo else None
        if conn is not None and new_issue.get("number") and new_issue.get("id"):
            moved = replace(link, repo=new_repo, number=int(new_issue["number"]),
                            issue_id=int(new_issue["id"]))
            await asyncio.to_thread(self._sync.save_link, moved)
            url = str(new_issue.get("html_url") or "")
            if url:
                await asyncio.to_thread(self._tickets.set_ref, SYSTEM, link.ticket_id,
                                        "github", url)
            await asyncio.to_thread(
                self._tickets.post_message, SYSTEM, link.ticket_id,
                f"GitHub issue {link.url_ref} moved to {moved.url_ref}.", VIA,
                external_id=f"{link.repo}#{link.number}:transferred")
            return "issue moved"
        await self._end(link, "transferred", f"GitHub issue {link.url_ref} was transferred "
                        f"to {new_repo or 'another repository'}, which is not connected; "
                        "mirroring stopped.")
        return "issue transferred away"

    async def _end(self, link: IssueLink, state: str, note: str) -> None:
        await asyncio.to_thread(self._sync.save_link, replace(link, state=state))
        await asyncio.to_thread(self._tickets.post_message, SYSTEM, link.ticket_id, note, VIA,
                                external_id=f"{link.repo}#{link.number}:{state}")

    # -- deliveries that failed for good ---------------------------------------------------

    async def tell_failed(self, delivery_id: str, event: str, payload: dict[str, Any],
                          github_down: bool) -> str:
        """A delivery that could not be processed within the retry window: note it on the
        ticket, addressed to whoever sent it on GitHub. The note is a hub message (not a
        GitHub one), so the mirror posts it on the issue through the durable outbound
        queue, which outlasts the outage that may have caused the failure."""
        repo = str((payload.get("repository") or {}).get("full_name") or "").lower()
        issue = payload.get("issue") or {}
        comment = payload.get("comment") or {}
        if event == "issue_comment" and payload.get("action") != "deleted":
            if render.has_marker(comment.get("body")):
                return "ignored: the hub's own comment"
            login = str((comment.get("user") or {}).get("login") or "")
            what, url = "comment", str(comment.get("html_url") or "")
        elif event == "issues":
            login = str((payload.get("sender") or {}).get("login") or "")
            what = f"change to the issue ({payload.get('action')})"
            url = str(issue.get("html_url") or "")
        else:
            return "ignored: nobody to tell"
        link = await asyncio.to_thread(self._sync.link_by_number, repo,
                                       int(issue.get("number") or 0)) if repo else None
        if link is None or link.gone or not login:
            return "ignored: nobody to tell"
        hours = self._sync.inbox_retry.window / 3600
        note = render.failed_delivery_note(login, what, url, hours, github_down)
        await asyncio.to_thread(
            self._tickets.post_message, SYSTEM, link.ticket_id, note, NOTICE_VIA,
            external_id=f"{link.repo}:delivery:{delivery_id}:failed",
            data={"github": {"failed_delivery": delivery_id, "event": event, "login": login,
                             "url": url}})
        return "told"

    # -- acknowledgements -----------------------------------------------------------------

    # Acknowledgements run beside the inbox, not in it: GitHub writes are spaced about a
    # second apart, and the next delivery (maybe another agent's answer) must not wait.

    async def _react(self, repo: str, comment_id: int, content: str) -> None:
        async def react() -> None:
            try:
                await self._gateway.react(repo, comment_id, content)
            except GitHubError as exc:
                log.warning("could not react to comment %s in %s: %s", comment_id, repo, exc)
        self._spawn(react())

    async def _reply(self, link: IssueLink, key: str, body: str) -> None:
        async def reply() -> None:
            try:
                await self._mirror.post_reply(link.repo, link.number, key, body)
            except GitHubError as exc:
                log.warning("could not reply on %s: %s", link.url_ref, exc)
        self._spawn(reply())

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._acks.add(task)
        task.add_done_callback(self._acks.discard)


def _timestamp(value: Any) -> datetime | None:
    """GitHub's ISO 8601 time (``2026-11-22T05:00:01Z``) as an aware datetime, if it is one."""
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.astimezone(UTC) if when.tzinfo else None


def _not_connected(event: str, repo: str) -> str:
    log.info("GitHub %s delivery for %s ignored: the repository is not connected",
             event, repo)
    return "ignored: repository not connected"


def _answer_parts(text: str, ticket: Ticket) -> tuple[str | None, Any]:
    """Text and structured data of an answer: JSON counts as data when the ticket has a
    response schema or the text is a JSON object or array."""
    stripped = text.strip()
    if ticket.response_schema is not None or stripped[:1] in ("{", "["):
        try:
            return None, json.loads(stripped)
        except ValueError:
            pass
    return stripped or None, None
