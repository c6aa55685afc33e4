"""Where raw mail comes from: an mbox file or a Maildir (IMAP lives in ``mail.imap``).

A source yields :class:`RawMail` in mailbox order. File sources keep no cursor of their
own: the Message-IDs already processed are their cursor, so a re-run or a resumed run
skips what is done and a changed file is still read correctly.
"""

from __future__ import annotations

import mailbox
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tickethub.errors import ValidationFailed


@dataclass(frozen=True, slots=True)
class RawMail:
    key: str
    raw: bytes
    uid: int | None = None


class FileSource:
    """An mbox file or a Maildir folder, chosen by what ``path`` is."""

    def __init__(self, path: Path) -> None:
        if not path.exists():
            raise ValidationFailed(f"{path} does not exist", field="source")
        self.path = path
        self.is_maildir = path.is_dir()
        if self.is_maildir and not (path / "cur").is_dir() and not (path / "new").is_dir():
            raise ValidationFailed(f"{path} is a folder but not a Maildir (no cur/ or new/)",
                                   field="source")
        kind = "maildir" if self.is_maildir else "mbox"
        self.name = f"{kind}:{path.resolve()}"

    def _box(self) -> mailbox.Maildir | mailbox.mbox:
        if self.is_maildir:
            return mailbox.Maildir(self.path, factory=None, create=False)
        return mailbox.mbox(self.path, factory=None, create=False)

    def __len__(self) -> int:
        return len(self._box())

    def __iter__(self) -> Iterator[RawMail]:
        box = self._box()
        keys = list(box.keys())
        if self.is_maildir:
            keys.sort()  # Maildir names start with the delivery time
        for key in keys:
            try:
                raw = box.get_bytes(key)
            except (KeyError, OSError):
                continue  # removed while reading
            yield RawMail(str(key), raw)
