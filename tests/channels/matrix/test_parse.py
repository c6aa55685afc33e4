"""Matrix events to chat messages: the thread root comes from the ``m.thread`` relation,
a thread's reply fallback is not a reply, a real reply inside a thread is."""

from __future__ import annotations

import pytest

from tickethub.channels.matrix.transport import parse_message
from tickethub.conversations.loading import load_handlers


def _event(content: dict[str, object]) -> dict[str, object]:
    return {"type": "m.room.message", "event_id": "$e", "sender": "@alice:x",
            "origin_server_ts": 1, "content": {"msgtype": "m.text", "body": "3", **content}}


def test_a_top_level_message_roots_its_own_thread() -> None:
    msg = parse_message("!r:x", _event({}), direct=False)
    assert msg is not None
    assert (msg.thread_root, msg.reply_to, msg.thread.root) == (None, None, "$e")


def test_a_thread_message_with_the_reply_fallback_is_not_a_reply() -> None:
    rel = {"rel_type": "m.thread", "event_id": "$root", "is_falling_back": True,
           "m.in_reply_to": {"event_id": "$last"}}
    msg = parse_message("!r:x", _event({"m.relates_to": rel}), direct=False)
    assert msg is not None and msg.thread_root == "$root" and msg.reply_to is None
    assert msg.thread.key == "matrix|!r:x|$root"


def test_a_real_reply_inside_a_thread_names_the_question() -> None:
    rel = {"rel_type": "m.thread", "event_id": "$root", "is_falling_back": False,
           "m.in_reply_to": {"event_id": "$prompt"}}
    msg = parse_message("!r:x", _event({"m.relates_to": rel}), direct=True)
    assert msg is not None and msg.reply_to == "$prompt" and msg.direct


def test_other_events_are_not_messages() -> None:
    assert parse_message("!r:x", {"type": "m.reaction", "content": {}}, False) is None


def test_a_plugin_spec_without_a_function_is_refused() -> None:
    with pytest.raises(ValueError, match="module:function"):
        load_handlers(["tickethub.conversations.examples.foodselection"])
    assert [h.name for h in load_handlers(
        ["tickethub.conversations.examples.foodselection:handlers"])] == [
        "foodselection", "orders"]
