"""Live updates over SSE against a real server (uvicorn subprocess), read with httpx."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import httpx

from tests.web.live_server import PASSWORD, live_hub
from tickethub.domain.actors import Role


def signed_in(url: str, name: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=10)
    form = client.get("/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)  # type: ignore[union-attr]
    response = client.post("/login", data={"csrf": csrf, "username": name,
                                           "password": PASSWORD, "next": "/"})
    assert response.status_code == 303
    return client


def read_events(response: httpx.Response, wanted: int, out: list[tuple[str, dict]]) -> None:
    name = None
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: ") and name:
            out.append((name, json.loads(line[6:])))
            if len(out) >= wanted:
                return


def test_inbox_and_ticket_streams_push_changes(tmp_path: Path) -> None:
    with live_hub(tmp_path, {"pat": Role.RESPONDER}) as hub:
        browser = signed_in(hub.url, "pat")
        refused = httpx.get(hub.url + "/inbox/stream", timeout=5)
        assert refused.status_code == 401  # streams need a session too
        agent = hub.api(hub.agent_token)
        first = agent.post("/api/v1/tickets", json={"kind": "question", "title": "Old"}).json()
        got: list[tuple[str, dict]] = []
        ticket_events: list[tuple[str, dict]] = []
        with browser.stream("GET", "/inbox/stream") as inbox, \
                browser.stream("GET", f"/t/{first['id']}/stream") as page:
            assert inbox.headers["content-type"].startswith("text/event-stream")
            readers = [threading.Thread(target=read_events, args=(inbox, 4, got)),
                       threading.Thread(target=read_events, args=(page, 1, ticket_events))]
            for r in readers:
                r.start()
            new = agent.post("/api/v1/tickets", json={"kind": "question",
                                                      "title": "New <b>one</b>"}).json()
            hub.api().post(f"/api/v1/tickets/{first['id']}/answer", json={"text": "sure"})
            # pat's own comment is no news to pat; the agent's message is.
            csrf = re.search(r'name="csrf" value="([^"]+)"', browser.get("/triage").text)
            assert csrf
            mine = browser.post(f"/triage/t/{new['id']}/comment",
                                data={"csrf": csrf.group(1), "body": "On it", "back": ""})
            assert mine.status_code == 303, mine.text
            agent.post(f"/api/v1/tickets/{first['id']}/messages", json={"body": "and?"})
            for r in readers:
                r.join(15)
        assert got[0][0] == "row" and got[0][1]["id"] == new["id"]
        assert "New &lt;b&gt;one&lt;/b&gt;" in got[0][1]["html"]
        assert got[1] == ("status", {"id": first["id"], "status": "answered", "waiting": False})
        # Someone else acted: the triage page shows these rows unread again (triage.js).
        assert got[2:] == [("activity", {"id": first["id"]}), ("activity", {"id": first["id"]})]
        name, change = ticket_events[0]
        assert name == "change" and change["waiting"] is False
        assert change["resolved_by"] == "answered by admin via api"
        assert "sure" in change["html"]
