"""Page rendering: one Jinja2 environment (autoescape on), filters, security headers."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from tickethub.api.deps import hub_of
from tickethub.web.markdown import render as markdown
from tickethub.web.review import message_line
from tickethub.web.weight import weight

TEMPLATES = Path(__file__).with_name("templates")
STATIC = Path(__file__).with_name("static")

# No inline script or style is ever emitted, so the policy can forbid both.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def _span(seconds: float) -> str:
    minutes = round(abs(seconds) / 60)
    if minutes < 1:
        return "less than a minute"
    if minutes < 60:
        return f"{minutes} min"
    hours = round(minutes / 60)
    if hours < 48:
        return f"{hours} h"
    return f"{round(hours / 24)} d"


def due_text(due: datetime | None, now: datetime) -> str:
    """``in 12 min`` / ``overdue`` (by how much) / empty when there is no due date."""
    if due is None:
        return ""
    seconds = (due - now).total_seconds()
    if seconds <= 0:
        return f"overdue by {_span(seconds)}" if seconds < -60 else "overdue"
    return f"in {_span(seconds)}"


def ago(at: datetime, now: datetime) -> str:
    seconds = (now - at).total_seconds()
    return "just now" if seconds < 60 else f"{_span(seconds)} ago"


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def _make_env() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # templates ship with the package; no stat() per render
    )
    env.filters["markdown"] = markdown
    env.filters["pretty"] = _pretty
    env.filters["iso"] = lambda at: at.isoformat() if at else ""
    env.filters["stamp"] = lambda at: at.strftime("%Y-%m-%d %H:%M UTC") if at else ""
    env.globals["due_text"] = due_text
    env.globals["ago"] = ago
    env.globals["change_line"] = message_line
    env.globals["weight"] = weight
    return env


env = _make_env()


def page(request: Request, template: str, context: dict[str, Any],
         status_code: int = 200) -> HTMLResponse:
    """Render ``template`` with ``context`` plus ``request`` and the hub's clock."""
    hub = hub_of(request)
    html = env.get_template(template).render(request=request, now=hub.clock.now(), **context)
    return HTMLResponse(html, status_code=status_code, headers=SECURITY_HEADERS)


def fragment(template: str, macro: str, *args: Any) -> str:
    """The HTML of one macro (a row, a message) for a live update."""
    return str(getattr(env.get_template(template).module, macro)(*args))
