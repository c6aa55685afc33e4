"""An agent worker inside the hub: the Agent Protocol door hands each new step straight
to a handler, with no event stream and no HTTP between them.

The handler has the contract of the SDK's ``serve_tasks`` (see ``tickethub.sdk.tasks``):
it gets a step (``HostedTaskStep``: input, task input, ``ask``, ``attach``) and returns

* a ``str``: the reply; the task goes on;
* a ``Reply`` (``tickethub.sdk.tasks.Reply``): ``last=True`` answers the task's ticket,
  which finishes the task; ``data`` lands in the step's ``additional_output``;
* ``None``: no reply; the step waits for a person, as does a step whose handler raised
  (logged).

Replies are comments (or, for the last, the answer) by ``ap_worker_name``, a responder,
through the channel ``hosted-worker``; they are group-committed like the door's other
writes. A handler may run longer than the client's request is held: the step then comes
back ``running`` and completes when the reply lands. At start the worker takes the steps
left unanswered by a previous run (the hub was stopped mid-handler); each step is handled
once per hub process, at most ``ap_worker_concurrency`` at a time.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from tickethub.agents.task_step import HostedTaskStep, StepTools
from tickethub.domain.status import WAITING
from tickethub.errors import TickethubError
from tickethub.group_commit import GroupCommit
from tickethub.services.agent_step_writes import PostedStep, StepReply, StepWrite, StepWritten
from tickethub.services.agent_tasks import AgentTaskService, StepView, TaskFilter, TaskTicket

log = logging.getLogger(__name__)

VIA = "hosted-worker"
EMPTY_REPLY = "(done)"
_CATCH_UP_PAGE = 100

Handler = Callable[[HostedTaskStep], Awaitable[Any]]


def load_handler(spec: str) -> Handler:
    """The callable named by ``module:function``; a clear ``ValueError`` if it is not one."""
    module_name, _, name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"ap_worker: cannot import {module_name!r}: {exc}") from exc
    handler = getattr(module, name, None)
    if not callable(handler):
        raise ValueError(f"ap_worker: {module_name!r} has no callable {name!r}")
    return handler  # type: ignore[no-any-return]


def _reply_parts(reply: Any) -> tuple[str | None, Any, bool]:
    """(text, data, last) of what a handler returned: a str or an SDK ``Reply``."""
    if isinstance(reply, str):
        return reply, None, False
    if all(hasattr(reply, a) for a in ("text", "data", "last")):
        return reply.text, reply.data, bool(reply.last)
    raise TypeError(f"a step handler returns str, Reply or None, not {type(reply).__name__}")


class HostedTaskWorker:
    """Runs ``handler`` on the door's steps inside the hub process (see the module doc)."""

    def __init__(self, handler: Handler, tools: StepTools, tasks: AgentTaskService,
                 writes: GroupCommit[StepWrite, StepWritten], concurrency: int) -> None:
        """``writes``: the door's group commit of step writes, which replies join."""
        self._handler = handler
        self._tools = tools
        self._tasks = tasks
        self._writes = writes
        self._slots = asyncio.Semaphore(concurrency)
        self._jobs: dict[str, asyncio.Task[StepView | None]] = {}

    async def handle(self, posted: PostedStep, hold_seconds: float) -> StepView | None:
        """Hand ``posted`` to the handler and wait up to ``hold_seconds`` for the step as
        the reply left it; ``None`` if there was no reply (yet). The handler goes on in
        the background after the wait."""
        job = self.dispatch(posted)
        done, _ = await asyncio.wait({job}, timeout=hold_seconds)
        return job.result() if done else None

    def dispatch(self, posted: PostedStep) -> asyncio.Task[StepView | None]:
        job = self._jobs.get(posted.step.step_id)
        if job is None:
            job = asyncio.get_running_loop().create_task(self._run(posted))
            self._jobs[posted.step.step_id] = job
            job.add_done_callback(lambda _: self._jobs.pop(posted.step.step_id, None))
        return job

    async def _run(self, posted: PostedStep) -> StepView | None:
        step = posted.step
        async with self._slots:
            try:
                reply = await self._handler(HostedTaskStep.of(posted, self._tools))
                if reply is None:
                    return None
                text, data, last = _reply_parts(reply)
                if last:
                    return await self._finish(posted, text, data)
                view = await self._writes.submit(StepReply(
                    self._tools.actor, posted, text or EMPTY_REPLY, VIA, data))
                assert isinstance(view, StepView)
                return view
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("handling step %s of task %s failed; it waits for a person",
                              step.step_id, step.task_id)
                return None

    async def _finish(self, posted: PostedStep, text: str | None, data: Any) -> StepView:
        """Answer the task's ticket (the task is done) and read the step back."""
        tools = self._tools
        try:
            await anyio.to_thread.run_sync(
                lambda: tools.tickets.answer(tools.actor, posted.ticket.id,
                                             text or (None if data is not None else EMPTY_REPLY),
                                             data, VIA))
        except TickethubError as exc:  # e.g. a person resolved the ticket meanwhile
            log.info("could not finish task %s: %s", posted.step.task_id, exc.detail)
        _, view = await anyio.to_thread.run_sync(self._tasks.step, posted.step.task_id,
                                                 posted.step.step_id)
        return view

    async def catch_up(self) -> int:
        """Dispatch the steps left unanswered by an earlier run; how many there were."""
        found = 0
        offset = 0
        filters = TaskFilter(status=tuple(WAITING))
        while True:
            views, total = await anyio.to_thread.run_sync(functools.partial(
                self._tasks.page, filters, offset, _CATCH_UP_PAGE, with_steps=True))
            for view in views:
                for step in view.steps or ():
                    if step.state.status == "running":
                        self.dispatch(PostedStep(step.state.record, view.record,
                                                 TaskTicket.of(view.ticket)))
                        found += 1
            offset += len(views)
            if not views or offset >= total:
                return found

    async def aclose(self) -> None:
        """Cancel the handlers still running (their steps wait for the next start)."""
        jobs = list(self._jobs.values())
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
