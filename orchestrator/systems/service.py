"""Systems: create, read, list, update — scoped by the caller's organisation and role.

Updates cover pricing (an hourly price and its currency, which cost bands use), the declared
maximum concurrency (region coverage) and descriptive metadata; every change is audited with
its before and after values.
"""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from orchestrator.audit.service import record
from orchestrator.auth.models import Organisation
from orchestrator.auth.service import Principal
from orchestrator.db import paginate
from orchestrator.errors import Conflict, Forbidden, NotFound
from orchestrator.systems.models import System
from orchestrator.systems.schemas import SystemCreate, SystemUpdate


def create_system(session: Session, *, principal: Principal, data: SystemCreate) -> System:
    org_id = principal.organisation_id
    if data.organisation is not None and data.organisation != principal.organisation:
        if not principal.is_operator:
            raise Forbidden(
                "only operators create systems for other organisations", field="organisation"
            )
        org = session.exec(
            select(Organisation).where(Organisation.name == data.organisation)
        ).first()
        if org is None or org.id is None:
            raise NotFound(f"no organisation {data.organisation!r}", field="organisation")
        org_id = org.id
    if not principal.can_write(org_id):
        raise Forbidden("this token may not create systems")
    system = System.model_validate(
        data.model_dump(exclude={"organisation"}), update={"organisation_id": org_id}
    )
    session.add(system)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        raise Conflict(f"a system named {data.name!r} exists already", field="name") from None
    assert system.id is not None
    record(
        session,
        actor=principal.actor,
        organisation_id=org_id,
        object_type="system",
        object_id=system.id,
        action="create",
    )
    return system


def get_system(session: Session, *, principal: Principal, system_id: int) -> System:
    system = session.get(System, system_id)
    if system is None or not principal.can_read(system.organisation_id):
        raise NotFound(f"no system {system_id}")
    return system


def list_systems(
    session: Session,
    *,
    principal: Principal,
    limit: int,
    offset: int,
    organisation_id: int | None = None,
) -> tuple[list[System], int]:
    query = principal.scope(select(System), System.organisation_id)
    if organisation_id is not None:
        query = query.where(System.organisation_id == organisation_id)
    return paginate(session, query, order_by=col(System.id), limit=limit, offset=offset)


def update_system(
    session: Session, *, principal: Principal, system_id: int, data: SystemUpdate
) -> System:
    """Change the fields sent: submitters on their own organisation's systems, operators on any."""
    system = get_system(session, principal=principal, system_id=system_id)
    if not principal.can_write(system.organisation_id):
        raise Forbidden("this token may not change that system")
    changes = data.changes()
    before = {name: getattr(system, name) for name in changes}
    for name, value in changes.items():
        setattr(system, name, value)
    session.add(system)
    session.flush()
    assert system.id is not None
    record(
        session,
        actor=principal.actor,
        organisation_id=system.organisation_id,
        object_type="system",
        object_id=system.id,
        action="update",
        data={"fields": sorted(changes), "before": before, "after": changes},
    )
    return system
