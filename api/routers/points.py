"""/v1/points"""

from __future__ import annotations

from fastapi import APIRouter, Query
from pydantic import BaseModel

from api.deps import IdPath, PageDep, PrincipalDep, SessionDep
from orchestrator.db import MAX_ID
from orchestrator.runs import points
from orchestrator.runs.models import PointState
from orchestrator.runs.schemas import PointPublic

router = APIRouter(prefix="/v1/points", tags=["points"])


class PointList(BaseModel):
    items: list[PointPublic]
    total: int
    limit: int
    offset: int


@router.get("", response_model=PointList)
def list_points(
    session: SessionDep,
    principal: PrincipalDep,
    page: PageDep,
    system_id: int | None = Query(None, ge=1, le=MAX_ID),
    submission_id: int | None = Query(None, ge=1, le=MAX_ID),
    state: PointState | None = None,
) -> PointList:
    rows, total = points.list_points(
        session,
        principal=principal,
        limit=page.limit,
        offset=page.offset,
        system_id=system_id,
        submission_id=submission_id,
        state=state,
    )
    return PointList(
        items=[PointPublic.model_validate(r) for r in rows],
        total=total,
        limit=page.limit,
        offset=page.offset,
    )


@router.get("/{point_id}", response_model=PointPublic)
def get_point(point_id: IdPath, session: SessionDep, principal: PrincipalDep) -> PointPublic:
    return PointPublic.model_validate(
        points.get_point(session, principal=principal, point_id=point_id)
    )
