"""Matrix as a chat transport, through mautrix-python (typed events and thread relations).

Inbound: a ``/sync`` loop as the bot user; every ``m.room.message`` from someone else
becomes a :class:`~tickethub.conversations.model.ChatMessage` whose thread root is the
``m.thread`` relation's event (a top-level message roots its own thread), whose
``reply_to`` is a real reply (not a thread's reply fallback), and which is *direct* in a
room of two members. Invitations are accepted. With ``tokens`` (the hub's chat state),
the sync token is stored once a sync's messages have been handled, and a restarted hub
goes on from where it stopped, so messages sent while it was down are handled however
long that was; the engine drops what it already handled (event ids), so a message handled
just before a crash is not handled twice. Without a stored token (a fresh bot) the first
sync reads recent timelines, and messages older than ``backlog_seconds`` are skipped.
A sync from a token returns at most ``timeline_limit`` events per room and marks the
timeline ``limited`` when there were more: the messages in between are then paged back
from the room's history (``/messages`` from the timeline's ``prev_batch`` to the token),
oldest first, so a busy room or a long restart loses nothing.

Outbound: replies go into the thread (``m.thread`` with the reply fallback for older
clients); a private reply goes to a direct room with the user, created on first need.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, Protocol, cast

from mautrix.api import HTTPAPI, Method, Path
from mautrix.client import ClientAPI
from mautrix.types import (
    JSON,
    EventID,
    EventType,
    FilterID,
    MessageEvent,
    MessageType,
    RelationType,
    RoomCreatePreset,
    RoomID,
    SyncToken,
    TextMessageEventContent,
    UserID,
)

from tickethub.conversations.model import ChatMessage, Reply

log = logging.getLogger(__name__)

TRANSPORT = "matrix"
_MESSAGES_ONLY = json.dumps({"types": ["m.room.message"]})
# Pages of a limited timeline's gap read back at most (100 events each): a gap longer
# than that is logged and its oldest messages are skipped, so one room that was flooded
# while the hub was down cannot hold up every other room.
MAX_GAP_PAGES = 50


def _sync_filter(timeline_limit: int) -> str:
    return json.dumps({"room": {"timeline": {"limit": timeline_limit,
                                             "types": ["m.room.message"]},
                                "state": {"lazy_load_members": True}},
                       "presence": {"types": []}, "account_data": {"types": []}})


def parse_message(room_id: str, raw: dict[str, Any], direct: bool) -> ChatMessage | None:
    """A ChatMessage for a ``m.room.message`` event; ``None`` for anything else."""
    if raw.get("type") != "m.room.message" or "body" not in raw.get("content", {}):
        return None
    event = MessageEvent.deserialize(cast(JSON, {**raw, "room_id": room_id}))
    content = event.content
    rel = content.relates_to
    root = rel.event_id if rel and rel.rel_type == RelationType.THREAD else None
    reply_to = None
    if rel and rel.in_reply_to and not (root and rel.is_falling_back):
        reply_to = str(rel.in_reply_to.event_id)
    return ChatMessage(TRANSPORT, room_id, str(event.event_id), str(event.sender),
                       content.body, thread_root=str(root) if root else None,
                       reply_to=reply_to, direct=direct)


def _direct_invite(invite: dict[str, Any], user: str) -> bool:
    """True when the bot's invitation is marked ``is_direct`` (a DM)."""
    for raw in invite.get("invite_state", {}).get("events", []):
        if raw.get("type") == "m.room.member" and raw.get("state_key") == user:
            return bool(raw.get("content", {}).get("is_direct"))
    return False


class SyncTokens(Protocol):
    """Where a chat account stopped reading (``services.chat_state.ChatState`` has it)."""

    def sync_token(self, account: str) -> str | None: ...

    def save_sync_token(self, account: str, token: str, at: datetime) -> None: ...


