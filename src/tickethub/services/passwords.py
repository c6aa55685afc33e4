"""Password hashing with scrypt (stdlib), in a self-describing string format.

``scrypt$<n>$<r>$<p>$<salt b64>$<hash b64>``: the parameters travel with the hash, so
they can be raised later without breaking stored passwords.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

_N, _R, _P, _LEN = 2**14, 8, 1, 32
MIN_LENGTH = 8


def hash_password(password: str) -> str:
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=_N, r=_R, p=_P, dklen=_LEN)
    b64 = base64.b64encode
    return f"scrypt${_N}${_R}${_P}${b64(salt).decode()}${b64(digest).decode()}"


def verify_password(password: str, encoded: str) -> bool:
    """True when ``password`` matches ``encoded``; False for a malformed hash."""
    try:
        scheme, n, r, p, salt, digest = encoded.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), n=int(n),
                                r=int(r), p=int(p), dklen=len(expected))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)
