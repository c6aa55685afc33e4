"""The loop checkpointing an SQLite hub's write-ahead log in the background
(``store/checkpoints.py`` says why)."""

from __future__ import annotations

import asyncio
import logging

from tickethub.services.backoff import Backoff
from tickethub.store.checkpoints import WalCheckpoints

log = logging.getLogger(__name__)

EVERY_SECONDS = 1.0


async def checkpoint_loop(checkpoints: WalCheckpoints, every_seconds: float = EVERY_SECONDS
                          ) -> None:
    """Checkpoint every ``every_seconds`` until cancelled, with automatic checkpoints
    off meanwhile; a failed round (a full disk) is logged and retried later."""
    backoff = Backoff(log, "WAL checkpoint")
    with checkpoints.in_background():
        while True:
            await asyncio.sleep(every_seconds)
            try:
                await asyncio.to_thread(checkpoints.checkpoint)
                backoff.succeeded()
            except Exception as exc:
                await asyncio.sleep(backoff.failed(exc))
