"""``/docs`` (Swagger UI) and ``/redoc`` with their scripts, styles and icon served by the
hub itself from ``/docs-assets/``, so the pages work offline and behind firewalls
(FastAPI's own pages load them from a CDN).

The files are the Swagger UI 5 and ReDoc bundles packaged in ``fastapi-offline``; only
its files are used, not its app factory.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs-assets"
_FILES = Path(str(files("fastapi_offline") / "static"))


def mount(app: FastAPI, docs_url: str = "/docs", redoc_url: str = "/redoc") -> None:
    """Serve the two documentation pages of ``app`` (created with ``docs_url=None`` and
    ``redoc_url=None``) and their assets."""
    openapi_url = app.openapi_url or "/openapi.json"
    oauth2_redirect = f"{docs_url}/oauth2-redirect"
    app.mount(ASSETS, StaticFiles(directory=_FILES), name="docs-assets")

    @app.get(docs_url, include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url, title=f"{app.title} - API docs",
            oauth2_redirect_url=oauth2_redirect,
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
            # no validator badge: it would be fetched from validator.swagger.io
            swagger_ui_parameters={**(app.swagger_ui_parameters or {}),
                                   "validatorUrl": None})

    @app.get(oauth2_redirect, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(redoc_url, include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url=openapi_url, title=f"{app.title} - ReDoc",
                              redoc_js_url=f"{ASSETS}/redoc.standalone.js",
                              redoc_favicon_url=f"{ASSETS}/favicon.png",
                              with_google_fonts=False)
