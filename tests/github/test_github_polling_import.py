"""Polling with since + ETag (304) + X-Poll-Interval, and importing labelled issues."""

from __future__ import annotations

from datetime import timedelta

import httpx
from gh_fake import FakeGitHub
from gh_helpers import REPO, deliver, eventually, issue_payload

from tickethub.channels.github import GithubChannel
from tickethub.domain.actors import SYSTEM, Actor, Role
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.domain.visibility import READ_ALL
from tickethub.server.runtime import HubRuntime

# The agent working on imported issues: they are not its own tickets, so it reads them
# through the read:all scope (or a responder token).
AGENT = Actor("agent-1", Role.AGENT, scopes=frozenset({READ_ALL}))


async def test_polling_uses_since_and_etag_and_honours_poll_interval(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient, connect) -> None:
    conn = connect(poll=True)
    fake.grant(REPO, "maintainer", "write")
    fake.poll_interval = 7200  # longer than github_poll_seconds (3600): GitHub's wins
    ticket, _ = runtime.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="poll me",
                                                       labels=("github",)))
    link = await eventually(lambda: (found := github.sync.link(ticket.id))
                            and found.status_comment_id and found)
    fake.add_comment(REPO, link.number, "mallory", "/answer 1", "NONE")
    fake.add_comment(REPO, link.number, "maintainer", "/answer 42", "MEMBER")

    assert await github.poller.poll(github.sync.connection(REPO)) >= 2
    assert runtime.tickets.get(ticket.id).answer.text == "42"
    await eventually(lambda: not runtime.deliveries.list("github", "pending", 5))
    conn = github.sync.connection(REPO)
    assert conn.poll_since and conn.next_poll_at is not None
    assert conn.next_poll_at - runtime.clock.now() > timedelta(seconds=7000)

    # nothing new: the cursor's URL is asked again with If-None-Match and gets 304
    await github.poller.poll(github.sync.connection(REPO))  # learns the ETag for `since`
    before = len(fake.requests)
    assert await github.poller.poll(github.sync.connection(REPO)) == 0
    sent = fake.requests[before]
    assert sent.headers["if-none-match"] and sent.url.params["since"] == conn.poll_since

    # an edit seen by polling is recorded, and does not re-steer
    edited = next(c for c in fake.comments.values() if c["body"] == "/answer 42")
    edited["body"] = "/answer 43"
    edited["updated_at"] = "2026-11-22T23:00:00Z"
    assert await github.poller.poll(github.sync.connection(REPO)) >= 1
    assert runtime.tickets.get(ticket.id).answer.text == "42"
    assert any("/answer 43" in m.body and not m.trusted
               for m in runtime.tickets.messages(ticket.id))


async def test_a_poll_that_stopped_on_a_failure_is_not_answered_304_next_time(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient, connect) -> None:
    connect(poll=True)
    fake.grant(REPO, "maintainer", "write")
    ticket, _ = runtime.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="poll me",
                                                       labels=("github",)))
    link = await eventually(lambda: (found := github.sync.link(ticket.id))
                            and found.status_comment_id and found)
    await github.poller.poll(github.sync.connection(REPO))
    fake.add_comment(REPO, link.number, "maintainer", "/answer 42", "MEMBER")
    fake.fail_always("GET", r"/collaborators/maintainer/permission$", 502)
    await github.poller.poll(github.sync.connection(REPO))  # stops at the answer
    assert runtime.tickets.get(ticket.id).answer is None
    fake.heal()
    await github.poller.poll(github.sync.connection(REPO))
    assert runtime.tickets.get(ticket.id).answer.text == "42"


async def test_import_turns_labelled_issues_into_tickets_and_keeps_them_in_sync(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient, connect) -> None:
    connect(labels=[])
    fake.grant(REPO, "maintainer", "write")
    first = fake.add_issue(REPO, "Add dark mode", "Users asked for it.",
                           ["agent-task", "UI"], "octocat", milestone="v2.0")
    second = fake.add_issue(REPO, "Fix login", "It fails.", ["agent-task"], "hubot",
                            state="closed")
    fake.add_issue(REPO, "Not for agents", "", ["question"], "octocat")
    fake.add_comment(REPO, first["number"], "maintainer", "/done", "MEMBER")
    fake.add_comment(REPO, first["number"], "mallory", "spam", "NONE")

    report = await github.importer.import_repo(SYSTEM, REPO, "agent-task")
    assert (report.created, report.existing, report.comments) == (2, 0, 2)
    again = await github.importer.import_repo(SYSTEM, REPO, "agent-task")
    assert (again.created, again.existing) == (0, 2)

    dark = runtime.tickets.get(github.sync.link_by_number(REPO, first["number"]).ticket_id)
    assert dark.title == "Add dark mode" and dark.kind is Kind.TASK
    assert dark.labels == ("agent-task", "ui")
    assert dark.refs["github_milestone"] == "v2.0"
    assert dark.refs["github"] == first["html_url"]
    assert dark.created_by == "github:octocat"
    assert dark.status == "open"  # history is kept, not replayed: the old /done did nothing
    assert [m.body for m in runtime.tickets.messages(dark.id)] == ["/done", "spam"]
    fixed = github.sync.link_by_number(REPO, second["number"])
    assert runtime.tickets.get(fixed.ticket_id).status == "done"

    # both ways: an agent's message becomes a comment, a new /done closes the ticket
    runtime.tickets.post_message(AGENT, dark.id, "Working on it.", "api")
    await eventually(lambda: any("Working on it." in c["body"]
                                 for c in fake.issue_comments(REPO, first["number"])))
    from gh_helpers import comment_payload

    payload = comment_payload("created", REPO, first["number"], 31337, "maintainer", "/done")
    await deliver(client, "issue_comment", payload, delivery="imp-done")
    assert await eventually(lambda: github.intake.outcomes.get("imp-done")) == "applied"
    assert runtime.tickets.get(dark.id).status == "done"
    await eventually(lambda: fake.issue(REPO, first["number"])["state"] == "closed")


async def test_an_issue_labelled_later_is_imported_from_its_webhook(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient, connect) -> None:
    connect(labels=[])
    await github.importer.import_repo(SYSTEM, REPO, "agent-task")
    issue = fake.add_issue(REPO, "New work", "Please.", ["agent-task"], "octocat")
    payload = issue_payload("labeled", REPO, issue["number"], "octocat", id=issue["id"],
                            title="New work", body="Please.", labels=issue["labels"],
                            html_url=issue["html_url"], milestone=None, assignees=[])
    await deliver(client, "issues", payload, delivery="lab-1")
    assert await eventually(lambda: github.intake.outcomes.get("lab-1")) == "imported"
    link = github.sync.link_by_number(REPO, issue["number"])
    assert runtime.tickets.get(link.ticket_id).title == "New work"
