"""Response classes shared by the doors."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse, Response

from tickethub import json_codec


class FastJSONResponse(JSONResponse):
    """``JSONResponse`` rendered with orjson (``json_codec``): the same compact JSON,
    in a fraction of the time. For the hot paths (the Agent Protocol door)."""

    def render(self, content: Any) -> bytes:
        return json_codec.dumps_bytes(content)


_JSON = (b"content-type", b"application/json")


class EncodedJSONResponse(Response):
    """A JSON body already encoded (``shared_ticket_json``: one body for a write's
    requester and all its waiters), sent as it is, with ``headers`` given as lower-case
    byte pairs: no rendering and no header list built from a mapping per response,
    which a shared deadline does for thousands of waiters at once."""

    media_type = "application/json"

    def __init__(self, body: bytes, status_code: int = 200,
                 headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
        self.status_code = status_code
        self.background = None
        self.body = body
        self.raw_headers = [*headers, (b"content-length", str(len(body)).encode()), _JSON]
