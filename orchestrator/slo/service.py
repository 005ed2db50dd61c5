"""SLO profiles in the store: synced from configs/slo/*.yaml on first use, managed over the API.

The YAML files are the programme's own profiles. Every read syncs them first (cheap: a few
small files; a write only when one is new or changed), so a fresh store answers
`interactive` without a setup step. A file stays authoritative for the profile it defines
until an operator replaces that profile over the API (`source` becomes "api"); from then on
the operator's version stands and the file no longer overwrites it.

Also here: who may read a point's admissibility and cost — an accepted point is published
(any token); any other point only whoever may read its submission.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from orchestrator.audit.service import record
from orchestrator.auth.service import Principal
from orchestrator.db import utcnow
from orchestrator.errors import Conflict, Forbidden, Invalid, NotFound
from orchestrator.programme import programme
from orchestrator.runs.models import Point
from orchestrator.runs.points import get_point
from orchestrator.slo.admissibility import Admissibility, evaluate, workload_quality
from orchestrator.slo.models import SloProfile
from orchestrator.slo.schemas import SloLimits, SloProfileCreate, SloProfileUpdate
from orchestrator.workloads.models import Workload

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIR = PROJECT_ROOT / "configs" / "slo"
SYNC_ACTOR = "system:slo-sync"


def _source(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def parse_file(path: Path) -> SloProfileCreate:
    """The profile in `path`; Invalid naming the file and the field if it is not one."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise Invalid(f"{path}: cannot read: {exc}") from None
    try:
        return SloProfileCreate.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "limits"
        raise Invalid(f"{path}: {where}: {first['msg']}", field=where) from None


def _sync_once(session: Session, directory: Path) -> None:
    for path in sorted(directory.glob("*.yaml")):
        data = parse_file(path)
        source = _source(path)
        doc = data.limits.document()
        row = session.exec(select(SloProfile).where(SloProfile.name == data.name)).first()
        if row is None:
            row = SloProfile(
                name=data.name,
                description=data.description,
                limits=doc,
                source=source,
                created_by=SYNC_ACTOR,
            )
            session.add(row)
            session.flush()
            assert row.id is not None
            record(
                session,
                actor=SYNC_ACTOR,
                organisation_id=None,
                object_type="slo_profile",
                object_id=row.id,
                action="create",
                data={"source": source, "limits": doc},
            )
        elif row.source == source and (row.limits != doc or row.description != data.description):
            row.limits, row.description, row.updated_at = doc, data.description, utcnow()
            session.add(row)
            session.flush()
            assert row.id is not None
            record(
                session,
                actor=SYNC_ACTOR,
                organisation_id=None,
                object_type="slo_profile",
                object_id=row.id,
                action="update",
                data={"source": source, "limits": doc},
            )


def sync_profiles(session: Session, directory: Path = DEFAULT_DIR) -> None:
    """Bring the profiles of `directory` into the store (idempotent).

    Two first readers racing insert the same name; the loser's transaction holds nothing
    else yet (sync runs first), so it rolls back and finds the winner's rows.
    """
    try:
        _sync_once(session, directory)
    except IntegrityError:
        session.rollback()
        _sync_once(session, directory)


def list_profiles(session: Session) -> list[SloProfile]:
    sync_profiles(session)
    return list(session.exec(select(SloProfile).order_by(col(SloProfile.name))).all())


def get_profile(session: Session, *, name: str) -> SloProfile:
    """The profile called `name`; NotFound (field "slo") if there is none."""
    sync_profiles(session)
    row = session.exec(select(SloProfile).where(SloProfile.name == name)).first()
    if row is None:
        raise NotFound(f"no SLO profile {name[:100]!r}", field="slo")
    return row


def limits_of(profile: SloProfile) -> SloLimits:
    try:
        return SloLimits.model_validate(profile.limits)
    except ValidationError as exc:
        raise Invalid(
            f"SLO profile {profile.name}: stored limits are not valid: {exc.errors()[0]['msg']}",
            field="limits",
        ) from None


def _operator(principal: Principal) -> None:
    if not principal.is_operator:
        raise Forbidden("only operators manage SLO profiles")


def create_profile(session: Session, *, principal: Principal, data: SloProfileCreate) -> SloProfile:
    _operator(principal)
    sync_profiles(session)
    if session.exec(select(SloProfile).where(SloProfile.name == data.name)).first() is not None:
        raise Conflict(f"an SLO profile named {data.name!r} exists already", field="name")
    row = SloProfile(
        name=data.name,
        description=data.description,
        limits=data.limits.document(),
        source="api",
        created_by=principal.actor,
    )
    session.add(row)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        raise Conflict(f"an SLO profile named {data.name!r} exists already", field="name") from None
    assert row.id is not None
    record(
        session,
        actor=principal.actor,
        organisation_id=None,
        object_type="slo_profile",
        object_id=row.id,
        action="create",
        data={"name": row.name, "limits": row.limits},
    )
    return row


def update_profile(
    session: Session, *, principal: Principal, name: str, data: SloProfileUpdate
) -> SloProfile:
    _operator(principal)
    row = get_profile(session, name=name)
    before = dict(row.limits)
    row.description = data.description
    row.limits = data.limits.document()
    row.source = "api"
    row.updated_at = utcnow()
    session.add(row)
    session.flush()
    assert row.id is not None
    record(
        session,
        actor=principal.actor,
        organisation_id=None,
        object_type="slo_profile",
        object_id=row.id,
        action="update",
        data={"name": row.name, "before": before, "limits": row.limits},
    )
    return row


def point_quality(session: Session, *, point: Point) -> tuple[str, str]:
    """The quality verdict of a point and the note tables print (from its workload)."""
    workload = session.get(Workload, point.workload_id)
    return workload_quality(workload.definition if workload is not None else {})


def point_admissibility(
    session: Session, *, principal: Principal, point_id: int, slo_name: str | None = None
) -> tuple[Point, SloProfile, Admissibility, str]:
    """The verdict on a readable point under `slo_name` (default: the programme's)."""
    point = get_point(session, principal=principal, point_id=point_id)
    profile = get_profile(session, name=slo_name or programme().default_slo)
    quality, note = point_quality(session, point=point)
    return point, profile, evaluate(point.metrics, limits_of(profile), quality=quality), note
