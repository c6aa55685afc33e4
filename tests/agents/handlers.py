"""Step handlers for the in-hub Agent Protocol worker tests; ``ap_worker`` names them as
``tests.agents.handlers:<name>``. ``handle`` picks its behaviour by the step's input."""

from __future__ import annotations

import asyncio

from tickethub.agents.task_step import HostedTaskStep
from tickethub.sdk.tasks import Reply

SLOW_SECONDS = 0.8
HOLD_SECONDS = 4.0
OVERLAP_SECONDS = 0.3

# Handlers of the "overlap" input running right now, and the most seen at once.
running = 0
peak = 0

not_callable = 42


async def handle(step: HostedTaskStep) -> str | Reply | None:
    """The test worker: ``finish`` ends the task, ``silent`` and ``boom`` leave the step
    to a person, ``slow`` outlasts the step hold, ``hold`` outlasts a hub's start,
    ``attach`` stores a file, ``ask`` asks a person first, ``overlap`` counts how many
    run at once; anything else is echoed."""
    if step.input == "finish":
        return Reply("all done", data={"score": 3, "tags": ["a", "b"]}, last=True)
    if step.input == "silent":
        return None
    if step.input == "boom":
        raise RuntimeError("handler bug")
    if step.input == "slow":
        await asyncio.sleep(SLOW_SECONDS)
        return "slow done"
    if step.input == "hold":  # running long enough for a second hub to start meanwhile
        await asyncio.sleep(HOLD_SECONDS)
        return "held"
    if step.input == "attach":
        artifact = await step.attach("report.txt", b"the report", relative_path="out")
        return f"attached {artifact['artifact_id']}"
    if step.input == "ask":
        answered = await step.ask("Which color?", "for the painting", timeout=30)
        color = answered.answer.text if answered.answer else None
        return f"color is {color} ({answered.status.value})"
    if step.input == "ask with schema":  # the AP client's own schema for a person's answer
        extra = step.additional_input or {}
        answered = await step.ask("Pick one", response_schema=extra.get("schema"), timeout=30)
        return f"picked {answered.answer.data if answered.answer else None}"
    if step.input == "overlap":
        return await _overlap()
    return (f"echo: {step.input} (task: {step.task_input}, extra: {step.additional_input}, "
            f"task extra: {step.task_additional_input})")


async def _overlap() -> str:
    global running, peak
    running += 1
    peak = max(peak, running)
    try:
        await asyncio.sleep(OVERLAP_SECONDS)
    finally:
        running -= 1
    return "overlapped"
