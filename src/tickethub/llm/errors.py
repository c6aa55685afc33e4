"""Errors of LLM providers, in the hub's one exception tree."""

from __future__ import annotations

from tickethub.errors import TickethubError


class UpstreamError(TickethubError):
    """The upstream model endpoint failed."""

    status = 502
    code = "upstream_error"
    title = "Upstream error"


class UpstreamUnavailable(UpstreamError):
    """The upstream could not be reached or answered with a server error."""

    code = "upstream_unavailable"
    title = "Upstream unavailable"


class UpstreamAuthFailed(UpstreamError):
    """The upstream refused the hub's own key: a configuration error of the hub, not of
    the caller, so it is not relayed as the caller's 401."""

    code = "upstream_auth_failed"
    title = "Upstream refused the hub's key"


class UpstreamTimeout(UpstreamError):
    """The upstream did not answer in time."""

    status = 504
    code = "upstream_timeout"
    title = "Upstream timed out"


class NoHumanReply(Exception):
    """Control flow, not failure: the person has not replied (yet). The ticket stays;
    wait on it again, or act on ``outcome`` (``None`` while it still waits)."""

    def __init__(self, ticket_id: int, outcome: str | None) -> None:
        super().__init__(f"ticket {ticket_id} has no reply ({outcome or 'still waiting'})")
        self.ticket_id = ticket_id
        self.outcome = outcome
