"""People on the real Synapse, as a test needs them: log in (registering a second user
through the shared-secret admin API), make a room, write in threads, wait for the bot."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import os
import time
from typing import Any
from urllib.parse import quote

import httpx

HOMESERVER = os.environ.get("MATRIX_HOMESERVER_URL", "")
SHARED_SECRET = os.environ.get("MATRIX_REGISTRATION_SHARED_SECRET", "")
BOT = os.environ.get("MATRIX_BOT_USER", "@bot:localhost")
_txn = itertools.count()


def synapse_running() -> bool:
    if not HOMESERVER:
        return False
    try:
        return httpx.get(HOMESERVER + "/_matrix/client/versions", timeout=5).is_success
    except httpx.HTTPError:
        return False


async def register(localpart: str, password: str) -> None:
    """Register a user with the shared secret (a taken name is fine)."""
    async with httpx.AsyncClient(base_url=HOMESERVER, timeout=30) as http:
        nonce = (await http.get("/_synapse/admin/v1/register")).json()["nonce"]
        mac = hmac.new(SHARED_SECRET.encode(), b"\x00".join(
            [nonce.encode(), localpart.encode(), password.encode(), b"notadmin"]),
            hashlib.sha1).hexdigest()
        r = await http.post("/_synapse/admin/v1/register", json={
            "nonce": nonce, "username": localpart, "password": password, "admin": False,
            "mac": mac})
        assert r.is_success or "taken" in r.text, r.text


class Person:
    def __init__(self, user: str, http: httpx.AsyncClient) -> None:
        self.user, self.http = user, http
        self.seen: set[str] = set()

    @classmethod
    async def login(cls, user: str, password: str) -> Person:
        http = httpx.AsyncClient(base_url=HOMESERVER, timeout=30)
        r = await http.post("/_matrix/client/v3/login", json={
            "type": "m.login.password", "identifier": {"type": "m.id.user", "user": user},
            "password": password})
        r.raise_for_status()
        http.headers["Authorization"] = "Bearer " + r.json()["access_token"]
        return cls(user, http)

    async def close(self) -> None:
        await self.http.aclose()

    async def create_room(self, invite: list[str]) -> str:
        # Synapse limits room creation per user (the recipe's overrides do not cover
        # it): a few test runs in a row get 429 with the wait to honour.
        for _ in range(20):
            r = await self.http.post("/_matrix/client/v3/createRoom", json={
                "preset": "private_chat", "invite": invite, "name": "lunch"})
            if r.status_code != 429:
                break
            await asyncio.sleep(min(r.json().get("retry_after_ms", 1000), 10_000) / 1000)
        r.raise_for_status()
        return str(r.json()["room_id"])

    async def join(self, room: str) -> None:
        (await self.http.post(f"/_matrix/client/v3/join/{quote(room)}", json={})
         ).raise_for_status()

    async def send(self, room: str, body: str, thread: str | None = None,
                   reply_to: str | None = None) -> str:
        content: dict[str, Any] = {"msgtype": "m.text", "body": body}
        if thread:
            content["m.relates_to"] = {
                "rel_type": "m.thread", "event_id": thread,
                "is_falling_back": reply_to is None,
                "m.in_reply_to": {"event_id": reply_to or thread}}
        r = await self.http.put(f"/_matrix/client/v3/rooms/{quote(room)}/send/m.room.message/"
                                f"t{time.time_ns()}{next(_txn)}", json=content)
        r.raise_for_status()
        return str(r.json()["event_id"])

    async def wait_bot(self, room: str, root: str, containing: str,
                       timeout: float = 60.0) -> dict[str, Any]:
        """The bot's next message in thread ``root`` containing ``containing``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = await self.http.get(
                f"/_matrix/client/v1/rooms/{quote(room)}/relations/{quote(root)}/m.thread",
                params={"limit": 100, "dir": "f"})
            r.raise_for_status()
            for event in r.json()["chunk"]:
                body = event.get("content", {}).get("body", "")
                if (event["sender"] == BOT and event["event_id"] not in self.seen
                        and containing in body):
                    self.seen.add(event["event_id"])
                    return dict(event)
            await asyncio.sleep(0.3)
        raise AssertionError(f"the bot never said {containing!r} in thread {root}")


async def wait_top_level(person: Person, room: str, containing: str,
                         timeout: float = 60.0) -> dict[str, Any]:
    """The bot's newest top-level message in ``room`` containing ``containing``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = await person.http.get(f"/_matrix/client/v3/rooms/{quote(room)}/messages",
                                  params={"dir": "b", "limit": 50})
        r.raise_for_status()
        for event in r.json()["chunk"]:
            content = event.get("content", {})
            if (event["sender"] == BOT and containing in content.get("body", "")
                    and "m.relates_to" not in content):
                return dict(event)
        await asyncio.sleep(0.3)
    raise AssertionError(f"the bot never posted {containing!r} in {room}")
