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

With several hub processes on one database (``serve --workers N``) a step is handled by
one of them at a time, through claims (``ap_steps.claimed_until``, a lease of
``ap_worker_lease_seconds``):

* a step the worker stores while its handler runs is stored claimed, in the same write;
  a step stored together with its reply is done and needs no claim;
* every third of the lease the worker renews the claims of the handlers still running,
  and gives up those of the steps that finished (replied, or left to a person);
* at start, the worker claims the steps left running with no claim or a lapsed one, with
  one conditional ``UPDATE``, and handles only those it claimed; while it runs, it
  takes the steps whose claim lapsed (their process died) the same way, so a step a
  killed process was handling is taken up within about 1⅓ leases.

A worker that stops releases the claims of the steps it did not finish, so the next
start takes them at once. A process stalled for longer than a lease may find its step
taken by another: the step is then handled twice (the renewal logs it).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio

from tickethub.agents.task_step import HostedTaskStep, StepTools
from tickethub.domain.actors import Actor, ActorKind, Role, require_owner_or_responder
from tickethub.domain.status import WAITING
from tickethub.errors import TickethubError
from tickethub.services.agent_step_writes import (
    PostedStep,
    StepExchange,
    StepInput,
    StepReply,
    StepWrite,
    StepWritten,
)
from tickethub.services.agent_tasks import (
    AgentTaskService,
    StepView,
    TaskFilter,
    TaskRecord,
    TaskTicket,
    TaskView,
    new_uuid,
)

log = logging.getLogger(__name__)

VIA = "hosted-worker"
EMPTY_REPLY = "(done)"
_CATCH_UP_PAGE = 100
LEASE_SECONDS = 30.0  # default of ``ap_worker_lease_seconds``
_KNOWN_TASKS = 10_000

Handler = Callable[[HostedTaskStep], Awaitable[Any]]
# The hub's group-committed write path (``TicketService.awrite``), which the worker's
# steps and replies join.
Write = Callable[[StepWrite], Awaitable[StepWritten]]


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


@dataclass(frozen=True)
class TakenStep:
    """What the door needs to answer the client: the step's ids, and the step as the
    worker left it (``None``: not completed in time; hold for a reply as usual)."""

    task_id: str
    step_id: str
    ticket_id: int
    view: StepView | None


class _PendingStep:
    """A step the worker handles; stored on demand, at most once: together with a quick
    reply, or alone when the handler needs it (``ask``, ``attach``), gives no reply, or
    outlasts the client's hold."""

    def __init__(self, item: StepInput, task: TaskRecord, ticket: TaskTicket,
                 writes: Write, posted: PostedStep | None = None,
                 on_stored: Callable[[str], None] | None = None) -> None:
        """``on_stored``: called with the step's id once it is stored alone (claimed)."""
        self.item = item
        self.task = task
        self.ticket = ticket
        self._writes = writes
        self._on_stored = on_stored
        self._storing: asyncio.Future[PostedStep | None] | None = None
        if posted is not None:  # stored already (taken over at start)
            self._storing = asyncio.get_running_loop().create_future()
            self._storing.set_result(posted)

    @property
    def step_id(self) -> str:
        assert self.item.step_id is not None
        return self.item.step_id

    async def store(self) -> PostedStep | None:
        """Store the step if nobody did yet; the stored step (``None`` if it was stored
        together with its reply). Raises the write's error (e.g. a finished task)."""
        storing = self._storing
        if storing is None:
            write: Awaitable[PostedStep | None] = self._write(self.item)
            storing = self._storing = asyncio.ensure_future(write)
        return await asyncio.shield(storing)

    async def reply(self, actor: Actor, text: str, data: Any) -> StepView:
        """Store the reply: with the step in one write if it is not stored yet."""
        if self._storing is None:
            stored = self._storing = asyncio.get_running_loop().create_future()
            try:
                written = await self._writes(
                    StepExchange(self.item, actor, text, VIA, data))
            except BaseException as exc:
                stored.set_exception(exc)
                stored.exception()  # whoever awaits it sees it; nobody else need
                raise
            stored.set_result(None)
        else:
            posted = await self.store()
            assert posted is not None
            written = await self._writes(StepReply(actor, posted, text, VIA, data))
        assert isinstance(written, StepView)
        return written

    async def _write(self, item: StepInput) -> PostedStep:
        posted = await self._writes(item)
        assert isinstance(posted, PostedStep)
        if self._on_stored is not None:
            self._on_stored(self.step_id)
        return posted


def _note_refusal(job: asyncio.Task[StepView | None]) -> None:
    """A step refused when stored (its task finished meanwhile) after its client's hold
    ended: nobody is left to tell but the log."""
    if not job.cancelled() and isinstance(job.exception(), TickethubError):
        log.info("step not stored: %s", job.exception())


