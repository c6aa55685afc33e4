"""Reading back a limited timeline's gap, page by page (the real-Synapse test is in
``test_matrix_conversations.py``; this pins the paging itself)."""

from __future__ import annotations

from typing import Any

import pytest

from tickethub.channels.matrix import transport as matrix
from tickethub.channels.matrix.transport import MatrixTransport


class _History:
    """A room's history served backwards in pages of ``size``, newest first, as
    ``/messages?dir=b`` does; ``to`` stops at the previous sync's token."""

    def __init__(self, events: int, size: int) -> None:
        self.events = [{"event_id": f"${n}", "type": "m.room.message"} for n in range(events)]
        self.size = size
        self.calls: list[dict[str, Any]] = []

    async def request(self, method: object, path: object, *,
                      query_params: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(query_params)
        assert query_params["dir"] == "b" and query_params["to"] == "since"
        end = len(self.events) if query_params["from"] == "prev" else int(query_params["from"])
        start = max(0, end - self.size)
        chunk = list(reversed(self.events[start:end]))
        return {"chunk": chunk, "start": query_params["from"],
                **({"end": str(start)} if chunk else {})}


def _transport(history: _History) -> MatrixTransport:
    transport = MatrixTransport("http://127.0.0.1:1", "@bot:localhost", token="t")
    transport.client.api.request = history.request  # type: ignore[method-assign,assignment]
    return transport


async def test_the_gap_comes_back_oldest_first_across_pages() -> None:
    history = _History(events=7, size=3)
    gap = await _transport(history)._gap("!room", "prev", "since")
    assert [e["event_id"] for e in gap] == [f"${n}" for n in range(7)]
    assert len(history.calls) == 4  # 3 + 3 + 1, then an empty page ends it


async def test_a_flooded_room_is_read_back_only_so_far(monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(matrix, "MAX_GAP_PAGES", 2)
    history = _History(events=10, size=3)
    gap = await _transport(history)._gap("!room", "prev", "since")
    assert [e["event_id"] for e in gap] == [f"${n}" for n in range(4, 10)]  # the newest six
    assert "oldest are skipped" in caplog.text
