"""The desk of ``tickethub mcp`` (stdio): a hub reached over its native HTTP API, so
waiting uses the hub's own long-poll and wakes as fast as any other client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tickethub.api.mcp_server.desk import JSON, Question
from tickethub.domain.status import WAITING
from tickethub.errors import TickethubError


class HubUnreachable(TickethubError):
    status = 503
    code = "hub_unreachable"
    title = "Hub unreachable"


class RemoteError(TickethubError):
    """An error the hub answered with, carried over from its problem+json."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        super().__init__(str(problem.get("detail") or problem), field=problem.get("field"))
        self.status = status  # type: ignore[misc]
        self.code = str(problem.get("code", f"http_{status}"))  # type: ignore[misc]


class RemoteDesk:
    def __init__(self, base_url: str, token: str, *, http: httpx.AsyncClient | None = None
                 ) -> None:
        self._http = http or httpx.AsyncClient(
            base_url=base_url.rstrip("/"), timeout=httpx.Timeout(65.0, connect=5.0),
            headers={"Authorization": f"Bearer {token}", "X-Tickethub-Via": "mcp"},
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise HubUnreachable(f"the hub at {self._http.base_url} is unreachable: "
                                 f"{type(exc).__name__}") from None
        if response.status_code >= 400:
            try:
                problem = response.json()
            except ValueError:
                problem = {"detail": response.text[:300]}
            raise RemoteError(response.status_code, problem)
        return response.json()

    async def ask(self, question: Question) -> JSON:
        body: JSON = {"title": question.title, "body": question.body,
                      "kind": question.kind.value, "labels": list(question.labels),
                      "response_schema": question.response_schema,
                      "proposal": question.proposal, "refs": {"via": "mcp"}}
        if question.deadline_seconds is not None:
            due = datetime.now(UTC) + timedelta(seconds=question.deadline_seconds)
            body["due_at"] = due.isoformat()
        result: JSON = await self._call("POST", "/api/v1/tickets", json=body)
        return result

    async def wait(self, ticket_id: int, timeout: float) -> JSON:
        result: JSON = await self._call("GET", f"/api/v1/tickets/{ticket_id}/wait",
                                        params={"timeout": timeout})
        return result

    async def mine(self, waiting_only: bool, limit: int) -> list[JSON]:
        me = await self._call("GET", "/api/v1/me")
        params: list[tuple[str, Any]] = [("created_by", me["name"]), ("limit", limit)]
        if waiting_only:
            params += [("status", s.value) for s in sorted(WAITING)]
        page = await self._call("GET", "/api/v1/tickets", params=params)
        items: list[JSON] = page["items"]
        return items

    async def post(self, ticket_id: int, text: str) -> JSON:
        result: JSON = await self._call("POST", f"/api/v1/tickets/{ticket_id}/messages",
                                        json={"body": text})
        return result
