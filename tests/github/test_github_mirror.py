"""Mirror out: routing, sub-issues, comments, the one status comment, labels/assignee,
and being a good API citizen (rate limits, 5xx, lost responses, issues gone)."""

from __future__ import annotations

import httpx
import pytest
from gh_fake import FakeGitHub
from gh_helpers import REPO, eventually

from tickethub.channels.github import GithubChannel
from tickethub.domain.actors import Actor, Role
from tickethub.domain.status import Kind, Status
from tickethub.domain.tickets import TicketDraft
from tickethub.server.runtime import HubRuntime

AGENT = Actor("agent-1", Role.AGENT)
ALICE = Actor("alice", Role.RESPONDER)


def ask(runtime: HubRuntime, title: str, **fields: object) -> int:
    fields.setdefault("kind", Kind.QUESTION)
    ticket, _ = runtime.tickets.ask(AGENT, TicketDraft(title=title, **fields))
    return ticket.id


def settled(runtime: HubRuntime) -> bool:
    return not runtime.deliveries.list("github", "pending", 10)


async def test_routing_by_label_kind_and_parent(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient, connect) -> None:
    root = ask(runtime, "the project", kind=Kind.TASK)
    connect("octo-org/by-label", labels=["github"])
    connect("octo-org/by-kind", labels=[], kinds=["approval"])
    connect("octo-org/by-parent", labels=[], parent_id=root)
    labelled = ask(runtime, "labelled", labels=("github",))
    approval = ask(runtime, "an approval", kind=Kind.APPROVAL)
    below = ask(runtime, "under the project", parent_id=root)
    plain = ask(runtime, "stays home")
    await eventually(lambda: settled(runtime) and github.sync.link(below))
    assert github.sync.link(labelled).repo == "octo-org/by-label"
    assert github.sync.link(approval).repo == "octo-org/by-kind"
    assert github.sync.link(root).repo == "octo-org/by-parent"
    assert github.sync.link(plain) is None
    assert not [r for r in fake.requests if "stays home" in r.content.decode()]


async def test_child_tickets_become_sub_issues_by_issue_id(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient, connect) -> None:
    connect()
    parent = ask(runtime, "release 2.0", kind=Kind.TASK, labels=("github",))
    child = ask(runtime, "may I tag it?", kind=Kind.APPROVAL, parent_id=parent)
    grandchild = ask(runtime, "which tag name?", parent_id=child)
    await eventually(lambda: github.sync.link(grandchild) and settled(runtime))
    p, c, g = (github.sync.link(t) for t in (parent, child, grandchild))
    assert c.repo == REPO and c.parent_linked and g.parent_linked
    assert c.issue_id != c.number  # the API takes the id, and they differ
    assert fake.sub_issues[(REPO, p.number)] == [c.issue_id]
    assert fake.sub_issues[(REPO, c.number)] == [g.issue_id]
    assert runtime.tickets.get(child).refs["github"] == fake.issue(REPO, c.number)["html_url"]


async def test_messages_become_comments_and_one_status_comment_is_kept_up_to_date(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient, connect) -> None:
    connect()
    ticket_id = ask(runtime, "deploy now?", labels=("github",))
    await eventually(lambda: (link := github.sync.link(ticket_id)) and link.status_comment_id)
    runtime.tickets.post_message(AGENT, ticket_id, "Context: the build is green.", "api")
    runtime.tickets.label(ALICE, ticket_id, ["urgent"], [])
    runtime.tickets.assign(ALICE, ticket_id, "github:octocat")
    runtime.tickets.answer(ALICE, ticket_id, "Yes, go.", None, "web")
    await eventually(lambda: settled(runtime) and (link := github.sync.link(ticket_id))
                     and fake.issue(REPO, link.number)["state"] == "closed")
    number = github.sync.link(ticket_id).number
    issue = fake.issue(REPO, number)
    assert [x["name"] for x in issue["labels"]] == ["github", "urgent"]
    assert [a["login"] for a in issue["assignees"]] == ["octocat"]
    comments = fake.issue_comments(REPO, number)
    status = [c for c in comments if "tickethub status" in c["body"]]
    mirrored = [c for c in comments if "Context: the build is green." in c["body"]]
    assert len(status) == 1 and len(mirrored) == 1
    assert "**answered**" in status[0]["body"] and "Yes, go." in status[0]["body"]
    assert "agent-1" in mirrored[0]["body"]
    assert len(fake.calls("PATCH", "/issues/comments/")) >= 1  # edited, not re-posted
    # the answer's own message (via web) is not a GitHub comment twice
    assert len([c for c in comments if "Yes, go." in c["body"]]) <= 2


