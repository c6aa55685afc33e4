"""The URL the hub was last served at, kept in ``data_dir/served-url``.

``serve`` writes it once it listens, so commands that work on the data folder directly
(``tickethub user set-password``, ``user login-link``) print links with the port the hub
really uses, not the default, when no public URL or port is configured for them.
"""

from __future__ import annotations

from pathlib import Path

FILE_NAME = "served-url"


def save(data_dir: Path, url: str) -> None:
    (data_dir / FILE_NAME).write_text(url + "\n")


def load(data_dir: Path) -> str | None:
    """The last served URL, or ``None`` if the hub was never served from here."""
    try:
        url = (data_dir / FILE_NAME).read_text().strip()
    except OSError:
        return None
    return url if url.startswith(("http://", "https://")) else None
