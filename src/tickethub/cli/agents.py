"""``tickethub agent ...``: people's personal agents — on the hub's own database, with
the same settings as ``serve`` (docs/personal-agents.md).

\b
  tickethub agent list                                        # agents and installations
  tickethub agent install comment-rewrite --owner alice --identity github=alice-gh
  tickethub agent install thread-summary --owner alice --config '{"words": 120}'
  tickethub agent disable comment-rewrite --owner alice
  tickethub agent runs --owner alice --agent comment-rewrite
  tickethub agent secret alice openai-key < key.txt           # sealed, never printed
  tickethub agent new my-agent                                # a project to start from
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tickethub.cli import output
from tickethub.cli.local import local_runtime

if TYPE_CHECKING:
    from tickethub.agents.component import PersonalAgents
    from tickethub.server.runtime import HubRuntime

_data_dir = click.option("--data-dir", type=click.Path(path_type=Path), default=None,
                         help="The hub's data folder [default: ./data].")
_json = click.option("--json", "as_json", is_flag=True, help="Print JSON.")
_owner = click.option("--owner", required=True, help="The person the agent acts for "
                      "(their hub name).")


def _agents(runtime: HubRuntime) -> PersonalAgents:
    if runtime.agents is not None:
        return runtime.agents  # type: ignore[no-any-return]
    from tickethub.agents.component import install

    return install(runtime)


@click.group("agent")
def agent() -> None:
    """Personal agents: people's own small agents that act for them."""


@agent.command("list")
@click.option("--owner", default=None, help="Only this person's installations.")
@_json
@_data_dir
def list_(owner: str | None, as_json: bool, data_dir: Path | None) -> None:
    """The agents the hub knows (built-in and installed packages) and who installed
    which."""
    with local_runtime(data_dir) as runtime:
        agents = _agents(runtime)
        registry = agents.directory.registry
        known = [{"name": n, "origin": registry.origins[n],
                  "description": registry.get(n).manifest.description,
                  "triggers": [t.value for t in registry.get(n).manifest.triggers],
                  "scopes": sorted(registry.get(n).manifest.scopes)}
                 for n in registry.names()]
        installs = agents.directory.installations(owner)
    if as_json:
        output.echo_json({"agents": known, "installations": installs,
                          "errors": registry.errors})
        return
    for a in known:
        click.echo(f"{a['name']:<18} {a['origin']:<10} {' '.join(a['triggers']):<24} "
                   f"{a['description']}")
    for target, error in registry.errors.items():
        click.echo(f"(not loaded) {target}: {error}")
    if installs:
        click.echo("")
    for i in installs:
        state = "enabled" if i.enabled else "disabled"
        click.echo(f"#{i.id:<4} {i.owner:<16} {i.agent:<18} {state:<9} "
                   f"{json.dumps(i.identities)}")


def _pairs(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for value in values:
        channel, sep, name = value.partition("=")
        if not sep or not channel or not name:
            output.bad_input(f"{value!r} is not CHANNEL=NAME", "invalid", "identity")
        out[channel] = name
    return out


@agent.command()
@click.argument("name")
@_owner
@click.option("--identity", "identities", multiple=True, metavar="CHANNEL=NAME",
              help="The owner's name on a channel, e.g. github=octocat (repeatable); "
                   "only that name can use the agent's commands.")
@click.option("--config", "config_json", default="{}", show_default=True,
              help="Configuration (JSON), checked against the agent's schema.")
@_json
@_data_dir
def install(name: str, owner: str, identities: tuple[str, ...], config_json: str,
            as_json: bool, data_dir: Path | None) -> None:
    """Install agent NAME for a person (enabled at once)."""
    try:
        config: Any = json.loads(config_json)
    except ValueError as exc:
        output.bad_input(f"--config is not JSON: {exc}", "malformed_json", "config")
    with local_runtime(data_dir) as runtime:
        done = _agents(runtime).directory.install(owner, name, config, _pairs(identities))
    if as_json:
        output.echo_json(done)
    else:
        click.echo(f"installed {done.agent} for {done.owner} (#{done.id})")


def _switch(enabled: bool) -> Any:
    @click.argument("name")
    @_owner
    @_json
    @_data_dir
    def command(name: str, owner: str, as_json: bool, data_dir: Path | None) -> None:
        with local_runtime(data_dir) as runtime:
            done = _agents(runtime).directory.set_enabled(owner, name, enabled)
        if as_json:
            output.echo_json(done)
        else:
            click.echo(f"{done.agent} for {done.owner}: "
                       f"{'enabled' if enabled else 'disabled'}")
    return command


agent.command("enable", help="Turn a person's agent NAME back on.")(_switch(True))
agent.command("disable", help="Turn a person's agent NAME off (its runs stop starting).")(
    _switch(False))


@agent.command()
@click.option("--owner", default=None, help="Whose runs (with --agent).")
@click.option("--agent", "agent_name", default=None, help="Which agent (with --owner).")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@_json
@_data_dir
def runs(owner: str | None, agent_name: str | None, limit: int, as_json: bool,
         data_dir: Path | None) -> None:
    """Recent runs, newest first: status, budget used, the ticket with the audit."""
    if bool(owner) != bool(agent_name):
        output.bad_input("--owner and --agent go together", "invalid", "owner")
    with local_runtime(data_dir) as runtime:
        found = _agents(runtime).directory.runs(owner, agent_name, limit)
    if as_json:
        output.echo_json(found)
        return
    for r in found:
        u = r.used
        click.echo(f"run {r.id:<5} {r.status.value:<8} ticket {r.ticket_id or '-':<5} "
                   f"{r.trigger:<32} llm {u.llm_calls} tokens {u.tokens} tools "
                   f"{u.tool_calls} {u.seconds:.1f}s {r.error or ''}".rstrip())


@agent.command()
@click.argument("owner")
@click.argument("name")
@_data_dir
def secret(owner: str, name: str, data_dir: Path | None) -> None:
    """Seal a secret NAME for OWNER, read from the first line of stdin (never echoed or
    printed; only its ciphertext is stored)."""
    value = sys.stdin.readline().rstrip("\r\n")
    with local_runtime(data_dir) as runtime:
        _agents(runtime).directory.set_secret(owner, name, value)
    click.echo(f"sealed {name} for {owner}")


@agent.command()
@click.argument("name")
@click.option("--dir", "parent", type=click.Path(path_type=Path, file_okay=False),
              default=Path("."), show_default=True, help="Where to create the project.")
def new(name: str, parent: Path) -> None:
    """Create a project for a new agent NAME: a package with the entry point, the agent
    and its tests (they pass as generated: `pip install -e '.[dev]' && pytest`)."""
    from tickethub.agents.template import new_project
    from tickethub.errors import TickethubError

    try:
        root = new_project(name, parent)
    except TickethubError as exc:
        raise output.Failure.of(exc) from exc
    click.echo(f"created {root}")
