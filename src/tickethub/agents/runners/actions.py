"""The GitHub Actions runner, the hub's side: dispatch, wait for the signed result, apply.

1. ``run`` opens a :class:`~tickethub.agents.runners.grants.Grant` for the run and
   dispatches the manifest's workflow (``POST .../actions/workflows/{file}/dispatches``,
   ``return_run_details: true``) with two inputs only: ``run_id`` and ``context_url``
   (signed, expiring). No token, no event body travels in the inputs. GitHub's reply
   (``workflow_run_id``, ``run_url``, ``html_url``) goes into the audit, so the run is
   correlated without polling.
2. The workflow fetches its context, once (``context``: the built context, the owner's
   configuration, the manifest's scopes and limits, and the per-run ``result_key``; a
   second fetch is refused, so whoever saw the URL in the run's inputs later gets
   nothing).
3. It posts a :class:`~tickethub.agents.runners.result.RunResult` signed with that key
   (``accept``): checked for signature, run binding and that the run still waits; a
   replay finds the grant consumed.
4. ``run`` charges the reported model use to the run's budget, then applies each action
   through the run's toolbox: the same scopes, approvals, budget and audit as an agent
   in the hub. No result within the run's time budget: the run fails.

Grants live in this process (a restarted hub refuses the results of runs it no longer
waits for; those runs' rows say ``running`` until someone looks).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from tickethub.agents.audit import AuditTrail
from tickethub.agents.manifest import Manifest
from tickethub.agents.run import Run
from tickethub.agents.runners.grants import SIGNATURE_HEADER, Grant, Signer
from tickethub.agents.runners.result import RunResult
from tickethub.channels.github.client import GitHubGateway
from tickethub.errors import Conflict, MalformedJSON, NotFound, Unauthenticated, ValidationFailed

GatewayFor = Callable[[str, str], Awaitable[tuple[GitHubGateway, str]]]
_CLOSED_KEPT = 1000


class NoReport(Exception):
    """The workflow never posted a result within the run's time."""


class RemoteFailed(Exception):
    """The workflow reported that its agent failed."""


@dataclass
class _Waiting:
    grant: Grant
    document: dict[str, Any]
    result: asyncio.Future[RunResult]
    fetched: bool = False


