"""Agent workers for the Agent Protocol door: take AP tasks from the hub and reply to
their steps.

    from tickethub.sdk import AsyncHub
    from tickethub.sdk.tasks import Reply, TaskStep, serve_tasks

    async def handle(step: TaskStep) -> str | Reply | None:
        if step.input == "deploy":
            ok = await step.ask("Deploy to production?", kind="approval")
            return Reply("deployed" if ok.approved else "not deployed", last=True)
        await step.attach("output.txt", b"Washington")
        return f"done: {step.input}"

    async with AsyncHub(token=RESPONDER_TOKEN) as hub:
        await serve_tasks(handle, hub)

An AP client's step is a message on the task's ticket; the worker's reply is the answer
to it, so the worker needs a token that may steer (the ``responder`` role): its replies
are then what the client gets as the step's output. A handler returns

* a ``str``: a reply; the task goes on (the step's ``is_last`` stays false);
* a :class:`Reply`: ``last=True`` answers the ticket, which finishes the task
  (``is_last``), and ``data`` lands in the step's ``additional_output``;
* ``None``: no reply (a person can still answer on the ticket).

A handler that raises gets no reply either (logged); the step waits for a person.
At start the worker picks up steps that were left waiting, then follows the hub's event
stream; each step is handled once per worker, at most ``concurrency`` at a time. Run one
worker per hub: two workers would both reply. A step that a person answered while the
handler ran still gets the handler's reply, as a later message on the ticket.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from tickethub.sdk.async_client import AsyncHub
from tickethub.sdk.models import Ticket

log = logging.getLogger(__name__)

AP = "/ap/v1/agent/tasks"
AP_CHANNEL = "agent-protocol"
_WAITING = ("open", "in_progress", "deferred")


@dataclass(frozen=True)
class Reply:
    """What a handler answers a step with. ``last`` finishes the task."""

    text: str | None = None
    data: Any = None
    last: bool = False


@dataclass
class TaskStep:
    """One step of an Agent Protocol task, as a worker handles it."""

    task_id: str
    step_id: str
    ticket_id: int
    input: str | None
    additional_input: dict[str, Any] | None
    task_input: str | None
    task_additional_input: dict[str, Any] | None
    hub: AsyncHub = field(repr=False)
    _http: httpx.AsyncClient = field(repr=False)

    async def ask(self, title: str, body: str = "", kind: str = "question", *,
                  timeout: float | None = None, **fields: Any) -> Ticket:
        """Ask people a child question of this task's ticket and wait for the answer."""
        return await self.hub.ask_and_wait(title, body, kind, timeout=timeout,
                                           parent_id=self.ticket_id, **fields)

    async def attach(self, file_name: str, content: bytes,
                     relative_path: str | None = None) -> dict[str, Any]:
        """Upload a file as the agent's artifact; it shows in this step once replied."""
        data = {"relative_path": relative_path} if relative_path else None
        response = await self._http.post(f"{AP}/{self.task_id}/artifacts", data=data,
                                         files={"file": (file_name, content)})
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result


Handler = Callable[[TaskStep], Awaitable["str | Reply | None"]]


class _Worker:
    def __init__(self, handler: Handler, hub: AsyncHub, concurrency: int) -> None:
        self.handler = handler
        self.hub = hub
        self.http = httpx.AsyncClient(base_url=hub.url, headers=hub.headers,
                                      timeout=hub.timeout)
        self.slots = asyncio.Semaphore(concurrency)
        self.seen: set[str] = set()
        self.tasks: dict[str, dict[str, Any]] = {}
        self.running: set[asyncio.Task[None]] = set()

    def take(self, task_id: str, step_id: str, ticket_id: int | None,
             step: dict[str, Any] | None = None) -> None:
        if step_id in self.seen:
            return
        self.seen.add(step_id)
        job = asyncio.create_task(self._handle(task_id, step_id, ticket_id, step))
        self.running.add(job)
        job.add_done_callback(self.running.discard)

    async def catch_up(self) -> None:
        """Take the steps that were left waiting before this worker started."""
        page = 1
        while True:
            response = await self.http.get(AP, params={
                "status": list(_WAITING), "include": "steps", "page_size": 100,
                "current_page": page})
            response.raise_for_status()
            body = response.json()
            for task in body["tasks"]:
                self.tasks[task["task_id"]] = task
                for step in task.get("steps") or ():
                    if step["status"] == "running":
                        ticket = (step.get("additional_output") or {}).get(
                            "waiting_for_human", {}).get("ticket_id")
                        self.take(task["task_id"], step["step_id"], ticket, step)
            if page >= body["pagination"]["total_pages"]:
                return
            page += 1

    async def _task(self, task_id: str) -> dict[str, Any]:
        task = self.tasks.get(task_id)
        if task is None:
            response = await self.http.get(f"{AP}/{task_id}")
            response.raise_for_status()
            task = self.tasks[task_id] = response.json()
        return task

    async def _handle(self, task_id: str, step_id: str, ticket_id: int | None,
                      step: dict[str, Any] | None) -> None:
        async with self.slots:
            try:
                if step is None:
                    response = await self.http.get(f"{AP}/{task_id}/steps/{step_id}")
                    response.raise_for_status()
                    step = response.json()
                if step["status"] != "running" or ticket_id is None:
                    return
                task = await self._task(task_id)
                reply = await self.handler(TaskStep(
                    task_id, step_id, ticket_id, step.get("input"),
                    step.get("additional_input"), task.get("input"),
                    task.get("additional_input"), self.hub, self.http))
                await self._reply(ticket_id, reply)
            except Exception:
                log.exception("handling step %s of task %s failed; it waits for a person",
                              step_id, task_id)

    async def _reply(self, ticket_id: int, reply: str | Reply | None) -> None:
        if reply is None:
            return
        if isinstance(reply, str):
            reply = Reply(reply)
        if reply.last:
            await self.hub.answer(ticket_id, reply.text, reply.data)
        else:
            await self.hub.post(ticket_id, reply.text or "(done)", reply.data)

    async def close(self) -> None:
        for job in list(self.running):
            job.cancel()
        await asyncio.gather(*self.running, return_exceptions=True)
        await self.http.aclose()


async def serve_tasks(handler: Handler, hub: AsyncHub | None = None, *,
                      concurrency: int = 16, ready: asyncio.Event | None = None) -> None:
    """Serve Agent Protocol steps with ``handler`` until cancelled. ``hub`` defaults to
    ``AsyncHub()`` ($TICKETHUB_URL, $TICKETHUB_TOKEN). ``ready`` is set once the worker
    follows the event stream (steps posted after that are never missed)."""
    own = hub is None
    hub = hub or AsyncHub()
    worker = _Worker(handler, hub, concurrency)
    try:
        since = int((await hub.health())["last_seq"])
        await worker.catch_up()
        events = hub.stream_events(since=since)
        if ready is not None:
            ready.set()
        async for event in events:
            data = event.data
            if (event.type == "message.posted" and data.get("via") == AP_CHANNEL
                    and data.get("ap_step_id") and data.get("ap_task_id")):
                step = None
                if "ap_input" in data:  # a small step carries its input: no read needed
                    step = {"status": "running", "input": data["ap_input"],
                            "additional_input": data.get("ap_additional_input")}
                worker.take(str(data["ap_task_id"]), str(data["ap_step_id"]),
                            event.ticket_id, step)
    finally:
        await worker.close()
        if own:
            with contextlib.suppress(Exception):
                await hub.aclose()
