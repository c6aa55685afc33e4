"""Serving the hub with uvicorn."""

from __future__ import annotations

import logging
import sys

import uvicorn

from tickethub.api.agent_protocol.context import anonymous_allowed
from tickethub.api.app import create_app
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings


def build_app(settings: Settings) -> tuple[HubRuntime, object]:
    hub = HubRuntime(settings)
    return hub, create_app(hub)


def serve(settings: Settings, *, announce: bool = True) -> None:
    """Run the hub in the foreground until interrupted."""
    logging.basicConfig(level=settings.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    hub, app = build_app(settings)
    config = uvicorn.Config(app, host=settings.host, port=settings.port,
                            log_level=settings.log_level.lower(), access_log=False,
                            timeout_keep_alive=75, backlog=8192,
                            proxy_headers=settings.forwarded_allow_ips is not None,
                            forwarded_allow_ips=settings.forwarded_allow_ips)
    server = uvicorn.Server(config)
    if announce:
        original_startup = server.startup

        async def startup(sockets: object = None) -> None:
            await original_startup(sockets=sockets)  # type: ignore[arg-type]
            _announce(hub)

        server.startup = startup  # type: ignore[method-assign]
    server.run()
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
    if hub.generated_admin_token:
        lines += [
            "",
            "An admin token was generated. It is shown only this once; keep it safe:",
            f"  export TICKETHUB_URL={url}",
            f"  export TICKETHUB_TOKEN={hub.generated_admin_token}",
        ]
    else:
        lines += ["", f"  export TICKETHUB_URL={url}",
                  "  (use the admin token printed at first start, or TICKETHUB_ADMIN_TOKEN)"]
    if anonymous_allowed(hub.settings):
        lines += ["", f"  Agent Protocol: clients without a token are all one agent "
                      f"({hub.settings.ap_anonymous_agent!r}) and share their tasks;",
                  "  give each its own token to keep them apart (TICKETHUB_AP_ANONYMOUS=false "
                  "turns this off)."]
    print("\n".join(lines) + "\n", file=sys.stderr, flush=True)
