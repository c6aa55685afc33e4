"""A stateful stand-in for GitHub's REST API, served to githubkit through
``httpx.MockTransport``. Every response body is an example from GitHub's OpenAPI
description (``gh_examples.response``) with the ids, numbers, bodies and state of this
fake repository written into it. Hand-written only where the spec has no example: the
ETag/304 of polling, ``X-Poll-Interval`` and rate-limit/5xx responses (``fail_next``,
``fail_always``, ``outage``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

import httpx
from gh_examples import response as example

API = "https://api.github.com"
BOT = "tickethub-bot"


@dataclass
class Failure:
    method: str
    path: re.Pattern[str]
    status: int
    headers: dict[str, str]
    body: dict[str, Any]
    sticky: bool = False  # fails every matching request until ``heal()``


@dataclass
class FakeGitHub:
    permissions: dict[tuple[str, str], str] = field(default_factory=dict)
    issues: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    sub_issues: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    reactions: list[tuple[int, str]] = field(default_factory=list)
    dispatches: list[dict[str, Any]] = field(default_factory=list)  # workflow_dispatch events
    requests: list[httpx.Request] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    poll_interval: int = 60
    scopes: str = "repo"
    outage: int | None = None  # set: every request gets this status (GitHub is down)

    def __post_init__(self) -> None:
        self._ids = itertools.count(3_000_000_001)
        self._numbers: dict[str, itertools.count[int]] = {}
        self._clock = itertools.count(1)

    # -- test controls --------------------------------------------------------------------

    def grant(self, repo: str, login: str, level: str) -> None:
        self.permissions[(repo.lower(), login.lower())] = level

    def fail_next(self, method: str, path_regex: str, status: int,
                  headers: dict[str, str] | None = None, message: str = "") -> None:
        self.failures.append(Failure(method, re.compile(path_regex), status, headers or {},
                                     {"message": message or f"HTTP {status}",
                                      "documentation_url": "https://docs.github.com/rest"}))

    def fail_always(self, method: str, path_regex: str, status: int,
                    message: str = "") -> None:
        """Like ``fail_next``, for every matching request until ``heal()``."""
        self.fail_next(method, path_regex, status, message=message)
        self.failures[-1].sticky = True

    def heal(self) -> None:
        """GitHub is back: no outage, no failures pending."""
        self.outage = None
        self.failures.clear()

    def issue(self, repo: str, number: int) -> dict[str, Any]:
        return self.issues[(repo.lower(), number)]

    def issue_comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        url = f"{API}/repos/{repo.lower()}/issues/{number}"
        return [c for c in self.comments.values() if c["issue_url"] == url]

    def calls(self, method: str, path_part: str = "") -> list[httpx.Request]:
        return [r for r in self.requests if r.method == method and path_part in r.url.path]

    def add_comment(self, repo: str, number: int, login: str, body: str,
                    association: str = "NONE") -> dict[str, Any]:
        """A comment someone made on GitHub (not through the API under test)."""
        return self._new_comment(repo.lower(), number, body, login, association)

    def add_issue(self, repo: str, title: str, body: str, labels: list[str], login: str,
                  milestone: str | None = None, state: str = "open") -> dict[str, Any]:
        issue = self._new_issue(repo.lower(), title, body, labels, [], login)
        issue["state"] = state
        if milestone:
            issue["milestone"] = {**example("issues/create", "201")["milestone"],
                                  "title": milestone}
        return issue

    # -- the transport ---------------------------------------------------------------------

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        if self.outage is not None:
            return httpx.Response(self.outage, json={"message": "Service Unavailable"})
        for failure in self.failures:
            if failure.method == request.method and failure.path.search(path):
                if not failure.sticky:
                    self.failures.remove(failure)
                return httpx.Response(failure.status, json=failure.body,
                                      headers=failure.headers)
        body = json.loads(request.content) if request.content else {}
        for method, pattern, handle in self._routes():
            match = re.fullmatch(pattern, path)
            if match and method == request.method:
                return handle(request, body, *match.groups())
        return httpx.Response(404, json={"message": "Not Found"})

    def _routes(self) -> list[tuple[str, str, Any]]:
        repo = r"/repos/([^/]+/[^/]+)"
        return [
            ("GET", r"/user", self._user),
            ("GET", repo, self._repo),
            ("GET", repo + r"/collaborators/([^/]+)/permission", self._permission),
            ("GET", repo + r"/issues", self._list_issues),
            ("POST", repo + r"/issues", self._create_issue),
            ("GET", repo + r"/issues/comments", self._repo_comments),
            ("PATCH", repo + r"/issues/comments/(\d+)", self._update_comment),
            ("POST", repo + r"/issues/comments/(\d+)/reactions", self._react),
            ("GET", repo + r"/issues/(\d+)", self._get_issue),
            ("PATCH", repo + r"/issues/(\d+)", self._update_issue),
            ("PUT", repo + r"/issues/(\d+)/labels", self._set_labels),
            ("POST", repo + r"/issues/(\d+)/sub_issues", self._add_sub_issue),
            ("GET", repo + r"/issues/(\d+)/comments", self._list_comments),
            ("POST", repo + r"/issues/(\d+)/comments", self._create_comment),
            ("POST", repo + r"/actions/workflows/([^/]+)/dispatches", self._dispatch),
        ]

    # -- handlers --------------------------------------------------------------------------

    def _dispatch(self, request: httpx.Request, body: Any, repo: str,
                  workflow: str) -> httpx.Response:
        """Create a workflow dispatch event. With ``return_run_details: true`` GitHub
        answers 200 with the run's id and URLs (REST API, February 2026), else 204;
        written by hand (the pinned OpenAPI examples predate it)."""
        run_id = next(self._ids)
        self.dispatches.append({"repo": repo, "workflow": workflow, "id": run_id, **body})
        if not body.get("return_run_details"):
            return httpx.Response(204)
        return httpx.Response(200, json={
            "workflow_run_id": run_id,
            "run_url": f"{API}/repos/{repo}/actions/runs/{run_id}",
            "html_url": f"https://github.com/{repo}/actions/runs/{run_id}"})

    def _user(self, request: httpx.Request, body: Any) -> httpx.Response:
        user = example("users/get-authenticated")
        user["login"] = BOT
        return httpx.Response(200, json=user, headers={"x-oauth-scopes": self.scopes,
                                                       "x-ratelimit-remaining": "4999"})

    def _repo(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        data = example("repos/get")
        owner, name = repo.split("/")
        data.update(full_name=repo, name=name)
        data["owner"]["login"] = owner
        data["permissions"] = {"admin": False, "maintain": False, "push": True,
                               "triage": True, "pull": True}
        return httpx.Response(200, json=data, headers={"x-ratelimit-remaining": "4999"})

    def _permission(self, request: httpx.Request, body: Any, repo: str,
                    login: str) -> httpx.Response:
        level = self.permissions.get((repo.lower(), login.lower()))
        if level is None:
            return httpx.Response(404, json={"message": "Not Found"})
        data = example("repos/get-collaborator-permission-level")
        data["permission"] = level
        data["role_name"] = level
        data["user"]["login"] = login
        return httpx.Response(200, json=data)

    def _new_issue(self, repo: str, title: str, text: str, labels: list[str],
                   assignees: list[str], login: str) -> dict[str, Any]:
        number = next(self._numbers.setdefault(repo, itertools.count(1)))
        issue = example("issues/create", "201")
        issue_id = next(self._ids)
        label_template = issue["labels"][0]
        user_template = issue["user"]
        issue.update(
            id=issue_id, number=number, title=title, body=text, state="open",
            state_reason=None, node_id=f"I_{issue_id}", comments=0, milestone=None,
            url=f"{API}/repos/{repo}/issues/{number}",
            html_url=f"https://github.com/{repo}/issues/{number}",
            labels=[{**label_template, "name": n} for n in labels],
            assignees=[{**user_template, "login": a} for a in assignees],
            assignee={**user_template, "login": assignees[0]} if assignees else None,
            user={**user_template, "login": login}, pull_request=None,
        )
        issue.pop("pull_request", None)
        self.issues[(repo, number)] = issue
        return issue

    def _create_issue(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        issue = self._new_issue(repo.lower(), body["title"], body.get("body", ""),
                                body.get("labels", []), body.get("assignees", []), BOT)
        return httpx.Response(201, json=issue)

    def _list_issues(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        wanted = request.url.params.get("labels")
        found = [i for (r, _), i in sorted(self.issues.items(), key=lambda kv: -kv[0][1])
                 if r == repo.lower()]
        if wanted:
            found = [i for i in found if wanted in {x["name"] for x in i["labels"]}]
        page = int(request.url.params.get("page", 1))
        per = int(request.url.params.get("per_page", 30))
        return httpx.Response(200, json=found[(page - 1) * per: page * per])

    def _get_issue(self, request: httpx.Request, body: Any, repo: str,
                   number: str) -> httpx.Response:
        issue = self.issues.get((repo.lower(), int(number)))
        if issue is None:
            return httpx.Response(404, json={"message": "Not Found"})
        return httpx.Response(200, json=issue)

    def _update_issue(self, request: httpx.Request, body: Any, repo: str,
                      number: str) -> httpx.Response:
        issue = self.issues.get((repo.lower(), int(number)))
        if issue is None:
            return httpx.Response(410, json={"message": "This issue was deleted"})
        label_template = example("issues/create", "201")["labels"][0]
        user_template = issue["user"]
        for key, value in body.items():
            if key == "labels":
                issue["labels"] = [{**label_template, "name": n} for n in value]
            elif key == "assignees":
                issue["assignees"] = [{**user_template, "login": a} for a in value]
                issue["assignee"] = issue["assignees"][0] if value else None
            else:
                issue[key] = value
        return httpx.Response(200, json=issue)

    def _set_labels(self, request: httpx.Request, body: Any, repo: str,
                    number: str) -> httpx.Response:
        return self._update_issue(request, {"labels": body["labels"]}, repo, number)

    def _add_sub_issue(self, request: httpx.Request, body: Any, repo: str,
                       number: str) -> httpx.Response:
        parent = self.issues.get((repo.lower(), int(number)))
        child_id = body["sub_issue_id"]
        if parent is None or not any(i["id"] == child_id for i in self.issues.values()):
            return httpx.Response(404, json={"message": "Not Found"})
        self.sub_issues.setdefault((repo.lower(), int(number)), []).append(child_id)
        return httpx.Response(201, json=parent)

    def _new_comment(self, repo: str, number: int, text: str, login: str,
                     association: str) -> dict[str, Any]:
        comment = example("issues/create-comment", "201")
        comment_id = next(self._ids)
        tick = next(self._clock)
        stamp = f"2026-11-22T{5 + tick // 3600:02d}:{tick // 60 % 60:02d}:{tick % 60:02d}Z"
        comment.update(
            id=comment_id, body=text, node_id=f"IC_{comment_id}",
            url=f"{API}/repos/{repo}/issues/comments/{comment_id}",
            html_url=f"https://github.com/{repo}/issues/{number}#issuecomment-{comment_id}",
            issue_url=f"{API}/repos/{repo}/issues/{number}", author_association=association,
            user={**comment["user"], "login": login}, created_at=stamp, updated_at=stamp,
        )
        self.comments[comment_id] = comment
        return comment

    def _create_comment(self, request: httpx.Request, body: Any, repo: str,
                        number: str) -> httpx.Response:
        if (repo.lower(), int(number)) not in self.issues:
            return httpx.Response(410, json={"message": "This issue was deleted"})
        return httpx.Response(201, json=self._new_comment(repo.lower(), int(number),
                                                          body["body"], BOT, "NONE"))

    def _list_comments(self, request: httpx.Request, body: Any, repo: str,
                       number: str) -> httpx.Response:
        return httpx.Response(200, json=self.issue_comments(repo, int(number)))

    def _update_comment(self, request: httpx.Request, body: Any, repo: str,
                        comment_id: str) -> httpx.Response:
        comment = self.comments.get(int(comment_id))
        if comment is None:
            return httpx.Response(404, json={"message": "Not Found"})
        comment["body"] = body["body"]
        return httpx.Response(200, json=comment)

    def _react(self, request: httpx.Request, body: Any, repo: str,
               comment_id: str) -> httpx.Response:
        exists = (int(comment_id), body["content"]) in self.reactions
        if not exists:
            self.reactions.append((int(comment_id), body["content"]))
        data = example("reactions/create-for-issue-comment", "201")
        data["content"] = body["content"]
        return httpx.Response(200 if exists else 201, json=data)

    def _repo_comments(self, request: httpx.Request, body: Any, repo: str) -> httpx.Response:
        since = request.url.params.get("since", "")
        url = f"{API}/repos/{repo.lower()}/issues/"
        found = sorted((c for c in self.comments.values()
                        if c["issue_url"].startswith(url) and c["updated_at"] >= since),
                       key=lambda c: (c["updated_at"], c["id"]))
        page = int(request.url.params.get("page", 1))
        found = found[(page - 1) * 100: page * 100]
        etag = '"' + hashlib.sha1(json.dumps([since, found]).encode()).hexdigest() + '"'
        headers = {"etag": etag, "x-poll-interval": str(self.poll_interval)}
        if request.headers.get("if-none-match") == etag:
            return httpx.Response(304, headers=headers)
        return httpx.Response(200, json=found, headers=headers)
