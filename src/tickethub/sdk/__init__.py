"""The tickethub Python SDK: ask people from code, and wait for their answers.

Standalone: it needs only ``httpx`` (no server code is imported).

    from tickethub.sdk import Hub
    hub = Hub()                       # $TICKETHUB_URL and $TICKETHUB_TOKEN
    ticket = hub.ask_and_wait("Ship it?", kind="approval")
    if ticket.approved: ...

See ``docs/sdk.md``.
"""

from tickethub.sdk.assistance import (
    NEXT_ACTIONS,
    InvalidTicketURL,
    TicketLink,
    parse_ticket_url,
    request_assistance,
)
from tickethub.sdk.async_client import AsyncHub
from tickethub.sdk.client import Hub
from tickethub.sdk.errors import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    HubError,
    HubUnavailable,
    NotFoundError,
    PermissionDeniedError,
    ValidationError,
)
from tickethub.sdk.flows import Backoff
from tickethub.sdk.models import Answer, Event, Message, Ticket, TokenInfo, TreeNode

__all__ = [
    "NEXT_ACTIONS",
    "Answer",
    "AsyncHub",
    "AuthenticationError",
    "Backoff",
    "BadRequestError",
    "ConflictError",
    "Event",
    "Hub",
    "HubError",
    "HubUnavailable",
    "InvalidTicketURL",
    "Message",
    "NotFoundError",
    "PermissionDeniedError",
    "Ticket",
    "TicketLink",
    "TokenInfo",
    "TreeNode",
    "ValidationError",
    "parse_ticket_url",
    "request_assistance",
]
