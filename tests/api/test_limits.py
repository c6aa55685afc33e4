"""``api/limits.limited``: which bodies need counting as they stream in, and which the
HTTP parser already holds to their ``Content-Length``."""

from __future__ import annotations

import pytest

from tickethub.api.limits import limited
from tickethub.errors import PayloadTooLarge

LIMIT = 100


def _scope(*headers: tuple[bytes, bytes]) -> dict:
    return {"type": "http", "headers": list(headers)}


def _body(*chunks: bytes):
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
                for i, c in enumerate(chunks)]

    async def receive() -> dict:
        return messages.pop(0)

    return receive


@pytest.mark.parametrize("headers", [(), ((b"content-length", b"100"),)])
def test_a_body_framed_within_the_limit_is_read_as_it_comes(headers) -> None:
    receive = _body(b"x" * 100)
    assert limited(_scope(*headers), receive, LIMIT) is receive


def test_a_length_over_the_limit_is_refused_before_reading() -> None:
    with pytest.raises(PayloadTooLarge):
        limited(_scope((b"content-length", b"101")), _body(b""), LIMIT)


@pytest.mark.parametrize("headers", [
    ((b"transfer-encoding", b"chunked"),),
    ((b"content-length", b"10"), (b"transfer-encoding", b"chunked")),
    ((b"content-length", b"ten"),),
])
async def test_a_body_not_framed_by_a_length_is_counted_as_it_streams(headers) -> None:
    receive = _body(b"x" * 60, b"x" * 60)
    checked = limited(_scope(*headers), receive, LIMIT)
    assert checked is not receive
    assert (await checked())["body"] == b"x" * 60
    with pytest.raises(PayloadTooLarge):
        await checked()