class HostedTaskWorker:
    """Runs ``handler`` on the door's steps inside the hub process (see the module doc)."""

    def __init__(self, handler: Handler, tools: StepTools, tasks: AgentTaskService,
                 writes: Write, concurrency: int,
                 new_id: Callable[[], str] = new_uuid,
                 lease_seconds: float = LEASE_SECONDS) -> None:
        """``writes``: the hub's group-committed write path, which the worker's join."""
        self._handler = handler
        self._tools = tools
        self._tasks = tasks
        self._writes = writes
        self._new_id = new_id
        self._lease = lease_seconds
        self._slots = asyncio.Semaphore(concurrency)
        self._jobs: dict[str, asyncio.Task[StepView | None]] = {}
        self._claimed: set[str] = set()  # stored steps whose handler runs here: renewed
        self._finished_claims: set[str] = set()  # their handler ended: to release
        self._keeper: asyncio.Task[None] | None = None
        # What a task's steps need that never changes (the task, its ticket's id, path
        # and creator), so a step costs no read before its handler runs.
        self._known: OrderedDict[str, tuple[TaskRecord, TaskTicket]] = OrderedDict()

    async def take(self, item: StepInput, hold_seconds: float) -> TakenStep:
        """Handle a client's step: run the handler and wait up to ``hold_seconds`` for
        it. A quick reply is stored together with the step; otherwise the step is stored
        before this returns and the handler goes on in the background. Raises what the
        store raises (an unknown or finished task, an actor who may not post)."""
        task, ticket = await self._task(item.task_id)
        require_owner_or_responder(item.actor, ticket.created_by, "posting a step")
        item = StepInput(item.actor, item.task_id, item.text, item.additional_input,
                         self._new_id(), self._lease)
        pending = _PendingStep(item, task, ticket, self._writes,
                               on_stored=self._claimed.add)
        job = self._start(pending)
        done, _ = await asyncio.wait({job}, timeout=hold_seconds)
        view = job.result() if done else None
        if view is None:
            await pending.store()
        return TakenStep(task.task_id, pending.step_id, ticket.id, view)

    def _start(self, pending: _PendingStep) -> asyncio.Task[StepView | None]:
        step_id = pending.step_id
        job = self._jobs.get(step_id)
        if job is None:
            job = asyncio.get_running_loop().create_task(self._run(pending))
            self._jobs[step_id] = job
            job.add_done_callback(lambda _: self._jobs.pop(step_id, None))
            job.add_done_callback(_note_refusal)
            job.add_done_callback(self._finished(step_id))
        return job

    async def _task(self, task_id: str) -> tuple[TaskRecord, TaskTicket]:
        found = self._known.get(task_id)
        if found is None:
            view = await anyio.to_thread.run_sync(self._tasks.get, task_id)
            found = self._known[task_id] = (view.record, TaskTicket.of(view.ticket))
            if len(self._known) > _KNOWN_TASKS:
                self._known.popitem(last=False)
        else:
            self._known.move_to_end(task_id)
        return found

    async def _run(self, pending: _PendingStep) -> StepView | None:
        item, task = pending.item, pending.task
        step = HostedTaskStep(item.task_id, pending.step_id, pending.ticket.id, item.text,
                              item.additional_input, task.input, task.additional_input,
                              self._tools, pending.store)
        async with self._slots:
            try:
                reply = await self._handler(step)
                if reply is None:
                    await pending.store()
                    return None
                text, data, last = _reply_parts(reply)
                if last:
                    await pending.store()
                    return await self._finish(pending, text, data)
                return await pending.reply(self._tools.actor, text or EMPTY_REPLY, data)
            except (asyncio.CancelledError, TickethubError):
                raise  # the door answers the client with the store's error
            except Exception:
                log.exception("handling step %s of task %s failed; it waits for a person",
                              pending.step_id, item.task_id)
                await pending.store()
                return None

    async def _finish(self, pending: _PendingStep, text: str | None, data: Any) -> StepView:
        """Answer the task's ticket (the task is done) and read the step back."""
        tools = self._tools
        try:
            await tools.tickets.aanswer(tools.actor, pending.ticket.id,
                                        text or (None if data is not None else EMPTY_REPLY),
                                        data, VIA)
        except TickethubError as exc:  # e.g. a person resolved the ticket meanwhile
            log.info("could not finish task %s: %s", pending.task.task_id, exc.detail)
        _, view = await anyio.to_thread.run_sync(self._tasks.step, pending.task.task_id,
                                                 pending.step_id)
        return view

    async def start(self) -> int:
        """Catch up (:meth:`catch_up`), then keep the claims in the background until
        :meth:`aclose`; how many steps were left running."""
        found = await self.catch_up()
        self._keeper = asyncio.get_running_loop().create_task(self._keep_claims())
        return found

    async def catch_up(self) -> int:
        """Dispatch the steps left unanswered by an earlier run (unclaimed, or claimed
        by a process that stopped renewing); how many this worker took."""
        found = 0
        offset = 0
        filters = TaskFilter(status=tuple(WAITING))
        while True:
            views, total = await anyio.to_thread.run_sync(functools.partial(
                self._tasks.page, filters, offset, _CATCH_UP_PAGE, with_steps=True))
            found += (await self._take_over(views))[0]
            offset += len(views)
            if not views or offset >= total:
                return found

    async def _take_over(self, views: list[TaskView], only: set[str] | None = None
                         ) -> tuple[int, set[str]]:
        """Claim and start the running steps of ``views`` (of ``only``, if given) that
        no other process holds: how many it started, and those of ``only`` that are
        not running any more (answered meanwhile)."""
        running = [(view, step) for view in views for step in view.steps or ()
                   if step.state.status == "running"
                   and step.state.step_id not in self._jobs
                   and (only is None or step.state.step_id in only)]
        idle = set() if only is None else only - {s.state.step_id for _, s in running}
        claimed = await anyio.to_thread.run_sync(
            self._tasks.claim_steps, [s.state.step_id for _, s in running], self._lease)
        started = 0
        for view, step in running:
            if step.state.step_id not in claimed:
                continue  # another hub process has it
            record, ticket = step.state.record, TaskTicket.of(view.ticket)
            item = StepInput(Actor(record.created_by, Role.AGENT, ActorKind.AGENT),
                             record.task_id, record.input,
                             record.additional_input, record.step_id)
            self._claimed.add(record.step_id)
            self._start(_PendingStep(item, view.record, ticket, self._writes,
                                     PostedStep(record, ticket)))
            started += 1
        return started, idle - set(self._jobs)

    def _finished(self, step_id: str) -> Callable[[asyncio.Task[StepView | None]], None]:
        def done(job: asyncio.Task[StepView | None]) -> None:
            # A cancelled one's claim is released at close; a finished one's at the
            # next upkeep (one write for all the steps that ended meanwhile).
            if not job.cancelled() and step_id in self._claimed:
                self._claimed.discard(step_id)
                self._finished_claims.add(step_id)
        return done

    async def _keep_claims(self) -> None:
        while True:
            await asyncio.sleep(self._lease / 3)
            try:
                await self.tend_claims()
            except Exception as exc:  # the database is away: try again next time
                log.warning("could not renew the in-hub worker's claims: %s", exc)

    async def tend_claims(self) -> int:
        """One round of upkeep: release the claims of finished steps, renew those of
        running handlers, and take the steps whose claim lapsed; how many it took."""
        release, self._finished_claims = sorted(self._finished_claims), set()
        renew = sorted(self._claimed)
        if release or renew:
            try:
                renewed = await anyio.to_thread.run_sync(
                    self._tasks.tend_claims, renew, release, self._lease)
            except BaseException:
                self._finished_claims.update(release)
                raise
            lost = set(renew) - renewed
            lost &= self._claimed  # (not those that finished meanwhile)
            if lost:
                log.warning("the claims of %d running step(s) lapsed before renewal (this "
                            "process stalled?); another hub process may handle them too",
                            len(lost))
                self._claimed -= lost
        lapsed = [(t, s) for t, s in await anyio.to_thread.run_sync(self._tasks.lapsed_claims)
                  if s not in self._jobs]
        if not lapsed:
            return 0
        views = []
        for task_id in dict.fromkeys(t for t, _ in lapsed):
            views.append(await anyio.to_thread.run_sync(functools.partial(
                self._tasks.get, task_id, with_steps=True)))
        started, idle = await self._take_over(views, {s for _, s in lapsed})
        if idle:  # answered while nobody held them: nothing left to claim
            await anyio.to_thread.run_sync(self._tasks.release_steps, sorted(idle))
        if started:
            log.info("the in-hub Agent Protocol worker took %d step(s) whose hub process "
                     "stopped", started)
        return started

    async def aclose(self) -> None:
        """Stop the upkeep, cancel the handlers still running; release the claims of the
        steps they leave unanswered (so the next start takes them) and of those that
        finished."""
        if self._keeper is not None:
            self._keeper.cancel()
            await asyncio.gather(self._keeper, return_exceptions=True)
        jobs = list(self._jobs.values())
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        left = sorted(self._claimed | self._finished_claims)
        self._claimed, self._finished_claims = set(), set()
        if left:
            try:
                await anyio.to_thread.run_sync(self._tasks.release_steps, left)
            except Exception:  # the database is away: the claims lapse with their lease
                log.warning("could not release the claims of %d step(s)", len(left))
