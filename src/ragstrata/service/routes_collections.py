"""Collection and document routes: list collections, list/upload/delete documents. An upload is
staged under the tenant's staging folder with safe names and ingested by a background job
(202, ``Location: /v1/jobs/{job_id}``)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragstrata.errors import FileTooLargeError, RagError
from ragstrata.service.deps import (
    ERROR_RESPONSES,
    HEX16,
    CollectionName,
    Reader,
    Writer,
    open_collection,
    state_of,
)
from ragstrata.service.errors import (
    InvalidRequestError,
    MalformedBodyError,
    UnsupportedMediaTypeError,
)
from ragstrata.service.handlers import request_error
from ragstrata.service.jobs import Job
from ragstrata.service.keys import Principal
from ragstrata.service.schemas import (
    CollectionDeleteResponse,
    CollectionOut,
    CollectionsResponse,
    DeleteResponse,
    DocumentsResponse,
    ErrorResponse,
    JobOut,
    TextUpload,
)
from ragstrata.service.state import ServiceState
from ragstrata.service.tenancy import FileOutcome
from ragstrata.service.uploads import check_file_type, media_type, safe_filename

_UPLOAD_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["files"],
                "properties": {
                    "files": {"type": "array", "items": {"type": "string", "format": "binary"}}
                },
            }
        },
        "application/json": {"schema": {"$ref": "#/components/schemas/TextUpload"}},
    },
}


router = APIRouter()


@router.get(
    "/v1/collections",
    response_model=CollectionsResponse,
    responses=ERROR_RESPONSES,
    tags=["collections"],
)
def list_collections(request: Request, principal: Reader) -> dict[str, Any]:
    """The caller's collections with their document and chunk counts."""
    out = []
    for coll in state_of(request).registry.collections(principal):
        docs, chunks = coll.counts()
        out.append({"name": coll.name, "documents": docs, "chunks": chunks})
    return {"tenant": principal.tenant, "collections": out}


@router.get(
    "/v1/collections/{name}",
    response_model=CollectionOut,
    responses=ERROR_RESPONSES,
    tags=["collections"],
)
def get_collection(request: Request, principal: Reader, name: CollectionName) -> dict[str, Any]:
    """One collection's counts."""
    coll = open_collection(request, principal, name)
    docs, chunks = coll.counts()
    return {"name": coll.name, "documents": docs, "chunks": chunks}


@router.get(
    "/v1/collections/{name}/documents",
    response_model=DocumentsResponse,
    responses=ERROR_RESPONSES,
    tags=["documents"],
)
def list_documents(request: Request, principal: Reader, name: CollectionName) -> dict[str, Any]:
    """The collection's indexed documents by file name."""
    coll = open_collection(request, principal, name)
    return {
        "collection": coll.name,
        "documents": [_document_json(d) for d in coll.documents()],
    }


@router.post(
    "/v1/collections/{name}/documents",
    status_code=202,
    response_model=JobOut,
    responses={
        **ERROR_RESPONSES,
        413: {"model": ErrorResponse, "description": "body over service.max_upload_bytes"},
        415: {
            "model": ErrorResponse,
            "description": "not multipart/JSON, or no file type fits",
        },
    },
    tags=["documents"],
    openapi_extra={"requestBody": _UPLOAD_BODY},
)
async def upload(request: Request, principal: Writer, name: CollectionName) -> JSONResponse:
    """Upload files (``multipart/form-data``, field ``files``) or JSON text documents.
    Creates the collection if needed, stages the files and returns the ingestion job (202);
    poll ``GET /v1/jobs/{job_id}`` for progress. A bad file is reported in the job and
    costs only itself; a first upload whose every file fails leaves no collection behind.
    429 when the tenant already has ``service.max_jobs_per_tenant`` jobs queued or running."""
    state = state_of(request)
    await run_in_threadpool(state.registry.check_access, principal, name)
    state.jobs.check_capacity(principal.tenant)  # 429 before anything is read or staged
    job_id = state.jobs.new_id()
    staging = state.registry.staging_dir(principal) / job_id
    try:
        staged, rejected = await _stage(request, state, staging)
        if not staged:
            raise _nothing_accepted(rejected)
        job = await run_in_threadpool(_submit, state, principal, name, job_id, staged, rejected)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return JSONResponse(
        job.to_json(), status_code=202, headers={"Location": f"/v1/jobs/{job.job_id}"}
    )


@router.delete(
    "/v1/collections/{name}",
    response_model=CollectionDeleteResponse,
    responses=ERROR_RESPONSES,
    tags=["collections"],
)
def delete_collection(request: Request, principal: Writer, name: CollectionName) -> dict[str, Any]:
    """Delete the collection with its documents, index and uploaded files. Its queued
    ingestion jobs are cancelled; a slice already running stops at its next group of chunks
    embedded (seconds). The name is free again afterwards."""
    state = state_of(request)

    def cancel() -> int:
        return state.jobs.cancel_collection(
            principal.tenant, name, reason=f"collection {name!r} was deleted"
        )

    docs, chunks, cancelled = state.registry.delete(principal, name, cancel_jobs=cancel)
    return {
        "deleted": {"name": name, "documents": docs, "chunks": chunks},
        "jobs_cancelled": cancelled,
    }


