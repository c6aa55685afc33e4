"""Real adapters for the small ports: the system clock and a secure token generator."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class TokenGenerator:
    """Tokens look like ``th_`` + 43 URL-safe characters (256 bits)."""

    def token(self) -> str:
        return "th_" + secrets.token_urlsafe(32)
