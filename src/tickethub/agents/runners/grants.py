"""The signed, short-lived, single-run grants between the hub and an Actions workflow.

A dispatch carries only the run id and a context URL; the URL's ``signature`` is
HMAC-SHA256 over ``run id . nonce . expires`` with a key the hub process made at start
(never stored, never sent), where ``nonce`` is this run's random value kept only in the
hub. So the URL opens this run's context and nothing else, until ``expires``; a changed
run id, expiry or signature does not verify.

The context document hands the workflow a second, per-run secret: ``result_key``. The
workflow signs its result body with it (``X-Tickethub-Signature: sha256=<hex>``, like
GitHub's webhook signatures), so only the holder of the context URL can report, and only
for this run. A grant is consumed by the first result it accepts (a replay is refused).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

SIGNATURE_HEADER = "X-Tickethub-Signature"


def body_signature(key: str, body: bytes) -> str:
    """The ``X-Tickethub-Signature`` value for ``body`` signed with ``key``."""
    return "sha256=" + hmac.new(key.encode(), body, hashlib.sha256).hexdigest()


@dataclass
class Grant:
    """One run's grant: what its context URL and its result signature are checked
    against. ``expires``: the context URL's end (epoch seconds)."""

    run_id: int
    expires: int
    nonce: str = field(default_factory=lambda: secrets.token_hex(16))
    result_key: str = field(default_factory=lambda: secrets.token_urlsafe(32))


class Signer:
    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    def sign(self, grant: Grant) -> str:
        message = f"{grant.run_id}.{grant.nonce}.{grant.expires}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def context_query(self, grant: Grant) -> str:
        return f"expires={grant.expires}&signature={self.sign(grant)}"

    def verify_context(self, grant: Grant, expires: int, signature: str) -> bool:
        """True when ``signature`` is this grant's for ``expires`` (expiry not checked)."""
        return expires == grant.expires and hmac.compare_digest(self.sign(grant), signature)

    @staticmethod
    def verify_body(grant: Grant, body: bytes, header: str | None) -> bool:
        return header is not None and hmac.compare_digest(
            body_signature(grant.result_key, body), header)
