"""A browser that hits an outage or a bug gets the inbox's error page, scripts keep
problem+json: the web inbox's ``PageRoute``."""

from __future__ import annotations

import httpx
import pytest

from tests.web.conftest import Browser
from tickethub.errors import DatabaseUnavailable
from tickethub.server.runtime import HubRuntime

HTML = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def _outage(*args: object, **kwargs: object) -> None:
    raise DatabaseUnavailable("connection refused")


def _bug(*args: object, **kwargs: object) -> None:
    raise RuntimeError("a bug")


async def test_an_outage_is_a_page_with_retry_after_for_a_browser(
        pat: Browser, runtime: HubRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime.events, "last_seq", _outage)
    response = await pat.get("/t/1", headers=HTML)
    assert response.status_code == 503
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["retry-after"] == "2"
    assert "Content-Security-Policy" in response.headers
    assert "cannot reach its database" in response.text
    assert "Back to the inbox" in response.text


async def test_a_script_keeps_problem_json_in_an_outage(
        pat: Browser, runtime: HubRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime.events, "last_seq", _outage)
    response = await pat.get("/t/1", headers={"Accept": "*/*"})
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "database_unavailable"
    assert response.headers["retry-after"] == "2"


async def test_a_bug_is_a_500_page_for_a_browser(
        pat: Browser, runtime: HubRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime.events, "last_seq", _bug)
    response = await pat.get("/t/1", headers=HTML)
    assert response.status_code == 500
    assert response.headers["content-type"].startswith("text/html")
    assert "unexpected error" in response.text
    assert "a bug" not in response.text  # no internals on the page


async def test_mapped_errors_keep_their_own_handlers(client: httpx.AsyncClient) -> None:
    # Signing in is still a redirect, not an error page.
    response = await client.get("/t/1", headers=HTML)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/login")
