"""``tickethub``: run the hub and talk to it from a terminal."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import TypedDict

import click

from tickethub import __version__
from tickethub.cli import asking, output, reading, responding, tokens


@click.group(cls=output.Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tickethub")
def cli() -> None:
    """tickethub: agents ask, people answer, agents go on.

    Commands that talk to a running hub find it through TICKETHUB_URL and
    TICKETHUB_TOKEN (or --url and --token). Errors are one line on stderr; exit codes:
    0 ok, 2 bad command line, 3 not found, 4 not allowed, 5 conflict, 6 refused input,
    7 hub unreachable; `ask --wait`/`wait`: 10 denied, 11 expired, 12 cancelled,
    13 still waiting after --timeout.

    \b
    A 30-second tour (two terminals):
      tickethub serve                                   # prints the admin token
      tickethub ask "Which region?" --wait              # terminal 1 blocks...
      tickethub list --status open                      # terminal 2
      tickethub answer 1 "eu-west-1"                    # ...and terminal 1 prints it
    """


class _ServeOverrides(TypedDict, total=False):
    """The settings ``serve`` was given on its command line; an option left out is absent
    (not None), so the environment and the defaults still decide it."""

    host: str
    port: int
    data_dir: Path
    workers: int


def _serve_overrides(host: str | None, port: int | None, data_dir: Path | None,
                     workers: int | None) -> _ServeOverrides:
    overrides: _ServeOverrides = {}
    if host is not None:
        overrides["host"] = host
    if port is not None:
        overrides["port"] = port
    if data_dir is not None:
        overrides["data_dir"] = data_dir
    if workers is not None:
        overrides["workers"] = workers
    return overrides


@cli.command()
@click.option("--host", default=None, help="Address to listen on [default: 127.0.0.1].")
@click.option("--port", type=int, default=None, help="Port to listen on [default: 8080].")
@click.option("--data-dir", type=click.Path(path_type=Path), default=None,
              help="Folder for the database and files [default: ./data].")
@click.option("--workers", type=int, default=None,
              help="Hub processes sharing the port [default: 1, TICKETHUB_WORKERS]. More "
                   "than one needs PostgreSQL; see docs/operations.md.")
def serve(host: str | None, port: int | None, data_dir: Path | None,
          workers: int | None) -> None:
    """Run the hub in the foreground (SQLite in the data folder unless
    TICKETHUB_DATABASE_URL says otherwise).

    With --workers N the hub runs as N processes on one port (on PostgreSQL): waiters
    are woken across them, deadlines and deliveries are claimed so each happens once,
    and one process (the leader) runs the mail, GitHub, chat and schedule loops. A
    worker that dies is started again; Ctrl-C stops them all."""
    from tickethub.server import workers as processes
    from tickethub.server.main import serve as run
    from tickethub.settings import Settings

    overrides = _serve_overrides(host, port, data_dir, workers)
    if workers is not None and workers < 1:
        output.bad_input("--workers must be at least 1", "invalid_option", "workers")
    settings = Settings(**overrides)
    if settings.workers == 1:
        run(settings)
        return
    refused = processes.refusal(settings, settings.workers)
    if refused:
        output.bad_input(refused, "invalid_option", "workers")
    raise SystemExit(processes.serve_workers(settings, settings.workers))


from tickethub.cli.mcp import mcp as _mcp_command  # noqa: E402

cli.add_command(_mcp_command)


# Talking to a running hub (cli/asking.py, cli/responding.py, cli/reading.py, cli/tokens.py)
cli.add_command(asking.ask)
cli.add_command(asking.wait)
for _command in (*responding.COMMANDS, *reading.COMMANDS):
    cli.add_command(_command)
cli.add_command(tokens.token)

from tickethub.cli.users import user as _user_command  # noqa: E402

cli.add_command(_user_command)  # web inbox sign-in (cli/users.py)
from tickethub.cli.mail import mail as _mail_command  # noqa: E402

cli.add_command(_mail_command)  # mailbox → issue tree (cli/mail.py, docs/mail.md)

from tickethub.cli.github import github as _github_command  # noqa: E402

cli.add_command(_github_command)  # GitHub channel (cli/github.py, docs/github.md)

from tickethub.cli.agents import agent as _agent_command  # noqa: E402

cli.add_command(_agent_command)  # personal agents (cli/agents.py, docs/personal-agents.md)

from tickethub.cli.ops import COMMANDS as _ops_commands  # noqa: E402

for _command in _ops_commands:  # backup, restore, doctor (cli/ops.py, docs/operations.md)
    cli.add_command(_command)


def main() -> None:
    # A shell starts background jobs with SIGINT ignored, and Python then never turns
    # Ctrl-C into KeyboardInterrupt: `wait` and `watch` could not be stopped with it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    cli()


if __name__ == "__main__":
    main()
