"""``tickethub``: run the hub and talk to it from a terminal."""

from __future__ import annotations

from pathlib import Path

import click

from tickethub import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tickethub")
def cli() -> None:
    """tickethub: agents ask, people answer, agents go on.

    Commands that talk to a running hub find it through TICKETHUB_URL and
    TICKETHUB_TOKEN (or --url and --token).
    """


@cli.command()
@click.option("--host", default=None, help="Address to listen on [default: 127.0.0.1].")
@click.option("--port", type=int, default=None, help="Port to listen on [default: 8080].")
@click.option("--data-dir", type=click.Path(path_type=Path), default=None,
              help="Folder for the database and files [default: ./data].")
def serve(host: str | None, port: int | None, data_dir: Path | None) -> None:
    """Run the hub in the foreground (SQLite in the data folder unless
    TICKETHUB_DATABASE_URL says otherwise)."""
    from tickethub.server.main import serve as run
    from tickethub.settings import Settings

    overrides = {k: v for k, v in {"host": host, "port": port, "data_dir": data_dir}.items()
                 if v is not None}
    run(Settings(**overrides))


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
