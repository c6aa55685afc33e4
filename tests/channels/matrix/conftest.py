"""The people of a Matrix test: alice (@human), bob (@human2, registered on demand) and
a fresh room with both and the bot."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.channels.matrix.kit import room_with_people
from tests.channels.matrix.people import Person


@pytest.fixture
async def people() -> AsyncIterator[tuple[Person, Person, str]]:
    async with room_with_people() as found:
        yield found
