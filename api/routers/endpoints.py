"""/v1/endpoints — credentials are accepted, never returned."""

from __future__ import annotations

from fastapi import APIRouter, Query
from pydantic import BaseModel

from api.deps import IdPath, PageDep, PrincipalDep, SessionDep
from orchestrator.db import MAX_ID
from orchestrator.endpoints import service
from orchestrator.endpoints.models import EndpointState
from orchestrator.endpoints.schemas import EndpointCreate, EndpointPublic, EndpointUpdate

router = APIRouter(prefix="/v1/endpoints", tags=["endpoints"])


class EndpointList(BaseModel):
    items: list[EndpointPublic]
    total: int
    limit: int
    offset: int


@router.post("", status_code=201, response_model=EndpointPublic)
def create_endpoint(
    body: EndpointCreate, session: SessionDep, principal: PrincipalDep
) -> EndpointPublic:
    return service.to_public(service.create_endpoint(session, principal=principal, data=body))


@router.get("", response_model=EndpointList)
def list_endpoints(
    session: SessionDep,
    principal: PrincipalDep,
    page: PageDep,
    system_id: int | None = Query(None, ge=1, le=MAX_ID),
    state: EndpointState | None = None,
) -> EndpointList:
    rows, total = service.list_endpoints(
        session,
        principal=principal,
        limit=page.limit,
        offset=page.offset,
        system_id=system_id,
        state=state,
    )
    return EndpointList(
        items=[service.to_public(r) for r in rows],
        total=total,
        limit=page.limit,
        offset=page.offset,
    )


@router.get("/{endpoint_id}", response_model=EndpointPublic)
def get_endpoint(
    endpoint_id: IdPath, session: SessionDep, principal: PrincipalDep
) -> EndpointPublic:
    return service.to_public(
        service.get_endpoint(session, principal=principal, endpoint_id=endpoint_id)
    )


@router.patch("/{endpoint_id}", response_model=EndpointPublic)
def update_endpoint(
    endpoint_id: IdPath, body: EndpointUpdate, session: SessionDep, principal: PrincipalDep
) -> EndpointPublic:
    return service.to_public(
        service.update_endpoint(session, principal=principal, endpoint_id=endpoint_id, data=body)
    )
