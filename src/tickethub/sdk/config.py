"""What both clients share before any request: where the hub is, the token, the headers,
and the wait/retry policy."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError, version

from tickethub.sdk.calls import Endpoints
from tickethub.sdk.errors import HubError
from tickethub.sdk.flows import Backoff

try:
    SDK_VERSION = version("tickethub")
except PackageNotFoundError:  # running from a source tree that was never installed
    SDK_VERSION = "dev"

DEFAULT_URL = "http://127.0.0.1:8080"
URL_ENV = "TICKETHUB_URL"
TOKEN_ENV = "TICKETHUB_TOKEN"
#: Seconds each long-poll of ``wait`` asks the hub to hold (the hub's maximum is 60).
DEFAULT_POLL_SECONDS = 50.0


class HubConfig:
    """Connection settings shared by both clients.

    ``url`` and ``token`` default to ``$TICKETHUB_URL`` (else ``http://127.0.0.1:8080``)
    and ``$TICKETHUB_TOKEN``; ``timeout`` is the per-request timeout in seconds (long-polls
    get their own). ``via`` names the channel answers given through this client are
    recorded under (sent as ``X-Tickethub-Via``); ``headers`` are added to every request.
    ``poll_seconds`` is how long each long-poll of ``wait`` asks the hub to hold, and
    ``backoff`` how ``wait`` and ``stream_events`` space their retries while the hub is
    unreachable; ``on_retry(error, delay)``, if given, is called before each such retry
    (to tell a user what is going on). ``transport`` (on the clients) is handed to httpx,
    e.g. for a proxy or a mock.
    """

    def __init__(self, url: str | None = None, token: str | None = None, timeout: float = 30.0,
                 *, via: str | None = None, headers: Mapping[str, str] | None = None,
                 poll_seconds: float = DEFAULT_POLL_SECONDS, backoff: Backoff | None = None,
                 on_retry: Callable[[HubError, float], None] | None = None) -> None:
        self.url = (url or os.environ.get(URL_ENV) or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        self.timeout = timeout
        self.poll_seconds = poll_seconds
        self.backoff = backoff or Backoff()
        self.on_retry = on_retry
        self.headers = {"User-Agent": f"tickethub-sdk/{SDK_VERSION}",
                        "Accept": "application/json"}
        if self.token:
            self.headers["Authorization"] = f"Bearer {self.token}"
        if via:
            self.headers["X-Tickethub-Via"] = via
        self.headers.update(headers or {})
        self._api = Endpoints(self, has_token=bool(self.token))  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self.url!r})"
