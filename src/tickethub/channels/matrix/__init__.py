"""The Matrix chat transport (docs/chat.md): the bot serves conversations in room
threads. :func:`install` wires it into a running hub; :data:`component` is the
transport as a hub component, on when ``matrix_homeserver`` is set."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tickethub.channels.matrix.tickets import MatrixTicketChannel
from tickethub.channels.matrix.transport import MatrixTransport, parse_message
from tickethub.services.host import Component, Host

if TYPE_CHECKING:
    from tickethub.services.chat_state import ChatState

__all__ = ["MatrixTicketChannel", "MatrixTransport", "component", "install", "parse_message"]


def install(runtime: Host, state: ChatState) -> None:
    """With ``matrix_homeserver`` set: log in as ``matrix_user`` while the hub runs and
    serve the conversation handlers of ``chat_plugins``; ``state``: where
    conversations are kept. Call before ``running()``."""
    from tickethub.conversations.loading import build_engine
    from tickethub.conversations.pump import run_conversations

    settings = runtime.settings
    assert settings.matrix_homeserver is not None
    password = settings.matrix_password
    token = settings.matrix_token
    engine = build_engine(runtime, state)
    transport = MatrixTransport(
        settings.matrix_homeserver, settings.matrix_user,
        password=password.get_secret_value() if password else None,
        token=token.get_secret_value() if token else None,
        rooms=tuple(settings.matrix_rooms), tokens=state)
    # Tickets with the ref matrix_room are posted there; answers come back through the
    # engine (conversations/ticket_threads.py).
    runtime.add_channel(MatrixTicketChannel(runtime.tickets, transport))

    async def serve() -> None:
        try:
            await run_conversations(engine, transport,
                                    expire_every=settings.chat_timeout_check_seconds)
        finally:
            await transport.close()

    runtime.add_loop(serve)


def _install(host: Host) -> None:
    from tickethub.store.chat_store import SqlChatState

    install(host, SqlChatState(host.store))


component = Component("matrix", lambda settings: bool(settings.matrix_homeserver), _install)
