"""request_assistance: the ai-ticket (issue 12) command, its success and error shapes."""

from __future__ import annotations

import json

import pytest

from tickethub.sdk import NEXT_ACTIONS, parse_ticket_url, request_assistance

THOUGHT_KEYS = {"text", "reasoning", "plan", "criticism", "speak"}


@pytest.mark.parametrize(("url", "kind", "number"), [
    ("http://127.0.0.1:8080/api/v1/tickets/12", "tickethub", 12),
    ("https://hub.example.com/api/v1/tickets/12/", "tickethub", 12),
    ("https://example.com/hub/t/5", "tickethub", 5),
    ("https://github.com/jmikedupont2/ai-ticket/issues/12", "github_issue", 12),
    ("https://github.com/o/r/issues/3#issuecomment-1737000472", "github_comment",
     1737000472),
    ("https://api.github.com/repos/jmikedupont2/ai-ticket/issues/12", "github_issue", 12),
    ("https://api.github.com/repos/jmikedupont2/ai-ticket/issues/comments/1737000472",
     "github_comment", 1737000472),
])
def test_a_ticket_url_is_accepted(url: str, kind: str, number: int) -> None:
    link = parse_ticket_url(url)
    assert (link.kind, link.id) == (kind, number)
    response = request_assistance(url, "poll_url")
    assert set(response) == {"thoughts", "command"}
    assert set(response["thoughts"]) == THOUGHT_KEYS
    assert all(isinstance(v, str) and v for v in response["thoughts"].values())
    assert response["command"] == {"name": "request_assistance",
                                   "args": {"ticket_url": url, "next_action": "poll_url"}}
    json.dumps(response)  # an agent gets it as JSON


def test_our_tickets_are_polled_through_the_long_poll_endpoint() -> None:
    link = parse_ticket_url("https://hub.example.com/base/t/7")
    assert link.poll_url == "https://hub.example.com/base/api/v1/tickets/7/wait"
    plan = request_assistance("https://hub.example.com/base/t/7")["thoughts"]["plan"]
    assert link.poll_url in plan


@pytest.mark.parametrize("action", sorted(NEXT_ACTIONS))
def test_every_known_action_is_accepted(action: str) -> None:
    response = request_assistance("https://github.com/o/r/issues/1", action)
    assert response["command"]["args"]["next_action"] == action
    assert action in response["thoughts"]["speak"]


@pytest.mark.parametrize("url", [
    "https://github.com/o/r",                            # a repository, not an issue
    "https://github.com/o/r/issues/abc",
    "https://github.com/o/r/issues/comments/5",          # web URLs have no such path
    "https://api.github.com/repos/o/r/pulls/3",
    "https://example.com/api/v1/tickets/",               # no id
    "https://example.com/api/v1/tickets/12/messages",
    "ftp://example.com/t/1",
    "not a url",
    "",
    None,
    42,
])
def test_a_bad_url_gets_the_error_shape(url: object) -> None:
    response = request_assistance(url, "poll_url")
    assert set(response) == {"error", "command"}
    assert response["error"]["code"] == "invalid_ticket_url"
    assert response["error"]["field"] == "ticket_url"
    assert response["error"]["message"]
    assert response["command"] == {"name": "request_assistance",
                                   "args": {"ticket_url": url, "next_action": "poll_url"}}


@pytest.mark.parametrize("action", ["poll", "POLL_URL", "", None, 3])
def test_an_unknown_action_gets_the_error_shape(action: object) -> None:
    response = request_assistance("https://github.com/o/r/issues/1", action)
    assert set(response) == {"error", "command"}
    assert response["error"]["code"] == "unknown_next_action"
    assert response["error"]["field"] == "next_action"
    assert "poll_url" in response["error"]["message"]
    assert response["command"]["args"]["next_action"] == action


def test_the_url_is_checked_before_the_action() -> None:
    response = request_assistance("nope", "nope")
    assert response["error"]["field"] == "ticket_url"
