"""Fixtures for the GitHub channel: a hub with the channel installed against a fake
GitHub (``gh_fake``) built from GitHub's OpenAPI examples, and helpers that send signed
webhook deliveries built from the community webhook examples."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))  # the gh_* helper modules beside this file

import gh_examples
import httpx
import pytest
from gh_fake import FakeGitHub
from gh_helpers import ADMIN_TOKEN, REPO, SECRET
from sqlalchemy.exc import IntegrityError

from tickethub.api.app import create_app
from tickethub.channels.github import GithubChannel, install
from tickethub.domain.actors import SYSTEM
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings


@pytest.fixture(scope="session", autouse=True)
def _examples() -> None:
    """Fetch the npm example packages once (skips, or fails in CI, without npm)."""
    try:
        for key in gh_examples.PACKAGES:
            gh_examples.fetch(key)
    except gh_examples.Unavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the npm example packages are required in CI: {exc}")
        pytest.skip(f"the npm example packages are unavailable: {exc}")


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url,
                    admin_token=ADMIN_TOKEN, delivery_poll_seconds=0.02,
                    delivery_backoff_seconds=0.02, github_webhook_secret=SECRET,
                    github_write_interval_seconds=0, github_backoff_seconds=0.01,
                    github_poll_seconds=3600)


@pytest.fixture
def fake() -> FakeGitHub:
    return FakeGitHub()


@pytest.fixture
def github(runtime: HubRuntime, fake: FakeGitHub) -> GithubChannel:
    _explain_timeouts(runtime)
    return install(runtime, token="ghp_test", transport=httpx.MockTransport(fake.handler))


@pytest.fixture
async def client(runtime: HubRuntime, github: GithubChannel
                 ) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(runtime)
    async with runtime.running():
        # A channel's first round starts at the end of the log; take that round now so
        # tickets the test makes right away are mirrored.
        with contextlib.suppress(IntegrityError):  # the worker's first round won the race
            await asyncio.to_thread(runtime.deliveries.enqueue_new, "github", lambda e: [])
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hub") as c:
            yield c


@pytest.fixture
def connect(github: GithubChannel) -> Callable[..., Any]:
    def do(repo: str = REPO, **rule: Any) -> Any:
        rule.setdefault("labels", ["github"])
        return github.sync.connect(SYSTEM, repo, **rule)
    return do


def _explain_timeouts(runtime: HubRuntime) -> None:
    """On an ``eventually`` timeout, print the GitHub deliveries and the hub's tasks."""
    import gh_helpers

    def show() -> None:
        for d in runtime.deliveries.list("github", None, 20):
            print("delivery", d)
        for t in runtime._tasks:
            print("task", t)
            t.print_stack()
    gh_helpers._debug = show
