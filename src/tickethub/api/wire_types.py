"""The shared types of every HTTP door's parameters and bodies: ids and cursors the
database can hold, and text it can store (``domain/ids.py``, ``domain/text.py``).

A route declares ``ticket_id: Id`` (path or query alike) or ``title: Text``; pydantic
then refuses anything else with a 422 naming the parameter, and the OpenAPI document
states the same bounds (``minimum``/``maximum``, ``pattern``), so a client generated from
it never sends what the hub would refuse.
"""

from __future__ import annotations

from typing import Annotated

import annotated_types
from pydantic import StringConstraints

from tickethub.domain.ids import MAX_ID
from tickethub.domain.text import NO_NUL_PATTERN

# pydantic parses integers from ASCII digits only ('²' and '٣' are refused), so the
# range is all that needs saying.
Id = Annotated[int, annotated_types.Ge(1), annotated_types.Le(MAX_ID)]
"""A ticket, message, token or webhook id: ``1 .. MAX_ID``."""

Seq = Annotated[int, annotated_types.Ge(0), annotated_types.Le(MAX_ID)]
"""An event sequence number or list cursor: ``0 .. MAX_ID`` (0 = from the start)."""

NoNul = StringConstraints(pattern=NO_NUL_PATTERN)
"""Append to a ``str`` annotation: any text but NUL."""

Text = Annotated[str, NoNul]
"""Free text of any length the route allows otherwise."""
