"""Signed reply tokens: proof that a mail answers a notification the hub sent.

A token is ``<ticket id>.<signature>``, the signature an HMAC-SHA256 of the ticket id and
the recipient's address under the hub's key. It rides in the reply address
(``reply+<token>@domain``), in an ``X-Tickethub-Token`` header and in the notification's
Message-ID (so it comes back in In-Reply-To/References). A reply counts only when a token
in it verifies for the reply's own From address: copying a subject proves nothing, and a
token sent to one person cannot be used by another.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from pathlib import Path

_TOKEN = re.compile(r"(?:reply\+|<th\.|X-Tickethub-Token:\s*)?(\d{1,12})\.([a-z2-7]{20})",
                    re.IGNORECASE)


def load_key(configured: str | None, data_dir: Path) -> bytes:
    """The signing key: the configured secret, else one generated once and kept in
    ``data_dir/mail-reply.key`` (mode 600)."""
    if configured:
        return configured.encode()
    path = data_dir / "mail-reply.key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_hex(32))
        path.chmod(0o600)
    return path.read_text().strip().encode()


def sign(key: bytes, ticket_id: int, address: str) -> str:
    digest = hmac.new(key, f"{ticket_id}:{address.strip().lower()}".encode(),
                      hashlib.sha256).digest()
    return f"{ticket_id}.{base64.b32encode(digest).decode().lower()[:20]}"


def reply_address(key: bytes, ticket_id: int, address: str, domain: str) -> str:
    return f"reply+{sign(key, ticket_id, address)}@{domain}"


def verified_ticket(key: bytes, sender: str, *places: str) -> int | None:
    """The ticket id of the first token in ``places`` that verifies for ``sender``."""
    for place in places:
        for match in _TOKEN.finditer(place or ""):
            ticket_id = int(match.group(1))
            expected = sign(key, ticket_id, sender)
            if hmac.compare_digest(expected, f"{ticket_id}.{match.group(2).lower()}"):
                return ticket_id
    return None
