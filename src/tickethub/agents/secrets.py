"""Per-person secrets, sealed at rest with ChaCha20-Poly1305 (``cryptography``'s AEAD).

The key is outside the database: the ``agents_secret_key`` setting (32 bytes,
URL-safe base64) or, when unset, a key file ``agent-secrets.key`` in the data folder,
created on first use with mode 0600. Each sealed value is bound to its owner and name
(associated data), so a row copied to another person does not open.

Secrets are handed to code, never to a model: every text a run writes or shows a model
goes through :meth:`SecretBox.redact`, and :class:`RedactingFilter` keeps them out of logs.
"""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from tickethub.errors import ValidationFailed

KEY_FILE = "agent-secrets.key"
_NONCE = 12
REDACTED = "[redacted]"


class SecretRows(Protocol):
    def put_secret(self, owner: str, name: str, sealed: bytes, now: object) -> None: ...
    def get_secret(self, owner: str, name: str) -> bytes | None: ...


def load_key(data_dir: Path, configured: str | None) -> bytes:
    """The sealing key: ``configured`` (base64) or the key file, made if missing."""
    if configured:
        key = base64.urlsafe_b64decode(configured.encode())
        if len(key) != 32:
            raise ValidationFailed("agents_secret_key must be 32 bytes of URL-safe base64",
                                   field="agents_secret_key")
        return key
    path = data_dir / KEY_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(base64.urlsafe_b64encode(ChaCha20Poly1305.generate_key()))
    return base64.urlsafe_b64decode(path.read_bytes().strip())


class SecretBox:
    """Seals and opens secrets; ``key`` is the key or a function that loads it, called
    on the first seal or open (so a hub whose people keep no secrets never makes a key
    file)."""

    def __init__(self, key: bytes | Callable[[], bytes]) -> None:
        self._key = key
        self._cipher: ChaCha20Poly1305 | None = None
        self._known: set[str] = set()

    @property
    def _aead(self) -> ChaCha20Poly1305:
        if self._cipher is None:
            key = self._key() if callable(self._key) else self._key
            self._cipher = ChaCha20Poly1305(key)
        return self._cipher

    def seal(self, owner: str, name: str, value: str) -> bytes:
        self._remember(value)
        nonce = os.urandom(_NONCE)
        return nonce + self._aead.encrypt(nonce, value.encode(), _aad(owner, name))

    def open(self, owner: str, name: str, sealed: bytes) -> str:
        try:
            value = self._aead.decrypt(sealed[:_NONCE], sealed[_NONCE:], _aad(owner, name)
                                       ).decode()
        except InvalidTag:
            raise ValidationFailed(f"secret {name!r} of {owner} does not open with this "
                                   "key", field="name") from None
        self._remember(value)
        return value

    def _remember(self, value: str) -> None:
        if len(value) >= 6:  # shorter values would redact ordinary words
            self._known.add(value)

    def redact(self, text: str) -> str:
        """``text`` with every secret this box has sealed or opened replaced."""
        for value in self._known:
            if value in text:
                text = text.replace(value, REDACTED)
        return text


def _aad(owner: str, name: str) -> bytes:
    return f"tickethub-agent-secret\x00{owner}\x00{name}".encode()


class RedactingFilter(logging.Filter):
    """A logging filter that redacts the box's secrets from every record's message."""

    def __init__(self, box: SecretBox) -> None:
        super().__init__()
        self._box = box

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = self._box.redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True
