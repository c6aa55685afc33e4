"""Fixtures of the Agent Protocol door: a short step hold and a small artifact limit, so
the tests stay fast, and helpers that act as the person on the other side."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tickethub.settings import Settings

AP = "/ap/v1/agent/tasks"
MAX_ARTIFACT = 64 * 1024


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"ap_step_hold_seconds": 0.2,
                                       "ap_max_artifact_bytes": MAX_ARTIFACT})


async def create_task(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await client.post(AP, json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def ticket_of(client: httpx.AsyncClient, task_id: str, headers: dict[str, str]
                    ) -> dict[str, Any]:
    """The ticket behind an AP task, found by its indexed ref."""
    response = await client.get("/api/v1/tickets", params={"ref": f"ap_task_id={task_id}"},
                                headers=headers)
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert len(items) == 1
    return items[0]
