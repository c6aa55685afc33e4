"""With several transports on one hub, each transport's pump announces only the
timeouts of its own threads (a Slack thread's timeout must not be sent through Telegram)."""

from __future__ import annotations

from collections.abc import Callable

from tests.conversations.conftest import Hub
from tickethub.conversations.model import ChatMessage
from tickethub.testing import FakeClock


def test_expire_due_for_one_transport_leaves_the_others(
        make_hub: Callable[..., Hub], clock: FakeClock) -> None:
    hub = make_hub()
    for transport, room in (("slack", "C0LUNCH"), ("telegram", "-100123")):
        out = hub.engine.receive(ChatMessage(transport, room, f"{transport}-1",
                                             f"{transport}:alice",
                                             "@bot foodselection tomorrow"))
        assert out.replies
    clock.advance(minutes=11)
    slack = hub.engine.expire_due("slack")
    assert [r.thread.transport for r in slack.replies] == ["slack"]
    assert "timed out" in slack.replies[0].text
    telegram = hub.engine.expire_due("telegram")
    assert [r.thread.key for r in telegram.replies] == ["telegram|-100123|telegram-1"]
    assert hub.engine.expire_due().replies == []
