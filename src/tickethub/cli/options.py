"""Options shared by the CLI's commands: how to reach the hub, ``--json``, and the value
types (JSON, times) checked before anything is sent."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import click

from tickethub.cli.output import bad_input
from tickethub.sdk import Hub, HubError
from tickethub.sdk.config import DEFAULT_URL, TOKEN_ENV, URL_ENV

F = TypeVar("F", bound=Callable[..., Any])


def with_hub(f: F) -> F:
    """Add ``--url``/``--token`` (falling back to $TICKETHUB_URL / $TICKETHUB_TOKEN) and
    pass a :class:`Hub` as the first argument. Answers are recorded as ``via cli``."""

    @click.option("--url", envvar=URL_ENV, default=DEFAULT_URL, show_default=True,
                  show_envvar=True, metavar="URL", help="Where the hub is.")
    @click.option("--token", envvar=TOKEN_ENV, default=None, show_envvar=True,
                  metavar="TOKEN", help="Your API token.")
    @functools.wraps(f)
    def command(*args: Any, url: str, token: str | None, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        hub = ctx.with_resource(Hub(url, token or "", via="cli", on_retry=_tell_once()))
        return f(hub, *args, **kwargs)

    return command  # type: ignore[return-value]


def _tell_once() -> Callable[[HubError, float], None]:
    """While ``wait``/``watch`` ride out an outage, say so once on stderr (stdout stays
    clean for scripts)."""
    told = False

    def on_retry(error: HubError, delay: float) -> None:
        nonlocal told
        if not told:
            told = True
            click.echo(f"hub unavailable: {error.detail}; retrying until it is back", err=True)

    return on_retry


json_flag = click.option("--json", "as_json", is_flag=True,
                         help="Print JSON (the API's shape) instead of text.")


def parse_json(text: str, field: str) -> Any:
    """``text`` parsed as JSON, or a one-line usage error naming ``field``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        bad_input(f"--{field} is not valid JSON: {exc}", "bad_json", field)


def json_file(path: Path, field: str) -> Any:
    try:
        text = path.read_text()
    except OSError as exc:
        bad_input(f"cannot read {path}: {exc.strerror}", "unreadable_file", field)
    return parse_json(text, field)


_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_when(text: str, field: str) -> datetime | timedelta:
    """``30m``, ``2h``, ``1d`` (from now) or an ISO 8601 time (local time if no zone)."""
    relative = _RELATIVE.match(text)
    if relative:
        return timedelta(**{_UNITS[relative.group(2)]: float(relative.group(1))})
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        bad_input(f"--{field} must be like 30m, 2h, 1d or 2026-05-01T17:00:00+02:00, "
                  f"not {text!r}", "bad_time", field)
    return when if when.tzinfo else when.astimezone()


def parse_refs(pairs: tuple[str, ...]) -> dict[str, str] | None:
    refs: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            bad_input(f"--ref must look like name=value, not {pair!r}", "bad_ref", "ref")
        refs[name] = value
    return refs or None
