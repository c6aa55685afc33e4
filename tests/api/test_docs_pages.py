"""``/docs`` and ``/redoc`` work offline: every script, style and icon they load is
served by the hub itself."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tickethub.api.app import create_app
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The app on SQLite only: nothing here touches the database."""
    hub = HubRuntime(Settings(data_dir=tmp_path))
    transport = httpx.ASGITransport(app=create_app(hub))
    async with httpx.AsyncClient(transport=transport, base_url="http://hub") as c:
        yield c
    hub.close()

_ASSET = re.compile(r'(?:src|href)="([^"]+)"')
_TYPES = {".js": "javascript", ".css": "text/css", ".png": "image/png"}


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_documentation_pages_load_only_local_assets(client: httpx.AsyncClient,
                                                          page: str) -> None:
    html = await client.get(page)
    assert html.status_code == 200
    assets = _ASSET.findall(html.text)
    assert assets, html.text
    assert "http" not in " ".join(assets)  # no CDN, no font service
    assert "fonts.googleapis" not in html.text and "cdn." not in html.text
    for url in assets:
        assert url.startswith("/"), url
        response = await client.get(url)
        assert response.status_code == 200, url
        kind = next(v for k, v in _TYPES.items() if url.endswith(k))
        assert kind in response.headers["content-type"], url
        assert len(response.content) > 100, url
    assert "SwaggerUIBundle" in html.text or "<redoc spec-url=\"/openapi.json\">" in html.text
    spec = await client.get("/openapi.json")
    assert spec.status_code == 200 and spec.json()["info"]["title"] == "tickethub"


async def test_swagger_ui_sends_nothing_to_the_validator_service(client: httpx.AsyncClient
                                                                 ) -> None:
    html = (await client.get("/docs")).text
    assert '"validatorUrl": null' in html
