"""The generated admin token's file: ``data_dir/admin-token``, readable by its owner only.

A generated admin token is shown once in ``serve``'s banner; it is also kept here, so it
is not lost when that banner never comes (the port was busy, the terminal was closed).
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_NAME = "admin-token"


def token_path(data_dir: Path) -> Path:
    return data_dir.resolve() / FILE_NAME


def save(data_dir: Path, token: str) -> Path:
    """Write ``token`` to the file (mode 600 from the start, never wider) and return its
    path; an older file is replaced."""
    path = token_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(token + "\n")
    return path
