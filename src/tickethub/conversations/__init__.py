"""Thread-bound multi-step conversations for chat (docs/chat.md).

A plugin registers handlers (``handlers.py``: triggers, ``start``/``advance``) or forms
(``forms.py``); the engine (``engine.py``) routes every chat message by one written
order (``routing.py``), keeps each conversation's state with a ticket in the hub's
database, handles one thread's messages in order across processes, and ends
conversations whose timeout passed, also across restarts. Transports (``channels/``)
turn platform events into :class:`ChatMessage` and send the :class:`Reply` values back.
"""

from tickethub.conversations.engine import ConversationEngine
from tickethub.conversations.forms import Choice, Confirm, Field, Form
from tickethub.conversations.handlers import Handler, Step, Trigger, Turn, command, event, pattern
from tickethub.conversations.model import ChatMessage, Outcome, Reply, ThreadRef

__all__ = [
    "ChatMessage", "Choice", "Confirm", "ConversationEngine", "Field", "Form", "Handler",
    "Outcome", "Reply", "Step", "ThreadRef", "Trigger", "Turn", "command", "event",
    "pattern",
]
