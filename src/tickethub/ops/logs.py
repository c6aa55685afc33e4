"""How the hub logs: plain text lines (the default) or one JSON object per line
(``TICKETHUB_LOG_FORMAT=json``), each with the request id of the request that wrote it.

Contracts:

* :func:`configure` owns the root logger's handler; uvicorn's loggers propagate to it
  (``serve`` gives uvicorn no logging config of its own), so every line has one shape.
* JSON lines carry ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``,
  ``request_id`` (when inside a request) and ``exception`` (the traceback, if any).
* Loggers that print outbound URLs (``QUIET_LOGGERS``: httpx, httpcore) are kept at
  WARNING, since some URLs carry credentials.
* Output is scrubbed as a last line of defence: hub tokens (``th_...``), bearer
  credentials and ``password=``/``token=`` values are replaced by ``[redacted]``. The hub
  does not log secrets in the first place (a test scans the whole suite's logs); this
  catches a library or a plugin that would.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any

from tickethub.ops import request_id

#: Loggers kept quieter than the hub's level: httpx and httpcore log every outbound
#: request's URL at INFO/DEBUG, and some APIs carry a credential in the URL (Telegram's
#: ``/bot<token>/``), some links a one-time token in the query.
QUIET_LOGGERS = {"httpx": logging.WARNING, "httpcore": logging.WARNING}

_SECRETS = re.compile(
    r"(?P<token>\bth_[A-Za-z0-9_-]{16,})"
    r"|(?P<bot>/bot)\d+:[A-Za-z0-9_-]+"
    r"|(?P<bearer>(?i:bearer)\s+)[^\s\"',]+"
    r"|(?P<pair>(?i:password|passwd|token|secret|api_key|access_token)[\"']?\s*[=:]\s*[\"']?)"
    r"[^\s\"'&,]+")


def redact(text: str) -> str:
    """``text`` with credentials replaced by ``[redacted]``."""
    def replace(match: re.Match[str]) -> str:
        if match.group("token"):
            return "th_[redacted]"
        kept = match.group("bot") or match.group("bearer") or match.group("pair") or ""
        return kept + "[redacted]"
    return _SECRETS.sub(replace, text)


class RequestIdFilter(logging.Filter):
    """Puts the current request id (or ``-``) on every record as ``request_id``."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.current() or "-"
        return True


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        rid = getattr(record, "request_id", None)
        if rid and rid != "-":
            out["request_id"] = rid
        if record.exc_info:
            out["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(out, ensure_ascii=False, default=str)


def handler(log_format: str, stream: Any = None) -> logging.Handler:
    """A stream handler (stderr by default) in ``log_format`` (text or json)."""
    h = logging.StreamHandler(stream or sys.stderr)
    h.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    h.addFilter(RequestIdFilter())
    return h


def configure(log_format: str, level: str) -> logging.Handler:
    """Make the root logger write ``log_format`` lines at ``level``; replaces handlers
    an earlier call installed. Returns the handler."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "tickethub", False)]:
        root.removeHandler(old)
    new = handler(log_format)
    new.tickethub = True  # type: ignore[attr-defined]
    root.addHandler(new)
    root.setLevel(level.upper())
    for name, quiet in QUIET_LOGGERS.items():
        logging.getLogger(name).setLevel(max(quiet, root.level))
    return new
