"""Artifacts: upload (multipart, ``file`` and optional ``relative_path``), list (paged
as the spec says) and download (streamed, ``application/octet-stream``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, UploadFile
from fastapi.responses import StreamingResponse
from starlette.concurrency import iterate_in_threadpool

from tickethub.api.agent_protocol.context import Me, Services
from tickethub.api.agent_protocol.errors import UPLOAD_OPERATION, AgentProtocolRoute
from tickethub.api.agent_protocol.schemas import (
    Artifact,
    TaskArtifactsListResponse,
    artifact_out,
    pagination,
)
from tickethub.api.agent_protocol.tasks import INVALID, NOT_FOUND, Page, PageSize
from tickethub.api.deps import call
from tickethub.api.responses import FastJSONResponse
from tickethub.errors import ValidationFailed

router = APIRouter(route_class=AgentProtocolRoute, tags=["agent"])


@router.get("/agent/tasks/{task_id}/artifacts", operation_id="listAgentTaskArtifacts",
            response_model=TaskArtifactsListResponse, responses={**NOT_FOUND, **INVALID},
            summary="List all artifacts that have been created for the given task.")
async def list_artifacts(task_id: str, svc: Services, me: Me,
                         current_page: Page = 1, page_size: PageSize = 10) -> FastJSONResponse:
    records, total = await call(svc.artifacts.page, task_id, (current_page - 1) * page_size,
                                page_size, me)
    return FastJSONResponse({"artifacts": [artifact_out(a) for a in records],
                         "pagination": pagination(total, current_page, page_size)})


@router.post("/agent/tasks/{task_id}/artifacts", operation_id=UPLOAD_OPERATION,
             response_model=Artifact, responses={**NOT_FOUND, **INVALID, 403: {
                 "description": "The task is readable but not yours: only its creator, a "
                 "responder or the in-hub worker add artifacts."}, 413: {
                 "description": "The file is over ap_max_artifact_bytes."}},
             summary="Upload an artifact for the specified task.")
async def upload_artifact(
    task_id: str, svc: Services, me: Me,
    file: Annotated[UploadFile | None, File(description="File to upload.")] = None,
    relative_path: Annotated[str | None, Form(
        description="Relative path of the artifact in the agent's workspace; must stay "
        "inside the task's folder.")] = None,
) -> FastJSONResponse:
    """Stored durably under the data directory. From the task's creator the artifact is
    the client's (``agent_created: false``); from a responder, an admin or the in-hub
    worker it is the agent's and shows in the task's newest step. Anyone else: 404 for a
    task it may not read, 403 for one it reads but did not create."""
    if file is None:
        raise ValidationFailed("the form needs a 'file' part", field="file")
    try:
        record = await call(svc.artifacts.upload, me, task_id, file.filename, relative_path,
                            file.file)
    finally:
        await file.close()
    return FastJSONResponse(artifact_out(record))


@router.get("/agent/tasks/{task_id}/artifacts/{artifact_id}",
            operation_id="downloadAgentTaskArtifact", response_class=StreamingResponse,
            responses={**NOT_FOUND, 200: {"content": {"application/octet-stream": {}},
                                          "description": "The artifact's bytes."}},
            summary="Download a specified artifact.")
async def download_artifact(task_id: str, artifact_id: str, svc: Services, me: Me
                            ) -> StreamingResponse:
    record = await call(svc.artifacts.get, task_id, artifact_id, me)
    source = await call(svc.artifacts.open, record)
    quoted = record.file_name.replace("\\", "_").replace('"', "_")
    headers = {"Content-Length": str(record.size),
               "Content-Disposition": f'attachment; filename="{_ascii(quoted)}"; '
                                      f"filename*=UTF-8''{_pct(record.file_name)}"}
    return StreamingResponse(iterate_in_threadpool(svc.artifacts.chunks(source)),
                             media_type="application/octet-stream", headers=headers)


def _ascii(name: str) -> str:
    return name.encode("ascii", "replace").decode().replace("?", "_")


def _pct(name: str) -> str:
    from urllib.parse import quote

    return quote(name, safe="")
