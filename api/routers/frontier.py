"""/v1/frontiers: published frontiers — any authenticated token may read them.

A system's curve on a workload, current or version N, on selectable axes, with the step
function ready to plot and, with `slo=NAME`, each member's admissibility; its history; and
several systems compared on one workload.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from api.deps import IdPath, PrincipalDep, SessionDep
from orchestrator.db import MAX_ID
from orchestrator.errors import Invalid
from orchestrator.frontier import pareto, service
from orchestrator.frontier.schemas import (
    ComparisonPublic,
    FrontierHistoryPublic,
    FrontierPublic,
    comparison_public,
    frontier_public,
    version_public,
)
from orchestrator.slo.schemas import NAME_PATTERN as SLO_NAME_PATTERN

router = APIRouter(prefix="/v1/frontiers", tags=["frontiers"])

_AXES_HELP = "one of: " + ", ".join(sorted(pareto.AXES))
# a workload's name (configs/workloads: lower case, digits, . _ -)
WORKLOAD_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
WorkloadPath = Annotated[str, Path(pattern=WORKLOAD_PATTERN, max_length=100)]
XQuery = Annotated[str | None, Query(max_length=40, description=_AXES_HELP)]
YQuery = Annotated[str | None, Query(max_length=40, description=_AXES_HELP)]
WorkloadVersionQuery = Annotated[
    int | None,
    Query(ge=1, le=MAX_ID, description="workload version; default the newest with a frontier"),
]


def _axes_checked(x: str | None, y: str | None) -> None:
    """An unknown axis is the caller's mistake: 422 naming the query field."""
    try:
        service.resolve_axes(x, y)
    except pareto.UnknownAxis as exc:
        raise Invalid(str(exc), field=f"query.{exc.field}") from None


@router.get("/compare", response_model=ComparisonPublic)
def compare(
    session: SessionDep,
    _principal: PrincipalDep,
    workload: Annotated[str, Query(pattern=WORKLOAD_PATTERN, max_length=100)],
    system_id: Annotated[list[int], Query(min_length=1, max_length=20)],
    x: XQuery = None,
    y: YQuery = None,
    workload_version: WorkloadVersionQuery = None,
) -> ComparisonPublic:
    for sid in system_id:
        if not 1 <= sid <= MAX_ID:
            raise Invalid(f"system_id {sid} is not an id", field="query.system_id")
    _axes_checked(x, y)
    result = service.compare(
        session,
        workload_name=workload,
        system_ids=system_id,
        axes=(x, y),
        workload_version=workload_version,
    )
    return comparison_public(result)


@router.get("/{system_id}/{workload}", response_model=FrontierPublic)
def get_frontier(
    system_id: IdPath,
    workload: WorkloadPath,
    session: SessionDep,
    _principal: PrincipalDep,
    version: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
    x: XQuery = None,
    y: YQuery = None,
    slo: Annotated[
        str | None,
        Query(pattern=SLO_NAME_PATTERN, max_length=64, description="annotate admissibility"),
    ] = None,
    workload_version: WorkloadVersionQuery = None,
) -> FrontierPublic:
    _axes_checked(x, y)
    view = service.view(
        session,
        system_id=system_id,
        workload_name=workload,
        workload_version=workload_version,
        version=version,
        x=x,
        y=y,
    )
    if slo is None:
        return frontier_public(view)
    name, note, verdicts = service.admissibility(session, view=view, slo_name=slo)
    return frontier_public(view, slo=name, quality_note=note, verdicts=verdicts)


@router.get("/{system_id}/{workload}/versions", response_model=FrontierHistoryPublic)
def get_history(
    system_id: IdPath,
    workload: WorkloadPath,
    session: SessionDep,
    _principal: PrincipalDep,
    workload_version: WorkloadVersionQuery = None,
) -> FrontierHistoryPublic:
    system, w, rows = service.versions(
        session, system_id=system_id, workload_name=workload, workload_version=workload_version
    )
    assert system.id is not None and w.id is not None
    return FrontierHistoryPublic(
        system_id=system.id,
        workload=w.name,
        workload_id=w.id,
        workload_version=w.version,
        items=[version_public(r) for r in rows],
    )
