"""Every ```python block of docs/sdk.md runs, in order, against the real hub, while a
stand-in person answers the tickets the examples wait on."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from tickethub.sdk import Hub

DOC = Path(__file__).parents[2] / "docs" / "sdk.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
# Titles the examples wait on, and what the stand-in person does with them.
ANSWERED = ("Which region should the new cluster run in?", "Review chapter")
APPROVED = ("Deploy v2 to production?",)


def person(url: str, token: str, cursor: int, stop: threading.Event) -> None:
    """Poll the event log after ``cursor``; answer or approve the tickets the examples
    wait on."""
    with Hub(url, token, via="docs") as hub:
        while not stop.is_set():
            for event in hub.events(since=cursor):
                cursor = event.seq
                title = event.data.get("title", "")
                if event.type != "ticket.created":
                    continue
                if title.startswith(ANSWERED):
                    hub.answer(event.ticket_id, "eu-west-1", data={"region": "eu-west-1"})
                elif title.startswith(APPROVED):
                    proposal = hub.get(event.ticket_id).proposal
                    hub.approve(event.ticket_id, "go, but fewer replicas",
                                edited={**proposal, "replicas": 2})
            time.sleep(0.05)


def test_the_python_examples_in_docs_sdk_md_run(hub_process, responder_token, monkeypatch,
                                                capsys) -> None:
    blocks = BLOCK.findall(DOC.read_text())
    assert len(blocks) >= 6
    monkeypatch.setenv("TICKETHUB_URL", hub_process.url)
    monkeypatch.setenv("TICKETHUB_TOKEN", hub_process.admin_token)
    stop = threading.Event()
    with Hub(hub_process.url, responder_token) as probe:
        cursor = int(probe.health()["last_seq"])  # before the first example asks anything
    helper = threading.Thread(target=person,
                              args=(hub_process.url, responder_token, cursor, stop),
                              daemon=True)
    helper.start()
    namespace: dict[str, object] = {"__name__": "docs_sdk"}
    try:
        for number, code in enumerate(blocks, 1):
            try:
                exec(compile(code, f"docs/sdk.md block {number}", "exec"), namespace)
            except Exception as exc:  # name the block that broke
                pytest.fail(f"docs/sdk.md python block {number} failed: {exc!r}\n{code}")
    finally:
        stop.set()
        helper.join(5)
        hub = namespace.get("hub")
        if isinstance(hub, Hub):
            hub.close()
    printed = capsys.readouterr().out
    assert "answered eu-west-1 sdk-alice docs" in printed
    assert "deploying {'service': 'api', 'version': '2.0.0', 'replicas': 2}" in printed
    assert "no answer yet" in printed
    assert "['answered', 'answered', 'answered']" in printed
    assert "404 not_found id" in printed
