"""The reference Agent Protocol server for ``bench.ap_throughput``: PyPI
``agent-protocol`` 1.0.2 (in-memory) on Hypercorn, with trivial handlers.

Runs inside the reference's own venv (it needs pydantic 1-era packages), never imported
by tickethub:  python ap_reference_server.py PORT

The task handler creates the task's first step; the step handler answers at once and
creates the next step, since 1.0.2 executes only steps that exist in ``created``."""

import asyncio
import sys

from agent_protocol.agent import app, base_router
from hypercorn.asyncio import serve
from hypercorn.config import Config

from agent_protocol import Agent, Step, Task


async def task_handler(task: Task) -> None:
    await Agent.db.create_step(task.task_id, input=task.input)


async def step_handler(step: Step) -> Step:
    await Agent.db.create_step(step.task_id, input="next")
    step.output = f"done: {step.input}"
    return step


def main(port: int) -> None:
    Agent.setup_agent(task_handler, step_handler)
    app.include_router(base_router)
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.errorlog = "-"
    config.loglevel = "WARNING"
    asyncio.run(serve(app, config))


if __name__ == "__main__":
    main(int(sys.argv[1]))
