"""``/docs`` and ``/redoc`` render in a real browser that may reach nothing but the hub
(Debian's Chromium driven by Playwright, as in ``test_browser.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_server
from tests.web.live_server import LiveHub, live_hub
from tests.web.test_browser import CHROMIUM, FLAGS

pytestmark = pytest.mark.slow


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[LiveHub]:
    require_server("Chromium", CHROMIUM.exists())
    pytest.importorskip("playwright")
    with live_hub(tmp_path, {}) as live:
        yield live


def test_api_docs_render_offline(hub: LiveHub) -> None:
    from playwright.sync_api import sync_playwright

    elsewhere: list[tuple[str, str]] = []

    def only_the_hub(route: Any) -> None:
        if route.request.url.startswith(hub.url):
            route.continue_()
        else:  # offline: nothing outside the hub answers
            elsewhere.append((route.request.resource_type, route.request.url))
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=FLAGS)
        try:
            page = browser.new_page()
            page.route("**/*", only_the_hub)
            page.goto(hub.url + "/docs")
            page.wait_for_selector(".opblock", timeout=30_000)  # the operations are listed
            assert page.locator(".opblock").count() > 10
            page.goto(hub.url + "/redoc")
            page.wait_for_selector("h1:has-text('tickethub')", timeout=30_000)
            assert page.get_by_text("Long-poll until the ticket is resolved").count() > 0
        finally:
            browser.close()
    # ReDoc's footer asks cdn.redoc.ly for its logo; offline the picture is just missing.
    assert elsewhere == [("image", "https://cdn.redoc.ly/redoc/logo-mini.svg")]
