"""One problem renderer: every error body of every door (native API, Agent Protocol,
OpenAI, MCP's token check, the body-size limit, the direct routes, the web inbox) is a
``Problem`` rendered by ``api/problems.render`` in the door's wire format (the web's
error page by ``web/page_route.render_problem``), and no other module builds error
bodies."""

from __future__ import annotations

import ast
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import tickethub
from tickethub.api import limits, problems
from tickethub.api.agent_protocol.errors import AgentProtocolRoute
from tickethub.api.openai.errors import OpenAIRoute
from tickethub.errors import NotFound, Problem, StaleVersion, Throttled
from tickethub.settings import Settings

LIMIT = 4096
SRC = Path(tickethub.__file__).parent


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"max_body_bytes": LIMIT})


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Each (wire, problem code) that ``render`` produced, recorded by wrapping every
    door's wire format where ``render`` finds it."""
    seen: list[tuple[str, str]] = []

    def recording(name: str, wire: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(problem: Problem, instance: str | None) -> Any:
            seen.append((name, problem.code))
            return wire(problem, instance)
        return wrapped

    monkeypatch.setattr(problems, "problem_json", recording("problem", problems.problem_json))
    monkeypatch.setattr(limits, "problem_json", problems.problem_json)
    monkeypatch.setattr(AgentProtocolRoute, "wire",
                        staticmethod(recording("ap", AgentProtocolRoute.wire)))
    monkeypatch.setattr(OpenAIRoute, "wire", staticmethod(recording("openai", OpenAIRoute.wire)))
    return seen


CASES: list[tuple[str, str, dict[str, Any], int, tuple[str, str]]] = [
    ("native, unknown ticket", "GET /api/v1/tickets/999999", {}, 404,
     ("problem", "not_found")),
    ("native, invalid body", "POST /api/v1/tickets", {"json": {"title": 5}}, 422,
     ("problem", "validation_failed")),
    ("native, unknown path", "GET /api/v1/nothing-here", {}, 404, ("problem", "not_found")),
    ("body-size limit", "POST /api/v1/tickets", {"content": b"x" * (LIMIT + 1)},
     413, ("problem", "payload_too_large")),
    ("AP route, unknown task", "GET /ap/v1/agent/tasks/nope", {}, 404, ("ap", "not_found")),
    ("AP direct route, bad body", "POST /ap/v1/agent/tasks", {"json": {"input": 5}}, 422,
     ("ap", "validation_failed")),
    ("AP direct route, too large", "POST /ap/v1/agent/tasks",
     {"json": {"input": "x" * LIMIT}}, 413, ("ap", "payload_too_large")),
    ("OpenAI, too large", "POST /v1/chat/completions", {"content": b"x" * (LIMIT + 1)},
     413, ("openai", "payload_too_large")),
    ("OpenAI, bad key", "POST /v1/chat/completions",
     {"json": {"model": "human", "messages": [{"role": "user", "content": "hi"}]},
      "headers": {"authorization": "Bearer th_wrong"}}, 401, ("openai", "unauthenticated")),
    ("MCP, no token", "POST /mcp", {"json": {}, "headers": {}}, 401,
     ("problem", "unauthenticated")),
]


@pytest.mark.parametrize(("case", "request_line", "request_args", "status", "wire"), CASES,
                         ids=[c[0] for c in CASES])
async def test_every_door_renders_through_the_one_renderer(
    client: httpx.AsyncClient, rendered: list[tuple[str, str]], agent: dict[str, str],
    case: str, request_line: str, request_args: dict[str, Any], status: int,
    wire: tuple[str, str]
) -> None:
    method, path = request_line.split(" ")
    request_args = dict(request_args)  # CASES is shared by both databases' runs
    headers = request_args.pop("headers", agent)  # a case's own headers replace the token
    response = await client.request(method, path, headers=headers, **request_args)
    assert response.status_code == status, response.text
    assert rendered == [wire]


async def _streamed(size: int) -> AsyncIterator[bytes]:
    """A body without ``Content-Length`` (sent chunked): only counting it tells its size."""
    for _ in range(0, size, 1024):
        yield b"x" * 1024


@pytest.mark.parametrize(("path", "wire"), [
    ("/api/v1/tickets", "problem"), ("/ap/v1/agent/tasks", "ap"),
    ("/v1/chat/completions", "openai"), ("/mcp", "problem")])
async def test_a_streamed_body_over_the_limit_is_refused_in_its_doors_format(
    client: httpx.AsyncClient, rendered: list[tuple[str, str]], agent: dict[str, str],
    path: str, wire: str
) -> None:
    response = await client.post(path, content=_streamed(LIMIT + 2048), headers=agent)
    assert response.status_code == 413, response.text
    assert response.headers["connection"] == "close"
    # (a handler that was reading the body may have rendered it too; the limit's answer
    # replaces its answer, in the same format)
    assert set(rendered) == {(wire, "payload_too_large")}
    assert response.headers["content-type"] == (
        "application/problem+json" if wire == "problem" else "application/json")


async def test_a_route_may_take_more_than_the_hubs_limit(
    client: httpx.AsyncClient, rendered: list[tuple[str, str]], agent: dict[str, str]
) -> None:
    """An Agent Protocol upload is held to ``ap_max_artifact_bytes`` (its route's
    ``body_limit``), not to the hub's ``max_body_bytes`` that every JSON body has."""
    task = (await client.post("/ap/v1/agent/tasks", json={"input": "t"}, headers=agent)).json()
    url = f"/ap/v1/agent/tasks/{task['task_id']}/artifacts"
    upload = await client.post(url, files={"file": ("a.bin", b"x" * (LIMIT * 4))},
                               headers=agent)
    assert upload.status_code == 200, upload.text
    form = httpx.Request("POST", url, files={"file": ("b.bin", b"x" * (LIMIT * 4))})
    body = form.read()

    async def chunked() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
        for at in range(0, len(body), 1024):
            yield body[at:at + 1024]

    streamed = await client.post(url, content=chunked(), headers={
        **agent, "content-type": form.headers["content-type"]})
    assert streamed.status_code == 200, streamed.text
    as_json = await client.post("/ap/v1/agent/tasks", json={"input": "x" * LIMIT * 4},
                                headers=agent)
    assert as_json.status_code == 413
    assert rendered == [("ap", "payload_too_large")]


def test_a_problem_renders_in_each_wire_format() -> None:
    """The same problem, three shapes; headers travel with it whatever the shape."""
    problem = Throttled("slow down", field="token", retry_after=3).problem()
    native = problems.render(problem, {"type": "http", "path": "/api/v1/x"},
                             wire=problems.problem_json)
    ap = problems.render(problem, wire=AgentProtocolRoute.wire)
    openai = problems.render(problem, wire=OpenAIRoute.wire)
    assert native.media_type == "application/problem+json"
    assert [r.status_code for r in (native, ap, openai)] == [429, 429, 429]
    assert all(r.headers["retry-after"] == "3" for r in (native, ap, openai))
    assert b'"instance":"/api/v1/x"' in bytes(native.body)
    assert b'"message":"slow down"' in bytes(ap.body)
    assert b'"type":"rate_limit_error"' in bytes(openai.body)


def test_an_errors_problem_keeps_its_members() -> None:
    assert StaleVersion(2, 3).problem().extra == {"expected": 2, "actual": 3}
    assert NotFound("gone", field="id").problem().document("/x") == {
        "type": "https://tickethub.dev/problems/not_found", "title": "Not found",
        "status": 404, "detail": "gone", "code": "not_found", "field": "id",
        "instance": "/x"}


def _error_status(value: ast.expr) -> bool:
    """True when a ``status_code=`` argument may be an error: a constant >= 400, or
    taken from an error (``exc.status``)."""
    for node in ast.walk(value):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and node.value >= 400:
            return True
        if (isinstance(node, ast.Attribute) and "status" in node.attr
                and isinstance(node.value, ast.Name) and node.value.id in ("exc", "error")):
            return True
    return False


def _error_bodies_built(path: Path) -> list[str]:
    """Places in ``path`` that build an error body by hand: the problem+json media type
    spelled out, a problem document made, a response given an error status, or the web's
    error page rendered."""
    found = []
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and "problem+json" in node.value and " " not in node.value):
            found.append(f"{node.lineno}: the media type {node.value!r}")
        if isinstance(node, ast.Constant) and node.value == "error.html":
            found.append(f"{node.lineno}: the error page")
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in ("document", "to_problem"):
                found.append(f"{node.lineno}: {name}()")
            if name.endswith("Response") and any(
                    k.arg == "status_code" and _error_status(k.value) for k in node.keywords):
                found.append(f"{node.lineno}: {name}(status_code=...)")
    return found


@pytest.mark.parametrize("door", ["api", "web"])
def test_no_module_builds_error_bodies_but_the_renderer(door: str) -> None:
    allowed = {SRC / "api" / "problems.py", SRC / "api" / "problem_docs.py",
               SRC / "errors.py", SRC / "web" / "page_route.py"}
    built = {str(p.relative_to(SRC)): found for p in sorted((SRC / door).rglob("*.py"))
             if p not in allowed and (found := _error_bodies_built(p))}
    assert built == {}


@pytest.mark.parametrize(("request_line", "allowed"), [
    ("DELETE /api/v1/tickets", "GET, POST"),
    ("PUT /api/v1/tickets/1/messages", "GET, POST"),
    ("DELETE /ap/v1/agent/tasks", "GET, POST"),
])
async def test_a_405_lists_every_method_its_path_serves(
    client: httpx.AsyncClient, agent: dict[str, str], request_line: str, allowed: str
) -> None:
    """GET and POST of one path are two routes; Starlette's own ``Allow`` names only the
    first one that matched."""
    method, path = request_line.split(" ")
    response = await client.request(method, path, headers=agent)
    assert response.status_code == 405
    assert response.headers["Allow"] == allowed
