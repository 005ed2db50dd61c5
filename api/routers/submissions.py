"""/v1/submissions and their runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel

from api.deps import IdPath, PageDep, PrincipalDep, SessionDep
from orchestrator.db import MAX_ID
from orchestrator.errors import NotFound
from orchestrator.runs.models import Run
from orchestrator.submissions import service
from orchestrator.submissions.models import SubmissionState
from orchestrator.submissions.schemas import RunPublic, SubmissionCreate, SubmissionPublic

router = APIRouter(prefix="/v1", tags=["submissions"])


class SubmissionList(BaseModel):
    items: list[SubmissionPublic]
    total: int
    limit: int
    offset: int


@router.post("/submissions", status_code=201, response_model=SubmissionPublic)
def create_submission(
    body: SubmissionCreate,
    request: Request,
    response: Response,
    session: SessionDep,
    principal: PrincipalDep,
    idempotency_key: Annotated[
        str | None, Header(alias="Idempotency-Key", min_length=1, max_length=200)
    ] = None,
) -> SubmissionPublic:
    submission, created = service.create_submission(
        session,
        principal=principal,
        data=body,
        dispatcher=request.app.state.dispatcher,
        idempotency_key=idempotency_key,
    )
    if not created:
        response.status_code = 200
    return service.to_public(session, submission)


@router.get("/submissions", response_model=SubmissionList)
def list_submissions(
    session: SessionDep,
    principal: PrincipalDep,
    page: PageDep,
    system_id: int | None = Query(None, ge=1, le=MAX_ID),
    endpoint_id: int | None = Query(None, ge=1, le=MAX_ID),
    state: SubmissionState | None = None,
) -> SubmissionList:
    rows, total = service.list_submissions(
        session,
        principal=principal,
        limit=page.limit,
        offset=page.offset,
        system_id=system_id,
        endpoint_id=endpoint_id,
        state=state,
    )
    return SubmissionList(
        items=[service.to_public(session, r) for r in rows],
        total=total,
        limit=page.limit,
        offset=page.offset,
    )


@router.get("/submissions/{submission_id}", response_model=SubmissionPublic)
def get_submission(
    submission_id: IdPath, session: SessionDep, principal: PrincipalDep
) -> SubmissionPublic:
    sub = service.get_submission(session, principal=principal, submission_id=submission_id)
    return service.to_public(session, sub)


@router.post("/submissions/{submission_id}/cancel", response_model=SubmissionPublic)
def cancel_submission(
    submission_id: IdPath, session: SessionDep, principal: PrincipalDep
) -> SubmissionPublic:
    sub = service.cancel_submission(session, principal=principal, submission_id=submission_id)
    return service.to_public(session, sub)


@router.post("/submissions/{submission_id}/withdraw", response_model=SubmissionPublic)
def withdraw_submission(
    submission_id: IdPath, session: SessionDep, principal: PrincipalDep
) -> SubmissionPublic:
    sub = service.cancel_submission(
        session, principal=principal, submission_id=submission_id, withdraw=True
    )
    return service.to_public(session, sub)


def _run(session: SessionDep, principal: PrincipalDep, run_id: int) -> Run:
    run = session.get(Run, run_id)
    if run is None:
        raise NotFound(f"no run {run_id}")
    try:
        service.get_submission(session, principal=principal, submission_id=run.submission_id)
    except NotFound:  # the same answer as a missing run: say neither that it exists nor whose
        raise NotFound(f"no run {run_id}") from None
    return run


@router.get("/runs/{run_id}", response_model=RunPublic)
def get_run(run_id: IdPath, session: SessionDep, principal: PrincipalDep) -> RunPublic:
    return RunPublic.model_validate(_run(session, principal, run_id))


@router.get("/runs/{run_id}/result_summary.json")
def get_result_summary(
    run_id: IdPath, session: SessionDep, principal: PrincipalDep
) -> JSONResponse:
    run = _run(session, principal, run_id)
    path = (run.summary or {}).get("result_summary_path")
    if not path or not Path(path).is_file():
        raise NotFound(f"run {run_id} has no result yet")
    return JSONResponse(json.loads(Path(path).read_text()))


@router.get("/runs/{run_id}/records.npz")
def get_records(run_id: IdPath, session: SessionDep, principal: PrincipalDep) -> FileResponse:
    run = _run(session, principal, run_id)
    if not run.artifact_path or not Path(run.artifact_path).is_file():
        raise NotFound(f"run {run_id} has no records yet")
    return FileResponse(
        run.artifact_path,
        media_type="application/octet-stream",
        filename=f"run-{run_id}-records.npz",
        headers={"X-Checksum-SHA256": run.artifact_sha256 or ""},
    )
