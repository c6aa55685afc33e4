"""A hub with the webhook chat transports on (SQLite and PostgreSQL), pointed at a local
stand-in for the platforms' send APIs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.chat_standin import StandIn
from sqlalchemy import select

from tests.conftest import ADMIN_TOKEN
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings
from tickethub.store.chat_store import chat_inbox

SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
MATTERMOST_TOKEN = "xr3j5x3p4pfk7dkpwr3ftjpctr"
TELEGRAM_SECRET = "telegram-secret_0123456789"


@pytest.fixture
def standin() -> Iterator[StandIn]:
    server = StandIn()
    yield server
    server.close()


@pytest.fixture
def settings(tmp_path: Path, database_url: str, standin: StandIn) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url,
                    admin_token=ADMIN_TOKEN, delivery_poll_seconds=0.05,
                    chat_timeout_check_seconds=0.2,
                    slack_signing_secret=SLACK_SECRET, slack_bot_token="xoxb-test",
                    slack_api_url=standin.url + "/api",
                    mattermost_tokens=["other-integration-token", MATTERMOST_TOKEN],
                    mattermost_url=standin.url, mattermost_bot_token="mm-bot-token",
                    telegram_webhook_secret=TELEGRAM_SECRET, telegram_bot_token="123:ABC",
                    telegram_api_url=standin.url,
                    chat_actors={"slack:U0ALICE001": "alice", "mattermost:alice0id": "alice",
                                 "telegram:1111111": "alice"})


def stored(runtime: HubRuntime, transport: str) -> list[str]:
    """The event ids of every message the hooks of ``transport`` stored (handled or
    not), oldest first."""
    with runtime.engine.connect() as connection:
        return list(connection.execute(
            select(chat_inbox.c.event_id).where(chat_inbox.c.transport == transport)
            .order_by(chat_inbox.c.seq)).scalars())
