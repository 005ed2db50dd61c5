"""SLO profiles, rankings by admissible throughput, and a point's admissibility and cost.

Profiles and rankings are readable by any token (rankings are built from accepted points,
which are published); operators alone create and replace profiles. A point's admissibility
and cost follow the point's own rule (`orchestrator.runs.points.get_point`): published ones
any token, others whoever may read their submission.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel

from api.deps import IdPath, PageDep, PrincipalDep, SessionDep
from orchestrator.cost import service as cost_service
from orchestrator.cost.schemas import PointCostPublic, cost_public
from orchestrator.slo import ranking, service
from orchestrator.slo.schemas import (
    NAME_PATTERN,
    AdmissibilityPublic,
    RankingPublic,
    SloProfileCreate,
    SloProfilePublic,
    SloProfileUpdate,
    admissibility_public,
    ranking_public,
)

router = APIRouter(prefix="/v1", tags=["slo"])

WORKLOAD_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"

ProfileName = Annotated[str, Path(pattern=NAME_PATTERN, max_length=64)]
SloQuery = Annotated[
    str | None,
    Query(pattern=NAME_PATTERN, max_length=64, description="SLO profile; default the programme's"),
]


class SloProfileList(BaseModel):
    items: list[SloProfilePublic]
    total: int
    limit: int
    offset: int


@router.get("/slo-profiles", response_model=SloProfileList)
def list_profiles(session: SessionDep, _: PrincipalDep, page: PageDep) -> SloProfileList:
    rows = service.list_profiles(session)
    return SloProfileList(
        items=[SloProfilePublic.model_validate(r) for r in rows[page.offset :][: page.limit]],
        total=len(rows),
        limit=page.limit,
        offset=page.offset,
    )


@router.get("/slo-profiles/{name}", response_model=SloProfilePublic)
def get_profile(name: ProfileName, session: SessionDep, _: PrincipalDep) -> SloProfilePublic:
    return SloProfilePublic.model_validate(service.get_profile(session, name=name))


@router.post("/slo-profiles", status_code=201, response_model=SloProfilePublic)
def create_profile(
    body: SloProfileCreate, session: SessionDep, principal: PrincipalDep
) -> SloProfilePublic:
    row = service.create_profile(session, principal=principal, data=body)
    return SloProfilePublic.model_validate(row)


@router.put("/slo-profiles/{name}", response_model=SloProfilePublic)
def replace_profile(
    name: ProfileName, body: SloProfileUpdate, session: SessionDep, principal: PrincipalDep
) -> SloProfilePublic:
    row = service.update_profile(session, principal=principal, name=name, data=body)
    return SloProfilePublic.model_validate(row)


@router.get("/rankings", response_model=RankingPublic)
def get_ranking(
    session: SessionDep,
    _: PrincipalDep,
    workload: Annotated[str, Query(min_length=1, max_length=100, pattern=WORKLOAD_PATTERN)],
    slo: SloQuery = None,
    workload_version: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
) -> RankingPublic:
    result = ranking.rank(
        session, workload_name=workload, slo_name=slo, workload_version=workload_version
    )
    return ranking_public(result)


@router.get("/points/{point_id}/admissibility", response_model=AdmissibilityPublic)
def get_admissibility(
    point_id: IdPath, session: SessionDep, principal: PrincipalDep, slo: SloQuery = None
) -> AdmissibilityPublic:
    point, profile, verdict, note = service.point_admissibility(
        session, principal=principal, point_id=point_id, slo_name=slo
    )
    assert point.id is not None
    return admissibility_public(verdict, point_id=point.id, slo=profile.name, quality_note=note)


@router.get("/points/{point_id}/cost", response_model=PointCostPublic)
def get_cost(
    point_id: IdPath, session: SessionDep, principal: PrincipalDep, slo: SloQuery = None
) -> PointCostPublic:
    cost, note = cost_service.point_cost(
        session, principal=principal, point_id=point_id, slo_name=slo
    )
    return cost_public(cost, quality_note=note)