class ActionsRunner:
    def __init__(self, public_url: str, gateway_for: GatewayFor | None, *,
                 context_ttl: float = 600.0, now: Callable[[], float] = time.time,
                 signer: Signer | None = None) -> None:
        self._public_url = public_url.rstrip("/")
        self._gateway_for = gateway_for
        self.context_ttl = context_ttl
        self.now = now
        self._signer = signer or Signer()
        self._waiting: dict[int, _Waiting] = {}
        self._closed: OrderedDict[int, str] = OrderedDict()  # why a run no longer waits

    # -- the run -----------------------------------------------------------------------------

    async def run(self, run: Run, manifest: Manifest, owner: str, audit: AuditTrail) -> None:
        """Dispatch, wait, apply (see module doc). Raises ``NoReport``, ``RemoteFailed``,
        ``BudgetExceeded`` or a ``GitHubError`` from the dispatch."""
        spec = manifest.runner
        assert spec.repo is not None
        if self._gateway_for is None:
            raise RuntimeError("the Actions runner needs the GitHub channel (github_token "
                               "or a GitHub App)")
        grant = Grant(run.id, int(self.now() + self.context_ttl))
        waiting = _Waiting(grant, self._document(run, manifest, owner, grant),
                           asyncio.get_running_loop().create_future())
        self._waiting[run.id] = waiting
        try:
            gateway, credential = await self._gateway_for(owner, spec.repo)
            details = await self.dispatch(gateway, spec.repo, spec.workflow, spec.ref,
                                          {"run_id": str(run.id),
                                           "context_url": self.context_url(grant)})
            await audit.record("dispatch", "done", f"{spec.repo} {spec.workflow}@{spec.ref}",
                               credential=credential, **details)
            try:
                result = await asyncio.wait_for(asyncio.shield(waiting.result),
                                                run.budget.seconds_left())
            except TimeoutError:
                raise NoReport(f"the workflow run did not report back within "
                               f"{manifest.limits.seconds:g} s") from None
        finally:
            if self._waiting.pop(run.id, None) is not None:
                self._close(run.id, "it timed out or failed before reporting")
        await audit.record("result", "received", result.error or "",
                           status=result.status, actions=len(result.actions),
                           usage=result.usage.model_dump())
        run.budget.charge_reported(result.usage.llm_calls, result.usage.tokens,
                                   result.usage.cost)
        if result.status == "failed":
            raise RemoteFailed(f"the workflow's agent failed: {result.error or 'no reason'}")
        for action in result.actions:
            await run.call(action.type, action.why, **action.arguments())

    @staticmethod
    async def dispatch(gateway: GitHubGateway, repo: str, workflow: str, ref: str,
                       inputs: dict[str, str]) -> dict[str, Any]:
        """Create the ``workflow_dispatch`` event; returns GitHub's run details
        (``workflow_run_id``, ``run_url``, ``html_url``), empty where GitHub answers
        204 (servers without ``return_run_details``)."""
        response = await gateway._call(
            "POST", f"/repos/{repo}/actions/workflows/{workflow}/dispatches",
            json={"ref": ref, "inputs": inputs, "return_run_details": True})
        if response.status_code != 200 or not response.content:
            return {}
        data = response.json()
        return {k: data[k] for k in ("workflow_run_id", "run_url", "html_url") if k in data}

    def context_url(self, grant: Grant) -> str:
        return (f"{self._public_url}/hooks/agents/runs/{grant.run_id}/context?"
                f"{self._signer.context_query(grant)}")

    def _document(self, run: Run, manifest: Manifest, owner: str, grant: Grant
                  ) -> dict[str, Any]:
        event = run.event
        limits = manifest.limits
        return {
            "run_id": run.id, "agent": manifest.name, "owner": owner,
            "event": {"name": event.name, "author": event.author, "text": event.text,
                      "source": event.source, "comment_id": event.comment_id},
            "context": {"pieces": [{**p.as_dict(), "trusted": p.trusted}
                                   for p in run.context.pieces],
                        "dropped": run.context.dropped},
            "config": run.config,
            "scopes": sorted(s.value for s in manifest.scopes),
            "limits": {"llm_calls": limits.llm_calls, "tokens": limits.tokens,
                       "tool_calls": limits.tool_calls, "seconds": limits.seconds},
            "result_url": f"{self._public_url}/hooks/agents/runs/{run.id}/result",
            "result_key": grant.result_key,
            "signature_header": SIGNATURE_HEADER,
        }

    # -- the doors ---------------------------------------------------------------------------

    def context(self, run_id: int, expires: int, signature: str) -> dict[str, Any]:
        """The context document for the bearer of a valid, unexpired signature."""
        waiting = self._waiting_for(run_id)
        if not self._signer.verify_context(waiting.grant, expires, signature):
            raise Unauthenticated("the signature does not match this run's context URL",
                                  field="signature")
        if self.now() > expires:
            raise Unauthenticated("the context URL has expired", field="expires")
        if waiting.fetched:  # the result key is handed out once
            raise Conflict(f"the context of run {run_id} was already fetched",
                           field="signature")
        waiting.fetched = True
        return waiting.document

    def accept(self, run_id: int, body: bytes, signature: str | None) -> RunResult:
        """Take the workflow's result for ``run_id`` (once); the waiting run applies it."""
        waiting = self._waiting_for(run_id)
        if not Signer.verify_body(waiting.grant, body, signature):
            raise Unauthenticated(f"{SIGNATURE_HEADER} is missing or is not the body signed "
                                  "with this run's result_key", field=SIGNATURE_HEADER)
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise MalformedJSON(f"the body is not JSON: {exc}") from None
        try:
            result = RunResult.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "body"
            raise ValidationFailed(f"{where}: {first['msg']}", field=where) from None
        if result.run_id != run_id:
            raise ValidationFailed(f"the result is for run {result.run_id}, posted to run "
                                   f"{run_id}", field="run_id")
        del self._waiting[run_id]  # consumed: a replay finds no grant
        self._close(run_id, "it already reported")
        if not waiting.result.done():
            waiting.result.set_result(result)
        return result

    def _waiting_for(self, run_id: int) -> _Waiting:
        waiting = self._waiting.get(run_id)
        if waiting is not None:
            return waiting
        why = self._closed.get(run_id)
        if why is not None:
            raise Conflict(f"run {run_id} no longer waits for a result: {why}",
                           field="run_id")
        raise NotFound(f"run {run_id} is not waiting for a workflow", field="run_id")

    def _close(self, run_id: int, why: str) -> None:
        self._closed[run_id] = why
        while len(self._closed) > _CLOSED_KEPT:
            self._closed.popitem(last=False)
