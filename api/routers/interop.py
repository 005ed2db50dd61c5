"""interop routes (see orchestrator/interop): a point in MLPerf Endpoints file formats.

Readable by whoever may read the point: accepted points are published (any token); others
by their organisation, operators and viewers; a foreign unpublished point is 404, like a
missing one.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.deps import IdPath, PrincipalDep, SessionDep
from orchestrator.interop.export import result_summary_v1
from orchestrator.interop.export_v07 import run_metadata_v07
from orchestrator.runs.points import get_point

router = APIRouter(prefix="/v1", tags=["interop"])


@router.get("/points/{point_id}/run_metadata.json")
def get_run_metadata(
    point_id: IdPath, session: SessionDep, principal: PrincipalDep
) -> JSONResponse:
    """The point as a v0.7 `run_metadata.json` (seconds, milliseconds)."""
    point = get_point(session, principal=principal, point_id=point_id)
    return JSONResponse(run_metadata_v07(session, point=point))


@router.get("/points/{point_id}/result_summary.json")
def get_point_result_summary(
    point_id: IdPath, session: SessionDep, principal: PrincipalDep
) -> JSONResponse:
    """The point's `result_summary.json` as a v1.0 bundle carries it (ns, v1.0 counts)."""
    point = get_point(session, principal=principal, point_id=point_id)
    return JSONResponse(result_summary_v1(session, point=point))
