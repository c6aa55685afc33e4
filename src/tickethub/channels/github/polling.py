"""Receiving without a public URL: poll each repository connected with ``poll`` for
issue comments updated since the last one seen.

Each poll sends ``If-None-Match`` with the last ETag, so an unchanged list answers 304
and costs no rate limit; the next poll waits ``poll_seconds`` or GitHub's
``X-Poll-Interval``, whichever is longer (or ``retry_after`` when GitHub is busy). The
cursor (``since``, ETag, next time) is stored, so a restart resumes where it left off.
Comments go through the same ``GithubInbound.comment`` as webhooks; a comment seen twice
is a duplicate, one whose body changed is an edit. Polling cannot see deletions.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from tickethub.channels.github.client import GitHubBusy, GitHubError, GitHubGateway
from tickethub.channels.github.inbound import GithubInbound, issue_number_of
from tickethub.services.github_sync import GithubSyncService, RepoConnection
from tickethub.services.ports import Clock

log = logging.getLogger(__name__)


class CommentPoller:
    def __init__(self, sync: GithubSyncService, inbound: GithubInbound,
                 gateway: GitHubGateway, clock: Clock, poll_seconds: float) -> None:
        self._sync = sync
        self._inbound = inbound
        self._gateway = gateway
        self._clock = clock
        self._period = poll_seconds

    async def run(self) -> None:
        while True:
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("GitHub polling round failed")
            await asyncio.sleep(min(self._period, 5.0))

    async def run_once(self) -> int:
        """Poll every due repository; returns the comments handled."""
        now = self._clock.now()
        total = 0
        for conn in await asyncio.to_thread(self._sync.connections):
            if conn.poll and (conn.next_poll_at is None or conn.next_poll_at <= now):
                total += await self.poll(conn)
        return total

    async def poll(self, conn: RepoConnection) -> int:
        repo = conn.full_name
        since = conn.poll_since
        try:
            status, comments, etag, interval = await self._gateway.repo_comments(
                repo, since, conn.poll_etag)
        except GitHubBusy as exc:
            await self._save(conn, since, conn.poll_etag, exc.retry_after)
            return 0
        except GitHubError as exc:
            log.warning("polling %s failed: %s", repo, exc)
            await self._save(conn, since, conn.poll_etag, self._period)
            return 0
        handled = 0
        page = 1
        stopped = False
        try:
            while status != 304:
                for comment in comments:
                    number = issue_number_of(comment)
                    if number is not None:
                        await self._inbound.comment(repo, number, comment, "")
                    handled += 1
                    since = max(since or "", str(comment.get("updated_at") or "")) or since
                if len(comments) < 100:
                    break
                page += 1
                status, comments, _, _ = await self._gateway.repo_comments(
                    repo, conn.poll_since, None, page)
        except Exception:
            log.exception("polling %s stopped at %s; it resumes from there", repo, since)
            stopped = True
        # The ETag belongs to the URL with the old ``since``; a new cursor starts afresh,
        # and so does a poll that stopped early (a 304 would skip what it did not handle).
        keep_etag = since == conn.poll_since and not stopped
        await self._save(conn, since, etag if keep_etag else None,
                         max(self._period, interval or 0.0))
        return handled

    async def _save(self, conn: RepoConnection, since: str | None, etag: str | None,
                    wait: float) -> None:
        next_at = self._clock.now() + timedelta(seconds=wait)
        await asyncio.to_thread(self._sync.save_poll, conn, since, etag, next_at)
