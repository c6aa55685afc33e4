"""Building the engine for a hub: the handlers named by ``chat_plugins`` (each
``module:function`` returning a list of handlers) over the hub's services."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from tickethub.conversations.engine import ConversationEngine
from tickethub.conversations.handlers import Handler
from tickethub.services.chat_state import ChatState

if TYPE_CHECKING:
    from tickethub.services.host import Host


def load_handlers(specs: list[str]) -> list[Handler]:
    """Import every ``module:function`` and collect the handlers it returns."""
    handlers: list[Handler] = []
    for spec in specs:
        module, sep, function = spec.partition(":")
        if not sep or not module or not function:
            raise ValueError(f"chat_plugins entry {spec!r} must look like module:function")
        handlers.extend(getattr(importlib.import_module(module), function)())
    return handlers


def bot_names(user: str) -> tuple[str, str]:
    """The names the bot answers to (``@bot:example.org`` and ``@bot``), from
    ``matrix_user``; webhook transports rewrite a platform mention of the bot to
    ``@`` + the short one."""
    bot = user.lstrip("@")
    return bot, bot.split(":", 1)[0]


def build_engine(runtime: Host, state: ChatState) -> ConversationEngine:
    """The engine the chat transports share; ``state`` is the hub's chat store (built
    by ``server/``)."""
    settings = runtime.settings
    return ConversationEngine(state, runtime.tickets, runtime.clock,
                              load_handlers(settings.chat_plugins),
                              bot_names=bot_names(settings.matrix_user),
                              responders=frozenset(settings.chat_responders))