@pytest.mark.parametrize("status, headers, message", [
    (403, {"retry-after": "0"}, "You have exceeded a secondary rate limit."),
    (429, {"retry-after": "0"}, "Too many requests"),
    (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "0"},
     "API rate limit exceeded"),
    (502, {}, "Server Error"),
    (503, {}, "Service Unavailable"),
])
async def test_rate_limits_and_server_errors_back_off_then_succeed(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient, connect, status: int, headers: dict[str, str],
        message: str) -> None:
    connect()
    fake.fail_next("POST", r"/issues$", status, headers, message)
    fake.fail_next("POST", r"/issues$", status, headers, message)
    ticket_id = ask(runtime, "still works?", labels=("github",))
    link = await eventually(lambda: github.sync.link(ticket_id))
    assert len(fake.calls("POST", "/issues")) - len(fake.calls("POST", "/comments")) == 3
    assert len([i for i in fake.issues.values() if i["title"] == "still works?"]) == 1
    assert link.number == 1


async def test_a_long_rate_limit_reschedules_the_delivery(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient, connect) -> None:
    connect()
    # longer than github_retry_inline_max_seconds: not slept in place, but queued
    github.gateway.github.config.auto_retry.inline_max = 0.2  # type: ignore[union-attr]
    fake.fail_next("POST", r"/issues$", 429, {"retry-after": "1"}, "slow down")
    ticket_id = ask(runtime, "patience", labels=("github",))
    failed = await eventually(lambda: [d for d in runtime.deliveries.list("github")
                                       if d.last_error and "rate limited" in d.last_error])
    assert failed[0].status == "pending"
    assert github.sync.link(ticket_id) is None
    link = await eventually(lambda: github.sync.link(ticket_id), seconds=10)
    assert len([i for i in fake.issues.values() if i["title"] == "patience"]) == 1
    assert link.number == 1


async def test_a_lost_response_does_not_duplicate_the_issue_or_comment(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient, connect) -> None:
    """GitHub made the issue but the answer never arrived (a crash, a timeout): the retry
    finds it by its marker instead of making a second one."""
    connect()
    original = fake.handler
    lost = {"POST /issues": 1, "POST /comments": 1}

    def lossy(request: httpx.Request) -> httpx.Response:
        response = original(request)
        for key in lost:
            method, tail = key.split()
            if request.method == method and request.url.path.endswith(tail) and lost[key]:
                lost[key] -= 1
                return httpx.Response(502, json={"message": "response lost"})
        return response

    fake.handler = lossy  # type: ignore[method-assign]
    github.gateway.github.config.auto_retry.attempts = 0  # type: ignore[union-attr]
    ticket_id = ask(runtime, "exactly once", labels=("github",))
    runtime.tickets.post_message(AGENT, ticket_id, "one comment only", "api")

    def mirrored() -> bool:
        # No pending delivery is not enough: the message's delivery may be in flight
        # (claimed, not pending) when the status comment is already there.
        link = github.sync.link(ticket_id)
        return bool(settled(runtime) and link and link.status_comment_id and any(
            "one comment only" in c["body"] for c in fake.issue_comments(REPO, link.number)))

    await eventually(mirrored, seconds=10)
    number = github.sync.link(ticket_id).number
    assert len([i for i in fake.issues.values() if i["title"] == "exactly once"]) == 1
    comments = fake.issue_comments(REPO, number)
    assert len([c for c in comments if "one comment only" in c["body"]]) == 1
    assert len([c for c in comments if "tickethub status" in c["body"]]) == 1


async def test_issue_deleted_on_github_ends_mirroring_with_a_note(
        runtime: HubRuntime, github: GithubChannel, fake: FakeGitHub,
        client: httpx.AsyncClient, connect) -> None:
    connect()
    ticket_id = ask(runtime, "short-lived", labels=("github",))
    link = await eventually(lambda: github.sync.link(ticket_id))
    await eventually(lambda: settled(runtime))
    del fake.issues[(REPO, link.number)]
    runtime.tickets.transition(AGENT, ticket_id, Status.DONE, "api")
    await eventually(lambda: github.sync.link(ticket_id).state == "deleted")
    notes = await eventually(lambda: [m.body for m in runtime.tickets.messages(ticket_id)
                                      if "is gone" in m.body])
    assert len(notes) == 1
    await eventually(lambda: settled(runtime))
    assert [d.status for d in runtime.deliveries.list("github")].count("dead") == 0
