"""Serving the hub with uvicorn."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sys
from collections.abc import Callable

import uvicorn
from fastapi import FastAPI

from tickethub.api import doors
from tickethub.api.agent_protocol.context import anonymous_allowed
from tickethub.api.app import create_app
from tickethub.ops import collector, logs
from tickethub.server import admin_token, served_url
from tickethub.server.runtime import SHUTDOWN_GRACE_SECONDS, HubRuntime
from tickethub.settings import Settings


def _http_protocol() -> type[asyncio.Protocol] | str:
    """uvicorn's httptools protocol writing each response in one piece
    (``server/http_protocol.py``); uvicorn's own choice when httptools is missing."""
    try:
        from tickethub.server.http_protocol import HubHttpProtocol
    except ImportError:
        return "auto"
    return HubHttpProtocol


class HubServer(uvicorn.Server):
    """uvicorn's server, telling the hub's waiters to finish as soon as shutdown begins:
    uvicorn waits for open connections before the app's lifespan ends, and a long-poll
    or an SSE stream would otherwise hold it open for as long as its client stays."""

    def __init__(self, config: uvicorn.Config, hub: HubRuntime) -> None:
        super().__init__(config)
        self._hub = hub

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._hub.bus.close()
        await super().shutdown(sockets)
        # A second Ctrl-C makes uvicorn skip the app's shutdown; its lifespan task is then
        # cancelled mid-wait and logged as a traceback. End it properly, within bounds.
        ended = getattr(self.lifespan, "shutdown_event", None)
        if self.force_exit and ended is not None and not ended.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(SHUTDOWN_GRACE_SECONDS):
                    await self.lifespan.shutdown()


def build_app(settings: Settings) -> tuple[HubRuntime, FastAPI]:
    """The hub and its app: the components (``server/components.py``) are installed by
    the runtime, the doors (``api/doors.py``, built-ins and plugins) mounted here."""
    hub = HubRuntime(settings)
    return hub, create_app(hub, doors.registered())


def serve(settings: Settings, *, announce: bool = True, sock: socket.socket | None = None,
          on_ready: Callable[[], None] | None = None) -> None:
    """Run the hub in the foreground until interrupted. ``sock``: serve on this listening
    socket instead of binding ``host:port`` (one of ``serve --workers N``, which shares
    it); ``on_ready`` is called once the hub accepts connections."""
    logs.configure(settings.log_format, settings.log_level)  # text or JSON lines (ops/)
    collector.watch_pauses()  # the collector's stalls on /metrics (ops/collector.py)
    hub, app = build_app(settings)
    config = uvicorn.Config(app, host=settings.host, port=settings.port, http=_http_protocol(),
                            log_level=settings.log_level.lower(), access_log=False,
                            log_config=None,  # uvicorn's lines go through ops.logs too
                            timeout_keep_alive=75, backlog=8192,
                            # a backstop: requests not done by then are cancelled
                            timeout_graceful_shutdown=int(SHUTDOWN_GRACE_SECONDS),
                            proxy_headers=settings.forwarded_allow_ips is not None,
                            forwarded_allow_ips=settings.forwarded_allow_ips)
    server = HubServer(config, hub)
    original_startup = server.startup

    async def startup(sockets: object = None) -> None:
        await original_startup(sockets=sockets)  # type: ignore[arg-type]
        if server.started:
            # Start-up's objects live as long as the process: out of every later scan.
            collector.settle_heap()
            served_url.save(settings.data_dir, hub.public_url())
            if on_ready is not None:
                on_ready()
            if announce and settings.log_format == "text":
                _announce(hub)
            elif announce:  # JSON logs go to a shipper: one line, and never a token
                logging.getLogger("tickethub").info("tickethub is running at %s",
                                                    hub.public_url())

    server.startup = startup  # type: ignore[method-assign]
    try:
        server.run(sockets=None if sock is None else [sock])
    except KeyboardInterrupt:
        pass  # uvicorn re-raises the Ctrl-C it already handled: the hub stopped cleanly
    finally:
        hub.close()


def _announce(hub: HubRuntime) -> None:
    url = hub.public_url()
    lines = [
        "",
        f"tickethub is running at {url}",
        f"  API docs:   {url}/docs",
        f"  health:     {url}/healthz",
        f"  database:   {hub.engine.url.render_as_string(hide_password=True)}",
    ]
    saved = admin_token.token_path(hub.settings.data_dir)
    if hub.generated_admin_token:
        lines += [
            "",
            f"An admin token was generated (also saved to {saved}, mode 600):",
            f"  export TICKETHUB_URL={url}",
            f"  export TICKETHUB_TOKEN={hub.generated_admin_token}",
        ]
    elif saved.exists():
        lines += ["", f"  export TICKETHUB_URL={url}",
                  f"  export TICKETHUB_TOKEN=$(cat {saved})"]
    else:
        lines += ["", f"  export TICKETHUB_URL={url}",
                  "  (use your admin token; TICKETHUB_ADMIN_TOKEN adds one at any start)"]
    if anonymous_allowed(hub.settings):
        lines += ["", f"  Agent Protocol: clients without a token are all one agent "
                      f"({hub.settings.ap_anonymous_agent!r}) and share their tasks;",
                  "  give each its own token to keep them apart (TICKETHUB_AP_ANONYMOUS=false "
                  "turns this off)."]
    print("\n".join(lines) + "\n", file=sys.stderr, flush=True)
