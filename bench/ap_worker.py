"""An agent worker that replies to every Agent Protocol step at once, for
``bench.ap_throughput`` (it stands in for the reference's trivial step handler).

    python -m bench.ap_worker HUB_URL RESPONDER_TOKEN
"""

from __future__ import annotations

import asyncio
import sys

from tickethub.sdk import AsyncHub
from tickethub.sdk.tasks import TaskStep, serve_tasks


async def reply(step: TaskStep) -> str:
    return f"done: {step.input}"


async def main(url: str, token: str) -> None:
    async with AsyncHub(url, token, timeout=60) as hub:
        await serve_tasks(reply, hub, concurrency=64)


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main(sys.argv[1], sys.argv[2]))
