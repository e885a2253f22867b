"""Ingestion job routes: the caller's recent jobs and one job's progress."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi import Path as PathParam

from ragstrata.service.deps import ERROR_RESPONSES, HEX16, JobReader, state_of
from ragstrata.service.schemas import JobOut, JobsResponse

router = APIRouter()


@router.get("/v1/jobs", response_model=JobsResponse, responses=ERROR_RESPONSES, tags=["jobs"])
def list_jobs(request: Request, principal: JobReader) -> dict[str, Any]:
    """The caller's recent ingestion jobs, newest first."""
    return {"jobs": state_of(request).jobs.for_tenant(principal)}


@router.get("/v1/jobs/{job_id}", response_model=JobOut, responses=ERROR_RESPONSES, tags=["jobs"])
def get_job(
    request: Request,
    principal: JobReader,
    job_id: Annotated[str, PathParam(pattern=f"^{HEX16}$")],
) -> dict[str, Any]:
    """An ingestion job's state, progress and per-file outcome."""
    return state_of(request).jobs.get(principal, job_id)
