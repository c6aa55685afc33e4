"""The delivery worker: one loop per channel, driven by the outbox.

It wakes on new events (or every ``poll_seconds``), enqueues deliveries, sends the due
ones and records the outcome, so a restart neither loses nor repeats a delivery.
"""

from __future__ import annotations

import asyncio
import logging

from tickethub.bus.memory import InProcessBus
from tickethub.channels.base import Channel, DeliveryFailed
from tickethub.services.backoff import Backoff
from tickethub.services.deliveries import DeliveryService

log = logging.getLogger(__name__)

ROUND_COALESCE_SECONDS = 0.05


class DeliveryWorker:
    def __init__(self, channel: Channel, deliveries: DeliveryService, bus: InProcessBus,
                 poll_seconds: float) -> None:
        self.channel = channel
        self._deliveries = deliveries
        self._bus = bus
        self._poll = poll_seconds

    async def run(self) -> None:
        backoff = Backoff(log, f"delivery round for {self.channel.name}")
        with self._bus.log_signal() as signal:
            while True:
                try:
                    await self.run_once()
                    backoff.succeeded()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # keep the loop alive; a later round retries
                    await asyncio.sleep(backoff.failed(exc))
                    continue
                await signal.wait(self._poll)
                # Under load every event would start a round; a short pause lets one
                # round take a whole burst of events instead.
                await asyncio.sleep(ROUND_COALESCE_SECONDS)

    async def run_once(self) -> int:
        """One round: enqueue new events, deliver what is due. Returns deliveries sent."""
        await asyncio.to_thread(self.channel.refresh)
        if self.channel.idle and self._deliveries.skip_to(self.channel.name,
                                                          self._bus.last_seq):
            return 0
        await asyncio.to_thread(
            self._deliveries.enqueue_new, self.channel.name, self.channel.targets
        )
        sent = 0
        for delivery, event in await asyncio.to_thread(self._deliveries.due, self.channel.name):
            try:
                await self.channel.deliver(delivery, event)
            except DeliveryFailed as exc:
                retried = await asyncio.to_thread(
                    self._deliveries.failed, delivery, str(exc), exc.retry_after
                )
                log.warning("delivery %s failed (%s)%s", delivery.idempotency_key, exc,
                            "; will retry" if retried else "; giving up")
                continue
            except Exception as exc:
                await asyncio.to_thread(self._deliveries.failed, delivery, repr(exc))
                log.exception("delivery %s crashed", delivery.idempotency_key)
                continue
            await asyncio.to_thread(self._deliveries.succeeded, delivery)
            sent += 1
        return sent
