"""For commands that work on the hub's own database (users, mail, github) rather than
through a running hub's API."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tickethub.cli import output
from tickethub.errors import TickethubError

if TYPE_CHECKING:
    from tickethub.server.runtime import HubRuntime


@contextmanager
def local_runtime(data_dir: Path | None) -> Iterator[HubRuntime]:
    """A hub runtime on the configured database (``--data-dir`` overrides the data
    folder), closed afterwards; hub errors become the CLI's one-line failure."""
    from tickethub.server import served_url
    from tickethub.server.runtime import HubRuntime
    from tickethub.settings import Settings

    # A --data-dir left out is not passed at all, so TICKETHUB_DATA_DIR still decides.
    settings = Settings(data_dir=data_dir) if data_dir else Settings()
    if not {"public_url", "port"} & settings.model_fields_set:
        # Links should point where `serve` really listens (it may have had --port).
        url = served_url.load(settings.data_dir)
        if url:
            settings = settings.model_copy(update={"public_url": url})
    runtime = HubRuntime(settings)
    try:
        yield runtime
    except TickethubError as exc:
        raise output.Failure.of(exc) from exc
    finally:
        runtime.close()