@router.delete(
    "/v1/collections/{name}/documents/{doc_id}",
    response_model=DeleteResponse,
    responses=ERROR_RESPONSES,
    tags=["documents"],
)
def delete_document(
    request: Request,
    principal: Writer,
    name: CollectionName,
    doc_id: Annotated[str, PathParam(pattern=f"^{HEX16}$")],
) -> dict[str, Any]:
    """Remove a document's chunks from the index and its uploaded file."""
    info = open_collection(request, principal, name).delete_document(doc_id)
    return {"deleted": _document_json(info)}


# ---------------------------------------------------------------------------- uploads
async def _stage(
    request: Request, state: ServiceState, staging: Path
) -> tuple[list[Path], list[FileOutcome]]:
    """Write the request's documents under ``staging`` with safe names; returns the staged
    paths and the files refused by name/type checks."""
    kind = media_type(request.headers.get("content-type"))
    svc = state.config.service
    items: list[tuple[str, str | None, UploadFile | bytes]] = []
    if kind == "multipart/form-data":
        try:
            form = await request.form(
                max_files=svc.max_upload_files, max_fields=svc.max_upload_files
            )
        except StarletteHTTPException as exc:  # malformed multipart
            raise InvalidRequestError(f"malformed multipart body: {exc.detail}") from exc
        for field, value in form.multi_items():
            if field not in ("files", "file"):
                raise InvalidRequestError(
                    f"unknown form field {field[:40]!r}; send files as 'files'"
                )
            if not isinstance(value, UploadFile):
                raise InvalidRequestError("form field 'files' must be a file, not a text value")
            items.append((value.filename or "", value.content_type, value))
    elif kind == "application/json":
        body = await request.body()
        if not body.strip():
            raise MalformedBodyError("the body is empty; send a JSON object")
        try:
            upload = TextUpload.model_validate_json(body)
        except ValidationError as exc:
            raise request_error(exc.errors()) from exc
        if len(upload.documents) > svc.max_upload_files:
            raise InvalidRequestError(
                f"{len(upload.documents)} documents exceed service.max_upload_files="
                f"{svc.max_upload_files}"
            )
        items = [(d.name, None, d.text.encode("utf-8")) for d in upload.documents]
    else:
        raise UnsupportedMediaTypeError(
            f"content type {kind or '(none)'!r} is not accepted; send multipart/form-data "
            '(field \'files\') or application/json ({"documents": [{"name", "text"}]})'
        )
    if not items:
        raise InvalidRequestError("no files in the upload; send at least one under 'files'")
    staged: list[Path] = []
    rejected: list[FileOutcome] = []
    seen: set[str] = set()
    for position, (raw_name, content_type, content) in enumerate(items, 1):
        name = safe_filename(raw_name)
        try:
            check_file_type(name, content_type)
        except UnsupportedMediaTypeError as exc:
            rejected.append(FileOutcome(name, "failed", exc.code, str(exc.args[0])))
            continue
        if name in seen:
            reason = (
                f"duplicate name in upload: file {position} of the upload was skipped, the "
                "first file of this name is the one indexed"
            )
            rejected.append(FileOutcome(name, "failed", InvalidRequestError.code, reason))
            continue
        limit = state.config.ingest.max_file_bytes
        size = len(content) if isinstance(content, bytes) else _size_of(content)
        if size > limit:  # known now: no job needed to say so (it said so later)
            reason = (
                f"{size} bytes exceeds max_file_bytes={limit}; split the file or raise "
                "ingest.max_file_bytes on the server"
            )
            rejected.append(FileOutcome(name, "failed", FileTooLargeError.code, reason))
            continue
        seen.add(name)
        target = staging / name
        await run_in_threadpool(_write, target, content)
        staged.append(target)
    return staged, rejected


def _submit(
    state: ServiceState,
    principal: Principal,
    name: str,
    job_id: str,
    staged: list[Path],
    rejected: list[FileOutcome],
) -> Job:
    """Create the collection if needed and queue the job, the collection pinned meanwhile so
    that another job's failure cannot discard it in between."""
    with state.registry.pinned(principal, name, create=True) as coll:
        return state.jobs.submit(job_id, coll, staged, rejected=rejected)


def _size_of(upload: UploadFile) -> int:
    """Bytes of an uploaded file (spooled by the form parser)."""
    if upload.size is not None:
        return upload.size
    upload.file.seek(0, 2)
    return upload.file.tell()


def _write(target: Path, content: UploadFile | bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as out:
        if isinstance(content, bytes):
            out.write(content)
        else:
            content.file.seek(0)
            shutil.copyfileobj(content.file, out, 1 << 20)


def _nothing_accepted(rejected: Sequence[FileOutcome]) -> RagError:
    detail = "; ".join(  # a reason that already names its file is not prefixed again
        r.reason if r.reason.startswith(f"{r.name}: ") else f"{r.name}: {r.reason}"
        for r in rejected[:10]
    )
    if rejected and all(r.code == UnsupportedMediaTypeError.code for r in rejected):
        return UnsupportedMediaTypeError(f"no file of the upload can be ingested: {detail}")
    if rejected and all(r.code == FileTooLargeError.code for r in rejected):  # 422, its code
        first, others = rejected[0], [r.name for r in rejected[1:]]
        more = f"; also over the limit: {', '.join(others[:9])}" if others else ""
        return FileTooLargeError(first.name, first.reason + more)
    return InvalidRequestError(f"no file of the upload can be ingested: {detail}")


def _document_json(info: Any) -> dict[str, Any]:
    return {
        "doc_id": info.doc_id,
        "name": info.name,
        "title": info.title,
        "chunks": info.chunks,
        "complete": info.complete,
    }
