"""Webhook chat transports (docs/chat.md): Slack, Mattermost and Telegram, with the platform calling
``POST /hooks/<name>`` and replies sent through its API. :func:`install` wires the
configured ones into a running hub; every one feeds the same engine and routing as
Matrix. :data:`component`: the transports as a hub component, on when any is
configured."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from tickethub.channels.chat_hooks.base import Actors, WebhookTransport
from tickethub.services.host import Component, Host

if TYPE_CHECKING:
    from tickethub.services.chat_state import ChatState
    from tickethub.settings import Settings

__all__ = ["Actors", "WebhookTransport", "component", "install"]


def install(runtime: Host, state: ChatState) -> None:
    """Serve each configured webhook transport (its secret set) while the hub runs;
    provided as ``chat_hooks`` (name → transport) for the hook routes. Call before
    ``running()``."""
    from tickethub.channels.chat_hooks.mattermost import MattermostTransport
    from tickethub.channels.chat_hooks.slack import SlackTransport
    from tickethub.channels.chat_hooks.telegram import TelegramTransport
    from tickethub.conversations.loading import build_engine
    from tickethub.conversations.pump import run_accepted

    settings = runtime.settings
    actors = Actors(settings.chat_actors)
    engine = build_engine(runtime, state)
    transports: list[WebhookTransport] = []
    if settings.slack_signing_secret is not None:
        token = settings.slack_bot_token
        transports.append(SlackTransport(actors, runtime.http, settings.slack_api_url,
                                         token.get_secret_value() if token else ""))
    if settings.mattermost_tokens:
        token = settings.mattermost_bot_token
        transports.append(MattermostTransport(
            actors, runtime.http, settings.mattermost_url or "",
            token.get_secret_value() if token else ""))
    if settings.telegram_webhook_secret is not None:
        token = settings.telegram_bot_token
        transports.append(TelegramTransport(actors, runtime.http, settings.telegram_api_url,
                                            token.get_secret_value() if token else ""))
    runtime.provide("chat_hooks", {t.name: t for t in transports})
    bus = runtime.bus
    for transport in transports:
        transport.bind(engine.accept, functools.partial(bus.broadcast, TOPIC))

        async def serve(transport: WebhookTransport = transport) -> None:
            every = settings.chat_timeout_check_seconds
            await run_accepted(engine, transport, expire_every=every, rescan_every=every)

        runtime.add_loop(serve)  # in the leading process only

    def announced(message: str) -> None:
        for transport in transports:
            transport.announced(message)

    bus.subscribe(TOPIC, announced)


TOPIC = "chat_hooks"  # the bus topic: a message stored by another process (base.py)


def _enabled(settings: Settings) -> bool:
    """Whether any chat webhook (Slack, Mattermost, Telegram) is configured."""
    return (settings.slack_signing_secret is not None or bool(settings.mattermost_tokens)
            or settings.telegram_webhook_secret is not None)


def _install(host: Host) -> None:
    from tickethub.store.chat_store import SqlChatState

    install(host, SqlChatState(host.store))


component = Component("chat_hooks", _enabled, _install)
