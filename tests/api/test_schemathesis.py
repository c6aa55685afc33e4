"""schemathesis against the hub's own ``/openapi.json``, every check, on SQLite and
PostgreSQL: no input it generates gives a server error, and every status, content type
and body the hub sends is the one its OpenAPI document declares.

schemathesis's engine (what its CLI runs: examples, coverage, fuzzing) drives the hub over
HTTP while the hub runs under a real uvicorn in a thread of its own, with short long-poll
and step-hold limits so that a valid ``wait`` returns at once. Examples are bounded
(``MAX_EXAMPLES``): about 35 s of CPU per database.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
import uvicorn
from schemathesis import engine
from schemathesis.engine import events

from tests.conftest import ADMIN_TOKEN, require_server
from tickethub.api.app import create_app
from tickethub.domain.ids import MAX_ID
from tickethub.server.runtime import HubRuntime
from tickethub.settings import Settings

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
MAX_EXAMPLES = 5  # per operation and phase: the run stays near a minute per database
CONFIG = schemathesis.Config.from_dict({
    "headers": AUTH,
    "generation": {"max-examples": MAX_EXAMPLES},
    # Examples, coverage (boundaries, undeclared methods, missing headers) and fuzzing.
    # The stateful phase follows OpenAPI links, and the document declares none.
    "phases": {"stateful": {"enabled": False}},
    "checks": {
        # Needs an OpenAPI security scheme to know which requests should be refused
        # without credentials; the hub documents Bearer tokens in prose (DESCRIPTION in
        # api/app.py), and test_errors.py asserts its 401s.
        "ignored_auth": {"enabled": False},
        # "Schema-valid data must be accepted": the hub also checks what a schema cannot
        # say (due_at in the future, a proposal that fits its response_schema, a webhook
        # URL that is http(s), a transition legal from the current status) and names the
        # field in a 422, as the design asks. Its opposite, that invalid data is refused
        # (negative_data_rejection), stays on.
        "positive_data_acceptance": {"enabled": False},
        # schemathesis's defaults plus 413: a body made invalid by a string past
        # maxLength can also pass max_body_bytes, and then 413 is the right refusal.
        "negative_data_rejection": {"expected-statuses": [
            "400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428",
            "429", "5xx"]},
    },
})


class _ThreadServer:
    """A hub under uvicorn on a free loopback port, in a thread with its own loop."""

    def __init__(self, hub: HubRuntime) -> None:
        config = uvicorn.Config(create_app(hub), host="127.0.0.1", port=0,
                                log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve()),
                                       daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        while not self.server.started:
            assert self.thread.is_alive(), "the hub did not start"
            self.thread.join(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def hub_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
            pg_databases) -> Iterator[str]:
    tmp: Path = tmp_path_factory.mktemp(request.param)
    if request.param == "sqlite":
        url = f"sqlite:///{tmp / 'hub.db'}"
    else:
        require_server("PostgreSQL", pg_databases is not None)
        url = pg_databases.fresh()
    hub = HubRuntime(Settings(data_dir=tmp / "data", database_url=url,
                              admin_token=ADMIN_TOKEN, wait_max_seconds=0.01,
                              ap_step_hold_seconds=0, openai_block_seconds=0.05,
                              delivery_poll_seconds=0.05,
                              # The fuzzer sends many bad tokens from one address; with
                              # the default throttle every later case would be a 429 and
                              # test nothing (429 itself is declared and test_throttle.py
                              # covers it).
                              auth_throttle_address_attempts=1_000_000))
    try:
        with _ThreadServer(hub) as base:
            yield base
    finally:
        hub.close()
        if request.param == "postgresql":
            pg_databases.drop(url)


def _spare_the_run_token(ctx: object, path_parameters: dict[str, Any] | None
                         ) -> dict[str, Any] | None:
    """Revoking the admin token the run uses (id 1) would turn every later case into a
    401; any other token id is fair game."""
    if path_parameters and path_parameters.get("token_id") == 1:
        path_parameters["token_id"] = MAX_ID
    return path_parameters


def _failures(schema: schemathesis.BaseSchema) -> list[str]:
    """Run every phase of ``schema`` and describe each failed check or engine error."""
    found: list[str] = []
    for event in engine.from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            for nodes in event.recorder.checks.values():
                found += [f"{event.recorder.label}: {node.failure_info.failure}"
                          for node in nodes
                          if node.status is engine.Status.FAILURE and node.failure_info]
        elif isinstance(event, events.NonFatalError):
            found.append(f"{event.label}: {event.value!r}")
        elif isinstance(event, events.FatalError):
            raise event.exception
    return list(dict.fromkeys(found))


def test_the_api_keeps_its_openapi_promises(hub_url: str) -> None:
    schema = (schemathesis.openapi.from_url(f"{hub_url}/openapi.json", config=CONFIG)
              # Server-Sent Events never end by design; their bad input is covered in
              # test_bad_input.py, their behaviour in the streaming tests.
              .exclude(path_regex=r"/stream$"))
    schema.hook("map_path_parameters")(_spare_the_run_token)
    failures = _failures(schema)
    assert not failures, "\n\n".join(failures)
