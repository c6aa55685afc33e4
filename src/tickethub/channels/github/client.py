"""The GitHub API as the channel uses it, through githubkit.

``build_github`` makes the githubkit client from settings (a token, or a GitHub App
installation; the API URL, so GitHub Enterprise Server works; an optional transport for
tests). ``GitHubGateway`` is the handful of calls the channel makes, returning plain JSON
dicts, and turning failures into three exceptions the callers act on:

* :class:`GitHubBusy` — rate limited (primary or secondary), 5xx or unreachable, after
  the short retries done in place; ``retry_after`` says when to try again;
* :class:`GitHubGone` — 404/410 on an issue or comment (deleted, transferred, or the
  token cannot see it);
* :class:`GitHubRefused` — any other 4xx (a missing permission, a 422).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import httpx
from githubkit import AppInstallationAuthStrategy, GitHub, TokenAuthStrategy
from githubkit.exception import (
    GitHubException,
    RateLimitExceeded,
    RequestError,
    RequestFailed,
    RequestTimeout,
)
from githubkit.typing import RetryOption

from tickethub.channels.github.throttle import WriteSpacer
from tickethub.ops.series import github_rate_seen

log = logging.getLogger(__name__)


class GitHubError(Exception):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GitHubBusy(GitHubError):
    """``retry_after``: seconds to wait; ``asked`` is true when GitHub said so (a
    ``retry-after`` or rate-limit reset header), false for the channel's own default."""

    def __init__(self, message: str, retry_after: float, status: int | None = None,
                 asked: bool = False) -> None:
        super().__init__(message, status)
        self.retry_after = retry_after
        self.asked = asked


class GitHubGone(GitHubError):
    pass


class GitHubRefused(GitHubError):
    pass


class RetryPolicy:
    """githubkit's retry decision: rate limits wait what GitHub asks (``retry-after``,
    else until ``x-ratelimit-reset``) when that is at most ``inline_max`` seconds; 5xx and
    secondary limits without a header back off exponentially from ``backoff`` seconds.
    Longer waits are not slept here: the caller's durable queue schedules the retry."""

    def __init__(self, attempts: int = 3, backoff: float = 1.0, inline_max: float = 10.0):
        self.attempts = attempts
        self.backoff = backoff
        self.inline_max = inline_max

    def __call__(self, exc: GitHubException, retry_count: int) -> RetryOption:
        if retry_count >= self.attempts:
            return RetryOption(False)
        wait: float | None = None
        if isinstance(exc, RateLimitExceeded):
            wait = exc.retry_after.total_seconds()
        elif isinstance(exc, RequestTimeout) or (isinstance(exc, RequestFailed) and (
                exc.response.status_code >= 500 or _is_secondary(exc.response.raw_response))):
            wait = self.backoff * 2 ** retry_count
        if wait is None or wait > self.inline_max:
            return RetryOption(False)
        log.info("GitHub said %r; retrying in %.2fs", exc, wait)
        # githubkit sleeps 60 s for a zero timedelta, so never hand it one
        return RetryOption(True, timedelta(seconds=max(wait, 0.001)))


def _is_secondary(response: httpx.Response) -> bool:
    if response.status_code not in (403, 429):
        return False
    try:
        message = str(response.json().get("message", ""))
    except Exception:
        return False
    return "secondary rate limit" in message.lower()


