"""Checking ``X-Hub-Signature-256``: HMAC-SHA256 of the raw request body with the
webhook secret, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac


def sign(secret: str, body: bytes) -> str:
    """The header value GitHub sends for ``body``: ``sha256=<hex digest>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, header: str | None) -> bool:
    """True only when ``header`` is the signature of exactly these bytes."""
    if not secret or not header or not header.startswith("sha256="):
        return False
    return hmac.compare_digest(sign(secret, body).encode(), header.strip().encode())
