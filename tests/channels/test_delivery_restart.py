"""A restart neither loses nor repeats a delivery: the queue lives in the database."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tickethub.channels.base import Channel, DeliveryFailed
from tickethub.channels.worker import DeliveryWorker
from tickethub.domain.actors import Actor, Role
from tickethub.domain.events import Event
from tickethub.domain.status import Kind
from tickethub.domain.tickets import TicketDraft
from tickethub.server.runtime import HubRuntime
from tickethub.services.ports import Delivery
from tickethub.settings import Settings

AGENT = Actor("bot", Role.AGENT)


class Outbox(Channel):
    """Records what it delivers; refuses everything while ``down``."""

    name = "outbox"

    def __init__(self, down: bool) -> None:
        self.down = down
        self.delivered: list[str] = []

    def targets(self, event: Event) -> Sequence[str]:
        return ["x"] if event.type.value == "ticket.created" else []

    async def deliver(self, delivery: Delivery, event: Event) -> None:
        if self.down:
            raise DeliveryFailed("receiver down", retry_after=0)
        self.delivered.append(delivery.idempotency_key)


def _worker(hub: HubRuntime, channel: Channel) -> DeliveryWorker:
    return DeliveryWorker(channel, hub.deliveries, hub.bus, poll_seconds=0.01)


async def test_pending_deliveries_survive_a_restart_and_are_sent_once(
        tmp_path: Path, database_url: str):
    settings = Settings(data_dir=tmp_path, database_url=database_url,
                        delivery_backoff_seconds=0.001, delivery_backoff_max_seconds=0.001)
    first = HubRuntime(settings)
    down = Outbox(down=True)
    await _worker(first, down).run_once()  # the channel starts at the end of the log
    for i in range(3):
        first.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title=f"q{i}"))
    assert await _worker(first, down).run_once() == 0
    pending = first.deliveries.list(channel="outbox")
    assert [(d.status, d.attempts) for d in pending] == [("pending", 1)] * 3
    first.close()

    second = HubRuntime(settings)
    up = Outbox(down=False)
    worker = _worker(second, up)
    assert await worker.run_once() == 3
    assert await worker.run_once() == 0
    assert sorted(up.delivered) == sorted(d.idempotency_key for d in pending)
    assert {d.status for d in second.deliveries.list(channel="outbox")} == {"delivered"}
    second.close()


async def test_a_delivery_that_keeps_failing_ends_dead(tmp_path: Path):
    settings = Settings(data_dir=tmp_path, delivery_max_attempts=3,
                        delivery_backoff_seconds=0.001, delivery_backoff_max_seconds=0.001)
    hub = HubRuntime(settings)
    down = Outbox(down=True)
    worker = _worker(hub, down)
    await worker.run_once()
    hub.tickets.ask(AGENT, TicketDraft(kind=Kind.QUESTION, title="q"))
    for _ in range(5):
        await worker.run_once()
    [delivery] = hub.deliveries.list(channel="outbox")
    assert (delivery.status, delivery.attempts) == ("dead", 3)
    assert delivery.last_error == "receiver down"
    hub.close()
