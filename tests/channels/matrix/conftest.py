"""The people of a Matrix test: alice (@human), bob (@human2, registered on demand) and
a fresh room with both and the bot."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.channels.matrix.people import BOT, Person, register, synapse_running
from tests.conftest import require_server

HUMAN = "@human:localhost"
HUMAN_PASSWORD = "human-password"
SECOND = "@human2:localhost"


@pytest.fixture
async def people() -> AsyncIterator[tuple[Person, Person, str]]:
    require_server("Matrix Synapse", synapse_running())
    await register("human2", "human2-password")
    alice = await Person.login(HUMAN, HUMAN_PASSWORD)
    bob = await Person.login(SECOND, "human2-password")
    room = await alice.create_room(invite=[BOT, SECOND])
    await bob.join(room)
    yield alice, bob, room
    await alice.close()
    await bob.close()