class MatrixTransport:
    """The bot's Matrix account. ``rooms``: joined at start and, when given, the only
    rooms served (direct rooms always are); empty: every room the bot is invited to.
    ``backlog_seconds``: messages older than this when first seen are skipped (a fresh
    bot must not act on a room's old history)."""

    name = TRANSPORT

    def __init__(self, homeserver: str, user: str, *, password: str | None = None,
                 token: str | None = None, rooms: tuple[str, ...] = (),
                 backlog_seconds: float = 3600.0, sync_timeout_ms: int = 5000,
                 tokens: SyncTokens | None = None, timeline_limit: int = 100) -> None:
        self.user = user
        self.account = f"{TRANSPORT}:{user}"
        self._tokens = tokens
        self._password = password
        self._rooms = rooms
        self._backlog_ms = backlog_seconds * 1000
        self._sync_timeout = sync_timeout_ms
        self._sync_filter = _sync_filter(timeline_limit)
        self.client = ClientAPI(UserID(user), api=HTTPAPI(base_url=homeserver, token=token or ""))
        self._members: dict[str, int] = {}
        self._dm_rooms: dict[str, str] = {}
        self._connected = False
        self._connecting = asyncio.Lock()

    async def connect(self) -> None:
        """Log in (once) and join ``rooms``."""
        async with self._connecting:
            if self._connected:
                return
            if self._password is not None and not self.client.api.token:
                await self.client.login(identifier=UserID(self.user),
                                        password=self._password, device_name="tickethub")
            for room in self._rooms:
                await self.client.join_room(RoomID(room))
            self._connected = True

    async def close(self) -> None:
        await self.client.api.session.close()

    async def messages(self) -> AsyncIterator[ChatMessage]:
        since = await self._stored_token()
        resumed = since is not None  # then nothing is backlog: every event is unhandled
        while True:
            try:
                sync = await self.client.sync(  # an inline filter JSON works as the id
                    since=SyncToken(since) if since else None, timeout=self._sync_timeout,
                    filter_id=FilterID(self._sync_filter))
            except Exception:  # server restarting: wait and go on from the same token
                log.exception("matrix sync failed; retrying")
                await asyncio.sleep(2)
                continue
            rooms = sync.get("rooms", {})
            for room_id, invite in rooms.get("invite", {}).items():
                if self._serves(room_id) or _direct_invite(invite, self.user):
                    await self.client.join_room(RoomID(room_id))
                self._members.pop(room_id, None)
            now_ms = time.time() * 1000
            for room_id, room in rooms.get("join", {}).items():
                timeline = room.get("timeline", {})
                events = timeline.get("events", [])
                if since and timeline.get("limited") and timeline.get("prev_batch"):
                    events = await self._gap(room_id, timeline["prev_batch"], since) + events
                for raw in events:
                    if raw.get("sender") == self.user:
                        continue
                    if (not resumed and
                            now_ms - raw.get("origin_server_ts", now_ms) > self._backlog_ms):
                        continue
                    direct = await self._is_direct(room_id)
                    if not (direct or self._serves(room_id)):
                        continue
                    msg = parse_message(room_id, raw, direct)
                    if msg is not None:
                        yield msg
            # Here every message of this sync has been handled (the consumer asked for
            # the next one): only now is the token worth keeping.
            if sync["next_batch"] != since:
                since = sync["next_batch"]
                await self._store_token(since)

    async def _gap(self, room_id: str, prev_batch: str, since: str) -> list[dict[str, Any]]:
        """The messages of ``room_id`` a limited timeline left out: from the previous
        sync's token ``since`` up to the timeline's ``prev_batch``, oldest first."""
        gap: list[dict[str, Any]] = []
        start = prev_batch
        for _ in range(MAX_GAP_PAGES):
            page = await self.client.api.request(
                Method.GET, Path.v3.rooms[RoomID(room_id)].messages,
                query_params={"from": start, "to": since, "dir": "b", "limit": "100",
                              "filter": _MESSAGES_ONLY})
            chunk = page.get("chunk", [])
            gap.extend(chunk)
            end = page.get("end")
            if not chunk or end is None or end == start:
                break
            start = end
        else:
            log.warning("matrix room %s: more than %d messages missed; the oldest are "
                        "skipped", room_id, MAX_GAP_PAGES * 100)
        gap.reverse()
        return gap

    async def _stored_token(self) -> str | None:
        if self._tokens is None:
            return None
        return await asyncio.to_thread(self._tokens.sync_token, self.account)

    async def _store_token(self, token: str) -> None:
        if self._tokens is None:
            return
        try:
            await asyncio.to_thread(self._tokens.save_sync_token, self.account, token,
                                    datetime.now(UTC))
        except Exception:  # the database away a moment: the next sync stores a newer one
            log.exception("storing the matrix sync token failed")

    def _serves(self, room_id: str) -> bool:
        return not self._rooms or room_id in self._rooms

    async def _is_direct(self, room_id: str) -> bool:
        if room_id not in self._members:
            members = await self.client.get_joined_members(RoomID(room_id))
            self._members[room_id] = len(members)
        return self._members[room_id] == 2

    async def send(self, reply: Reply) -> str:
        content = TextMessageEventContent(msgtype=MessageType.TEXT, body=reply.text)
        if reply.direct_to is not None:
            room = await self._direct_room(reply.direct_to)
        else:
            room = reply.thread.room
            content.set_thread_parent(EventID(reply.thread.root))
        return str(await self.client.send_message(RoomID(room), content))

    async def post(self, room: str, text: str, txn_id: str,
                   thread_root: str | None = None) -> str:
        """Send ``text`` to ``room`` (in ``thread_root``'s thread); ``txn_id`` makes a
        repeated send the same event."""
        content = TextMessageEventContent(msgtype=MessageType.TEXT, body=text)
        if thread_root is not None:
            content.set_thread_parent(EventID(thread_root))
        return str(await self.client.send_message_event(
            RoomID(room), EventType.ROOM_MESSAGE, content, txn_id=txn_id))

    async def _direct_room(self, user: str) -> str:
        if user not in self._dm_rooms:
            room = await self.client.create_room(preset=RoomCreatePreset.TRUSTED_PRIVATE,
                                                 is_direct=True, invitees=[UserID(user)])
            self._dm_rooms[user] = str(room)
            self._members[str(room)] = 2
        return self._dm_rooms[user]
