"""Artifacts of Agent Protocol tasks: files stored durably (a database row plus a file).

Files are stored under a key made of the task and artifact ids, never under a name the
client chose, so no upload can write outside its task's folder. ``relative_path`` is
kept as metadata, and one that would escape the task's folder (absolute, ``..``, a
drive or a backslash path) is refused anyway, so a client never gets back a path that
would be unsafe to use.

Who may upload: the task's creator (its client; the artifact is the client's,
``agent_created`` false), a responder or admin, or the in-hub worker (a responder);
those artifacts are the agent's and belong to the task's newest step. Anyone else gets
404 for a task it may not read (``domain.visibility``), as for an unknown task, and 403
for one it reads (e.g. assigned to it) but does not own. Listing and downloading need
only read access.
"""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Callable, Iterator
from typing import BinaryIO, Protocol

from tickethub.domain.actors import Actor, require_owner_or_responder
from tickethub.domain.tickets import Ticket
from tickethub.errors import NotFound, PayloadTooLarge, ValidationFailed
from tickethub.services.agent_tasks import ApStore, ApUnitOfWork, ArtifactRecord, TaskRecord
from tickethub.services.ports import Clock
from tickethub.services.visibility import readable

MAX_FILE_NAME = 255
MAX_RELATIVE_PATH = 1000


class ArtifactStorage(Protocol):
    def save(self, key: str, source: BinaryIO, max_bytes: int) -> int | None:
        """Copy ``source`` durably (fsync) to ``key``; the size written, or ``None`` (and
        nothing kept) when it is over ``max_bytes``."""
        ...

    def open(self, key: str) -> BinaryIO:
        """The stored bytes; ``FileNotFoundError`` when gone."""
        ...

    def delete(self, key: str) -> None: ...


def safe_relative_path(value: str | None) -> str | None:
    """``value`` normalized (``a/./b/`` → ``a/b``), or ``ValidationFailed`` when it
    would leave the task's folder. Empty means none."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if len(text) > MAX_RELATIVE_PATH:
        raise ValidationFailed(f"relative_path is longer than {MAX_RELATIVE_PATH} characters",
                               field="relative_path")
    bad = ("\\" in text or "\0" in text or text.startswith(("/", "~"))
           or (len(text) > 1 and text[1] == ":"))
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if bad or ".." in parts:
        raise ValidationFailed(
            "relative_path must stay inside the task's folder (no '..', no absolute path)",
            field="relative_path",
        )
    return posixpath.join(*parts) if parts else None


def safe_file_name(value: str | None) -> str:
    """The file's own name: no folders, no control characters, at most 255 characters."""
    name = (value or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    if name in ("", ".", "..") or any(ord(c) < 32 for c in name):
        raise ValidationFailed("the uploaded file needs a plain file name", field="file")
    if len(name) > MAX_FILE_NAME:
        raise ValidationFailed(f"the file name is longer than {MAX_FILE_NAME} characters",
                               field="file")
    return name


class ArtifactService:
    def __init__(self, store: ApStore, storage: ArtifactStorage, clock: Clock,
                 max_bytes: int, new_id: Callable[[], str] = lambda: str(uuid.uuid4())
                 ) -> None:
        self._store = store
        self._storage = storage
        self._clock = clock
        self.max_bytes = max_bytes
        self._new_id = new_id

    def upload(self, actor: Actor, task_id: str, file_name: str | None,
               relative_path: str | None, source: BinaryIO) -> ArtifactRecord:
        """Store a file for the task. The task must exist (checked before any byte is
        written); an oversize file leaves nothing behind."""
        name = safe_file_name(file_name)
        path = safe_relative_path(relative_path)
        with self._store.read() as uow:
            _, ticket = self._readable_task(uow, actor, task_id)
        require_owner_or_responder(actor, ticket.created_by, "adding an artifact")
        agent_created = actor.name != ticket.created_by
        artifact_id = self._new_id()
        key = f"{task_id}/{artifact_id}"
        size = self._storage.save(key, source, self.max_bytes)
        if size is None:
            raise PayloadTooLarge(f"the file is over the limit of {self.max_bytes} bytes",
                                  field="file", max_bytes=self.max_bytes)
        try:
            with self._store.write() as uow:
                step = uow.ap.latest_step(task_id) if agent_created else None
                record = ArtifactRecord(
                    artifact_id, task_id, step.step_id if step else None, agent_created,
                    name, path, size, key, actor.name, self._clock.now(),
                )
                uow.ap.add_artifact(record)
        except BaseException:
            self._storage.delete(key)
            raise
        return record

    def get(self, task_id: str, artifact_id: str, viewer: Actor | None = None
            ) -> ArtifactRecord:
        with self._store.read() as uow:
            self._readable_task(uow, viewer, task_id)
            record = uow.ap.get_artifact(task_id, artifact_id)
        if record is None:
            raise NotFound(f"task {task_id} has no artifact {artifact_id}",
                           field="artifact_id")
        return record

    def page(self, task_id: str, offset: int, limit: int, viewer: Actor | None = None
             ) -> tuple[list[ArtifactRecord], int]:
        with self._store.read() as uow:
            self._readable_task(uow, viewer, task_id)
            return uow.ap.artifact_page(task_id, offset, limit)

    @staticmethod
    def _readable_task(uow: ApUnitOfWork, viewer: Actor | None, task_id: str
                       ) -> tuple[TaskRecord, Ticket]:
        """The task and its ticket; ``NotFound`` when unknown or unreadable to
        ``viewer`` (``None``: no read check)."""
        task = uow.ap.get_task(task_id)
        ticket = uow.tickets.get(task.ticket_id) if task is not None else None
        if task is None or ticket is None or (viewer is not None and not readable(
                uow.tickets, viewer, ticket, ticket.assignee)):
            raise NotFound(f"task {task_id} does not exist", field="task_id")
        return task, ticket

    def open(self, record: ArtifactRecord) -> BinaryIO:
        try:
            return self._storage.open(record.storage_key)
        except FileNotFoundError:
            raise NotFound(f"the file of artifact {record.artifact_id} is gone",
                           field="artifact_id") from None

    @staticmethod
    def chunks(source: BinaryIO, size: int = 64 * 1024) -> Iterator[bytes]:
        with source:
            while chunk := source.read(size):
                yield chunk