class SharedTransport(httpx.AsyncBaseTransport):
    """One connection pool (and one TLS context) for every request githubkit makes.

    githubkit opens and closes an ``httpx.AsyncClient`` per request unless it runs inside
    ``async with github``; handing each of those clients this transport keeps
    connections alive between requests, and its ``aclose`` leaves the pool open."""

    def __init__(self, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self.inner = inner or httpx.AsyncHTTPTransport(retries=0)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        github_rate_seen(response.headers.get("x-ratelimit-remaining"))  # for /metrics
        return response

    async def aclose(self) -> None:
        """Kept open for the next client; ``close_pool`` really closes it."""

    async def close_pool(self) -> None:
        await self.inner.aclose()


def build_github(
    *,
    token: str | None,
    api_url: str,
    app_id: str | None = None,
    app_private_key: str | None = None,
    app_installation_id: int | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    write_interval: float = 1.0,
    retry: RetryPolicy | None = None,
    timeout: float = 15.0,
) -> GitHub[Any]:
    """A githubkit client; HTTP caching is off (polling keeps its own ETag, durably)."""
    auth: Any
    if app_id and app_private_key and app_installation_id:
        auth = AppInstallationAuthStrategy(app_id, app_private_key, app_installation_id)
    elif token:
        auth = TokenAuthStrategy(token)
    else:
        raise ValueError("set TICKETHUB_GITHUB_TOKEN (or the GitHub App settings)")
    return GitHub(
        auth, base_url=api_url, user_agent="tickethub", timeout=timeout,
        async_transport=SharedTransport(transport), http_cache=False,
        throttler=WriteSpacer(write_interval),
        auto_retry=retry or RetryPolicy(),
    )


def _busy(message: str, response: httpx.Response, default: float,
          documented: bool = False) -> GitHubBusy:
    """``GitHubBusy`` with the wait GitHub asked for, else ``default`` seconds (which
    counts as asked when GitHub's docs say so: ``documented``)."""
    header = response.headers.get("retry-after")
    asked: float | None = None
    if header and header.strip().isdigit():
        asked = float(header)
    elif response.headers.get("x-ratelimit-remaining") == "0":
        reset = response.headers.get("x-ratelimit-reset", "")
        if reset.isdigit():
            asked = max(0.0, int(reset) - datetime.now().timestamp())
    return GitHubBusy(message, default if asked is None else asked, response.status_code,
                      asked=documented or asked is not None)


class GitHubGateway:
    """The calls the channel makes. Every method raises only ``GitHubError`` subclasses."""

    def __init__(self, github: GitHub[Any]) -> None:
        self.github = github

    def without_retries(self) -> GitHubGateway:
        """The same client (auth, connection pool, write spacing) minus the retries in
        place: a failure is raised at once. For callers whose queue retries durably, so
        one failing call never holds up the work behind it (the webhook inbox)."""
        config = dataclasses.replace(self.github.config, auto_retry=None)
        return GitHubGateway(GitHub(self.github.auth, config=config))

    async def _call(self, method: str, url: str, *, json: Any = None,
                    params: dict[str, Any] | None = None,
                    headers: dict[str, str] | None = None) -> httpx.Response:
        try:
            response = await self.github.arequest(method, url, json=json, params=params,
                                                  headers=headers)
        except RequestFailed as exc:
            raw = exc.response.raw_response
            status = raw.status_code
            where = f"{method} {url} -> {status}"
            if isinstance(exc, RateLimitExceeded) or _is_secondary(raw) or status == 429:
                # "wait at least one minute" without a header (GitHub's REST docs)
                raise _busy(f"rate limited: {where}", raw, 60.0, documented=True) from exc
            if status >= 500:
                raise _busy(f"GitHub error: {where}", raw, 5.0) from exc
            if status in (404, 410):
                raise GitHubGone(where, status) from exc
            raise GitHubRefused(f"{where}: {_message(raw)}", status) from exc
        except (RequestError, GitHubException, httpx.HTTPError) as exc:
            raise GitHubBusy(f"{method} {url}: {exc!r}", 5.0) from exc
        return response.raw_response

    async def _json(self, method: str, url: str, **kwargs: Any) -> Any:
        return (await self._call(method, url, **kwargs)).json()

    # -- identity and permissions ---------------------------------------------------------

    async def me(self) -> dict[str, Any]:
        """The token's user plus ``scopes`` (classic PATs; fine-grained tokens and App
        installations have none) and the primary rate limit left."""
        response = await self._call("GET", "/user")
        user = dict(response.json())
        user["scopes"] = response.headers.get("x-oauth-scopes")
        user["rate_remaining"] = response.headers.get("x-ratelimit-remaining")
        return user

    async def repository(self, repo: str) -> dict[str, Any]:
        return dict(await self._json("GET", f"/repos/{repo}"))

    async def permission(self, repo: str, login: str) -> str:
        """``admin``, ``write``, ``read`` or ``none`` (404: not a collaborator)."""
        try:
            data = await self._json("GET", f"/repos/{repo}/collaborators/{login}/permission")
        except GitHubGone:
            return "none"
        return str(data.get("permission") or "none")

    # -- issues ---------------------------------------------------------------------------

    async def create_issue(self, repo: str, title: str, body: str,
                           labels: Sequence[str], assignees: Sequence[str]) -> dict[str, Any]:
        payload: dict[str, Any] = {"title": title, "body": body, "labels": list(labels)}
        if assignees:
            payload["assignees"] = list(assignees)
        return dict(await self._json("POST", f"/repos/{repo}/issues", json=payload))

    async def update_issue(self, repo: str, number: int, **fields: Any) -> dict[str, Any]:
        return dict(await self._json("PATCH", f"/repos/{repo}/issues/{number}", json=fields))

    async def get_issue(self, repo: str, number: int) -> dict[str, Any]:
        return dict(await self._json("GET", f"/repos/{repo}/issues/{number}"))

    async def recent_issues(self, repo: str) -> list[dict[str, Any]]:
        return list(await self._json("GET", f"/repos/{repo}/issues", params={
            "state": "all", "sort": "created", "direction": "desc", "per_page": 100}))

    async def issues_with_label(self, repo: str, label: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for page in range(1, 51):
            batch = await self._json("GET", f"/repos/{repo}/issues", params={
                "state": "all", "labels": label, "per_page": 100, "page": page})
            found += [i for i in batch if "pull_request" not in i]
            if len(batch) < 100:
                break
        return found

    async def add_sub_issue(self, repo: str, parent_number: int, child_issue_id: int) -> None:
        """Make the issue with database id ``child_issue_id`` a sub-issue (the API takes
        the child's ``id``, not its number)."""
        await self._call("POST", f"/repos/{repo}/issues/{parent_number}/sub_issues",
                         json={"sub_issue_id": child_issue_id})

    async def set_labels(self, repo: str, number: int, labels: Sequence[str]) -> None:
        await self._call("PUT", f"/repos/{repo}/issues/{number}/labels",
                         json={"labels": list(labels)})

    # -- comments -------------------------------------------------------------------------

    async def create_comment(self, repo: str, number: int, body: str) -> dict[str, Any]:
        return dict(await self._json("POST", f"/repos/{repo}/issues/{number}/comments",
                                     json={"body": body}))

    async def update_comment(self, repo: str, comment_id: int, body: str) -> dict[str, Any]:
        return dict(await self._json("PATCH", f"/repos/{repo}/issues/comments/{comment_id}",
                                     json={"body": body}))

    async def issue_comments(self, repo: str, number: int,
                             since: str | None = None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for page in range(1, 51):
            params: dict[str, Any] = {"per_page": 100, "page": page}
            if since:
                params["since"] = since
            batch = await self._json("GET", f"/repos/{repo}/issues/{number}/comments",
                                     params=params)
            found += batch
            if len(batch) < 100:
                break
        return found

    async def repo_comments(self, repo: str, since: str | None, etag: str | None,
                            page: int = 1) -> tuple[int, list[dict[str, Any]], str | None,
                                                    float | None]:
        """One page of the repository's issue comments updated since ``since``, oldest
        first: ``(status, comments, etag, poll_interval)``; status 304 (no change, costs
        no rate limit) comes with no comments."""
        params: dict[str, Any] = {"sort": "updated", "direction": "asc", "per_page": 100,
                                  "page": page}
        if since:
            params["since"] = since
        headers = {"If-None-Match": etag} if etag else None
        response = await self._call("GET", f"/repos/{repo}/issues/comments", params=params,
                                    headers=headers)
        interval = response.headers.get("x-poll-interval")
        poll = float(interval) if interval and interval.isdigit() else None
        if response.status_code == 304:
            return 304, [], etag, poll
        return response.status_code, list(response.json()), response.headers.get("etag"), poll

    async def react(self, repo: str, comment_id: int, content: str) -> None:
        """Add a reaction; GitHub answers 200 for one that exists, so repeating is safe."""
        await self._call("POST", f"/repos/{repo}/issues/comments/{comment_id}/reactions",
                         json={"content": content})


def _message(response: httpx.Response) -> str:
    try:
        return str(response.json().get("message", ""))[:300]
    except Exception:
        return response.text[:300]
