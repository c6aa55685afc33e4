"""A hub with the webhook chat transports on (SQLite and PostgreSQL), pointed at a local
stand-in for the platforms' send APIs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.chat_standin import StandIn
from sqlalchemy import select

from tests.channels.chat_hooks.payloads import mattermost, slack, telegram
from tests.conftest import ADMIN_TOKEN
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings
from tickethub.store.chat_store import chat_inbox


def hook_settings(data_dir: Path, database_url: str, standin: StandIn) -> Settings:
    """A hub with Slack, Mattermost and Telegram on, sending to ``standin``; alice is
    one actor on all three (``chat_actors``), bob is not mapped."""
    return Settings(data_dir=data_dir, database_url=database_url,
                    admin_token=ADMIN_TOKEN, delivery_poll_seconds=0.05,
                    chat_timeout_check_seconds=0.2,
                    slack_signing_secret=slack.SECRET, slack_bot_token="xoxb-test",
                    slack_api_url=standin.url + "/api",
                    mattermost_tokens=["other-integration-token", mattermost.TOKEN],
                    mattermost_url=standin.url, mattermost_bot_token="mm-bot-token",
                    telegram_webhook_secret=telegram.SECRET, telegram_bot_token="123:ABC",
                    telegram_api_url=standin.url,
                    chat_actors={"slack:U0ALICE001": "alice", "mattermost:alice0id": "alice",
                                 "telegram:1111111": "alice"})


@pytest.fixture
def standin() -> Iterator[StandIn]:
    server = StandIn()
    yield server
    server.close()


@pytest.fixture
def settings(tmp_path: Path, database_url: str, standin: StandIn) -> Settings:
    return hook_settings(tmp_path / "data", database_url, standin)


def stored(runtime: HubRuntime, transport: str) -> list[str]:
    """The event ids of every message ``transport`` stored (handled or not), oldest
    first."""
    with runtime.engine.connect() as connection:
        return list(connection.execute(
            select(chat_inbox.c.event_id).where(chat_inbox.c.transport == transport)
            .order_by(chat_inbox.c.seq)).scalars())
