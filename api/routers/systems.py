"""/v1/systems"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from api.deps import IdPath, PageDep, PrincipalDep, SessionDep
from orchestrator.systems import service
from orchestrator.systems.schemas import SystemCreate, SystemPublic, SystemUpdate

router = APIRouter(prefix="/v1/systems", tags=["systems"])


class SystemList(BaseModel):
    items: list[SystemPublic]
    total: int
    limit: int
    offset: int


@router.post("", status_code=201, response_model=SystemPublic)
def create_system(body: SystemCreate, session: SessionDep, principal: PrincipalDep) -> SystemPublic:
    system = service.create_system(session, principal=principal, data=body)
    return SystemPublic.model_validate(system)


@router.get("", response_model=SystemList)
def list_systems(session: SessionDep, principal: PrincipalDep, page: PageDep) -> SystemList:
    rows, total = service.list_systems(
        session, principal=principal, limit=page.limit, offset=page.offset
    )
    return SystemList(
        items=[SystemPublic.model_validate(r) for r in rows],
        total=total,
        limit=page.limit,
        offset=page.offset,
    )


@router.get("/{system_id}", response_model=SystemPublic)
def get_system(system_id: IdPath, session: SessionDep, principal: PrincipalDep) -> SystemPublic:
    return SystemPublic.model_validate(
        service.get_system(session, principal=principal, system_id=system_id)
    )


@router.patch("/{system_id}", response_model=SystemPublic)
def update_system(
    system_id: IdPath, body: SystemUpdate, session: SessionDep, principal: PrincipalDep
) -> SystemPublic:
    return SystemPublic.model_validate(
        service.update_system(session, principal=principal, system_id=system_id, data=body)
    )
