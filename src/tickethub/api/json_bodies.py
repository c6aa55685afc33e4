"""Webhook bodies: the raw JSON object a platform posts, checked before a channel sees it.

Webhook doors read the raw bytes (their signatures cover them), so FastAPI's body
validation does not run; this is the one check they share."""

from __future__ import annotations

import json
from typing import Any

from tickethub.errors import MalformedJSON


def json_object(body: bytes | str, *, not_json: str = "the body is not JSON"
                ) -> dict[str, Any]:
    """``body`` parsed as a JSON object; otherwise a 400 ``MalformedJSON`` naming
    ``body`` (``not_json`` says what was expected)."""
    try:
        value = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise MalformedJSON(not_json, field="body") from None
    if not isinstance(value, dict):
        raise MalformedJSON("the payload must be a JSON object", field="body")
    return value
