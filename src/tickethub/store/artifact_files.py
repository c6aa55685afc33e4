"""Artifact files under the data directory: ``<root>/<task_id>/<artifact_id>``.

Writes go to a temporary file in the same folder, are fsynced, then renamed into place,
so a crash never leaves a half-written artifact under its final name."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path
from typing import BinaryIO

_KEY = re.compile(r"^[A-Za-z0-9-]{1,64}/[A-Za-z0-9-]{1,64}$")
_CHUNK = 1024 * 1024


class FileArtifactStorage:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        if not _KEY.match(key):  # keys are made of our own ids; anything else is a bug
            raise ValueError(f"not an artifact key: {key!r}")
        return self.root / key

    def save(self, key: str, source: BinaryIO, max_bytes: int) -> int | None:
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".upload-")
        size = 0
        try:
            with os.fdopen(fd, "wb") as out:
                while chunk := source.read(_CHUNK):
                    size += len(chunk)
                    if size > max_bytes:
                        raise _TooLarge
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
        except _TooLarge:
            os.unlink(tmp)
            return None
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return size

    def open(self, key: str) -> BinaryIO:
        return self._path(key).open("rb")

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._path(key).unlink()


class _TooLarge(Exception):
    pass
