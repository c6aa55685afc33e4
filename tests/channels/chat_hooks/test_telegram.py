"""``POST /hooks/telegram`` with Bot API updates, beyond the chat transport contract
(``tests/channels/test_chat_transport_contract.py``, whose Telegram kit talks in forum
topics): the secret header and problems naming the field, ``message_thread_id`` trusted
only with ``is_topic_message``, and a group without topics, where replies to the bot
route by ``reply_to_message``."""

from __future__ import annotations

import httpx
from bench.chat_standin import StandIn

from tests.channels.chat_hooks.conftest import stored
from tests.channels.chat_hooks.payloads.telegram import CHAT, HEADERS, update
from tickethub.channels.chat_hooks.base import Actors
from tickethub.channels.chat_hooks.telegram import WHOLE_CHAT, parse_update
from tickethub.domain.tickets import TicketQuery
from tickethub.server.runtime import HubRuntime


def test_message_thread_id_is_a_thread_only_in_a_topic() -> None:
    actors = Actors({})
    in_topic = parse_update(update(1, "alice", "hi", 50, topic=77), actors)
    assert in_topic is not None and in_topic.thread.root == "77"
    plain = update(2, "alice", "hi", 51, reply_to=50)
    plain["message"]["message_thread_id"] = 50  # set on replies outside topics too
    msg = parse_update(plain, actors)
    assert msg is not None and msg.thread.root == WHOLE_CHAT
    assert msg.reply_to == f"{CHAT}:50"
    assert msg.sender == "telegram:1111111" and msg.event_id == "update:2"
    named = parse_update(update(3, "alice", "/foodselection@LunchBot friday", 52), actors)
    assert named is not None and named.body == "/foodselection friday"


async def test_a_wrong_secret_is_401_and_nothing_is_queued(
        client: httpx.AsyncClient, runtime: HubRuntime) -> None:
    body = update(10, "alice", "/foodselection", 1)
    for headers in ({"X-Telegram-Bot-Api-Secret-Token": "guess"}, {}):
        r = await client.post("/hooks/telegram", json=body, headers=headers)
        assert r.status_code == 401
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["field"] == "X-Telegram-Bot-Api-Secret-Token"
    assert stored(runtime, "telegram") == []


async def test_bad_updates_name_the_field(client: httpx.AsyncClient) -> None:
    r = await client.post("/hooks/telegram", content=b"nope", headers=HEADERS)
    assert r.status_code == 400
    body = update(11, "alice", "hi", 2)
    body["message"]["chat"]["id"] = "not a number"
    r = await client.post("/hooks/telegram", json=body, headers=HEADERS)
    assert r.status_code == 422
    assert r.json()["field"] == "message.chat.id"
    r = await client.post("/hooks/telegram", json={"update_id": 12,
                                                   "edited_message": {}}, headers=HEADERS)
    assert r.status_code == 200 and r.json() == {"queued": False}


async def test_in_a_group_without_topics_replies_to_the_bot_route_by_reply_to(
        client: httpx.AsyncClient, runtime: HubRuntime, standin: StandIn) -> None:
    async def send(n: int, who: str, text: str, reply_to: int | None = None) -> None:
        r = await client.post("/hooks/telegram", headers=HEADERS,
                              json=update(700 + n, who, text, 300 + n, reply_to=reply_to))
        assert r.status_code == 200

    await send(0, "alice", "/foodselection tomorrow")
    question = (await standin.wait_for(1))[0]
    assert "message_thread_id" not in question.body  # the whole chat is the thread
    asked = 9000 + 1  # the stand-in's message_id for its first sent message
    await send(1, "bob", "1", reply_to=asked)  # not alice's: kept, not obeyed
    await send(2, "alice", "3", reply_to=asked)
    diet = (await standin.wait_for(2))[1]
    assert "dietary" in diet.body["text"] and diet.body["chat_id"] == CHAT
    assert len(standin.calls) == 2
    ticket = runtime.tickets.list(TicketQuery(label="foodselection")).items[0]
    kept = [m for m in runtime.tickets.messages(ticket.id) if m.author == "telegram:2222222"]
    assert [m.body for m in kept] == ["1"]
