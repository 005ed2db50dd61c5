"""Reading frontiers: a curve's current version, its history, a version on two axes, and
several systems compared on one workload — with, on request, each member's admissibility
under an SLO profile.

Reads are public to any authenticated principal: accepted points and frontiers are
published results. Imported points (Submission.source == imported) are ordinary accepted
points — the baseline a rolling submission is compared against. Writes (`apply_change`,
`check_window`) live in changes.py and are re-exported here, where the review service and
the tests import them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlmodel import Session, col, select

from orchestrator.auth.models import Organisation
from orchestrator.db import MAX_ID
from orchestrator.errors import Invalid, NotFound
from orchestrator.frontier import pareto
from orchestrator.frontier.changes import apply_change, check_window
from orchestrator.frontier.curves import figures, latest_version, point_id
from orchestrator.frontier.models import FrontierVersion
from orchestrator.runs.models import Point
from orchestrator.slo import service as slo_service
from orchestrator.slo.admissibility import Admissibility, evaluate, workload_quality
from orchestrator.submissions.models import Submission, SubmissionSource
from orchestrator.systems.models import System
from orchestrator.workloads.models import Workload

__all__ = [
    "MAX_COMPARED_SYSTEMS",
    "Comparison",
    "FrontierView",
    "MemberStatus",
    "SystemCurve",
    "admissibility",
    "apply_change",  # re-exported from changes.py
    "check_window",  # re-exported from changes.py
    "compare",
    "current",
    "find_system",
    "get_version",
    "history",
    "resolve_axes",
    "resolve_curve",
    "versions",
    "view",
    "view_of",
]

MAX_COMPARED_SYSTEMS = 20


def _system(session: Session, system_id: int) -> System:
    system = session.get(System, system_id) if 1 <= system_id <= MAX_ID else None
    if system is None:
        raise NotFound(f"no system {system_id}", field="system_id")
    return system


def find_system(session: Session, *, ref: str) -> System:
    """A system by numeric id, `organisation/name`, or a name unique across organisations.

    A name two organisations use is ambiguous: the error lists the `organisation/name`
    forms to choose from, rather than picking one.
    """
    text = ref.strip()
    if text.isdigit():
        return _system(session, int(text))
    query = select(System, Organisation).join(
        Organisation, col(Organisation.id) == System.organisation_id
    )
    if "/" in text:
        org, _, name = text.partition("/")
        query = query.where(Organisation.name == org, System.name == name)
    else:
        query = query.where(System.name == text)
    rows = list(session.exec(query.order_by(col(Organisation.name))).all())
    if not rows:
        raise NotFound(f"no system {text!r}", field="system")
    if len(rows) > 1:
        choices = ", ".join(f"{o.name}/{s.name}" for s, o in rows)
        raise Invalid(f"system name {text!r} is ambiguous; say one of: {choices}", field="system")
    return rows[0][0]


def current(session: Session, *, system_id: int, workload_id: int) -> FrontierVersion | None:
    """The newest version of the curve, None if it has none yet."""
    return latest_version(session, system_id, workload_id)


def get_version(
    session: Session, *, system_id: int, workload_id: int, version: int | None = None
) -> FrontierVersion:
    """Version `version` of the curve (the newest when None); NotFound naming what is missing."""
    if version is None:
        row = latest_version(session, system_id, workload_id)
        if row is None:
            raise NotFound(
                f"system {system_id} has no frontier on workload {workload_id} yet",
                field="workload",
            )
        return row
    row = session.exec(
        select(FrontierVersion).where(
            FrontierVersion.system_id == system_id,
            FrontierVersion.workload_id == workload_id,
            FrontierVersion.version == version,
        )
    ).first()
    if row is None:
        raise NotFound(
            f"the frontier of system {system_id} on workload {workload_id} has no version "
            f"{version}",
            field="version",
        )
    return row


def history(session: Session, *, system_id: int, workload_id: int) -> list[FrontierVersion]:
    """Every version of the curve, oldest first."""
    return list(
        session.exec(
            select(FrontierVersion)
            .where(
                FrontierVersion.system_id == system_id,
                FrontierVersion.workload_id == workload_id,
            )
            .order_by(col(FrontierVersion.version))
        ).all()
    )


def resolve_curve(
    session: Session, *, system_id: int, workload_name: str, workload_version: int | None = None
) -> tuple[System, Workload]:
    """The system and the workload version of its curve on `workload_name`.

    Without `workload_version`: the newest version of the workload that has a frontier for
    this system, else the newest version of the workload (whose curve is then empty).
    """
    system = _system(session, system_id)
    return system, _newest_with_frontier(session, [system_id], workload_name, workload_version)


def _newest_with_frontier(
    session: Session, system_ids: Sequence[int], name: str, version: int | None
) -> Workload:
    """The newest version of workload `name` (only `version` if given) on which one of
    `system_ids` has a frontier, else its newest version; NotFound if there is none."""
    query = select(Workload).where(Workload.name == name)
    if version is not None:
        query = query.where(Workload.version == version)
    workloads = list(session.exec(query.order_by(col(Workload.version).desc())).all())
    if not workloads:
        shown = name + (f" v{version}" if version else "")
        raise NotFound(f"no workload {shown}", field="workload")
    with_frontier = set(
        session.exec(
            select(FrontierVersion.workload_id).where(
                col(FrontierVersion.system_id).in_(list(system_ids)),
                col(FrontierVersion.workload_id).in_([_wid(w) for w in workloads]),
            )
        ).all()
    )
    return next((w for w in workloads if _wid(w) in with_frontier), workloads[0])


def _wid(workload: Workload) -> int:
    assert workload.id is not None
    return workload.id


def resolve_axes(x: str | None, y: str | None) -> tuple[pareto.Axis, pareto.Axis]:
    """The two axes by name (defaults: per-user TPS, TPS); UnknownAxis naming `x` or `y`."""
    ax = pareto.axis(x or pareto.DEFAULT_X, "x")
    ay = pareto.axis(y or pareto.DEFAULT_Y, "y")
    if ax.name == ay.name:
        raise Invalid(f"x and y are both {ax.name}; choose two different axes", field="y")
    return ax, ay


@dataclass(frozen=True)
class MemberStatus:
    """One member point of a version, seen on two axes."""

    point: Point
    on_frontier: bool
    dominated_by: tuple[int, ...]
    measured: bool  # False: a figure on x or y is missing, so it is not placed at all


@dataclass(frozen=True)
class FrontierView:
    """A version seen on two axes: its members with their status, and its step function."""

    system: System
    workload: Workload
    version: FrontierVersion
    x: pareto.Axis
    y: pareto.Axis
    members: tuple[MemberStatus, ...]
    steps: pareto.StepFunction
    not_measured: tuple[int, ...]  # member ids left out: a figure on x or y is missing
    baseline: frozenset[int] = frozenset()  # member ids imported (Submission.source)


def _points(session: Session, ids: Sequence[int]) -> list[Point]:
    if not ids:
        return []
    rows = session.exec(select(Point).where(col(Point.id).in_(list(ids)))).all()
    return sorted(rows, key=lambda p: (p.concurrency, point_id(p)))


def view_of(
    points: Sequence[Point], x: pareto.Axis, y: pareto.Axis
) -> tuple[tuple[MemberStatus, ...], pareto.StepFunction, tuple[int, ...]]:
    """Members' status, the step function and the unmeasured ids of `points` on (x, y).

    On the concurrency view the step function is the measured curve (every point, ordered
    by concurrency); a point's status still says whether another point reaches at least its
    y with no more concurrency (concurrency counts as a resource: lower is better).
    """
    projected, missing = pareto.project(((point_id(p), figures(p)) for p in points), x, y)
    front = pareto.pareto_set(projected, x, y)
    front_ids = {p.id for p in front}
    by_id = {p.id: p for p in projected}
    members = []
    for p in points:
        placed = by_id.get(point_id(p))
        if placed is None:
            members.append(MemberStatus(p, False, (), False))
            continue
        members.append(
            MemberStatus(
                p,
                placed.id in front_ids,
                tuple(pareto.dominators(placed, front, x, y)),
                True,
            )
        )
    steps = pareto.step_function(projected, x, y, all_points=pareto.is_step_view(x, y))
    return tuple(members), steps, tuple(sorted(missing))


def view(
    session: Session,
    *,
    system_id: int,
    workload_name: str,
    workload_version: int | None = None,
    version: int | None = None,
    x: str | None = None,
    y: str | None = None,
) -> FrontierView:
    """Frontier version `version` (the newest when None) of a system on a workload, on (x, y)."""
    ax, ay = resolve_axes(x, y)
    system, workload = resolve_curve(
        session, system_id=system_id, workload_name=workload_name, workload_version=workload_version
    )
    row = get_version(session, system_id=system_id, workload_id=_wid(workload), version=version)
    points = _points(session, row.members)
    members, steps, missing = view_of(points, ax, ay)
    return FrontierView(
        system, workload, row, ax, ay, members, steps, missing, _baseline(session, points)
    )


def _baseline(session: Session, points: Sequence[Point]) -> frozenset[int]:
    """Ids of `points` that were imported (baseline), not measured here."""
    sub_ids = {p.submission_id for p in points}
    if not sub_ids:
        return frozenset()
    imported = set(
        session.exec(
            select(Submission.id).where(
                col(Submission.id).in_(sub_ids),
                Submission.source == SubmissionSource.IMPORTED,
            )
        ).all()
    )
    return frozenset(point_id(p) for p in points if p.submission_id in imported)


def versions(
    session: Session, *, system_id: int, workload_name: str, workload_version: int | None = None
) -> tuple[System, Workload, list[FrontierVersion]]:
    """The history of a system's curve on a workload (resolved as in `view`), oldest first."""
    system, workload = resolve_curve(
        session, system_id=system_id, workload_name=workload_name, workload_version=workload_version
    )
    return system, workload, history(session, system_id=system_id, workload_id=_wid(workload))


def admissibility(
    session: Session, *, view: FrontierView, slo_name: str
) -> tuple[str, str, dict[int, Admissibility]]:
    """(profile name, quality note, verdict per member) of a view under SLO `slo_name`.

    Quality comes from the workload (no accuracy suite: "not measured", which does not
    block); NotFound with field "slo" for an unknown profile.
    """
    profile = slo_service.get_profile(session, name=slo_name)
    limits = slo_service.limits_of(profile)
    quality, note = workload_quality(view.workload.definition)
    verdicts = {
        point_id(m.point): evaluate(m.point.metrics, limits, quality=quality) for m in view.members
    }
    return profile.name, note, verdicts


@dataclass(frozen=True)
class SystemCurve:
    """One system's curve in a comparison; `version` None when it has no frontier there."""

    system: System
    version: FrontierVersion | None
    steps: pareto.StepFunction
    not_measured: tuple[int, ...]


@dataclass(frozen=True)
class Comparison:
    workload: Workload
    x: pareto.Axis
    y: pareto.Axis
    curves: tuple[SystemCurve, ...]


def compare(
    session: Session,
    *,
    workload_name: str,
    system_ids: Sequence[int],
    axes: tuple[str | None, str | None] = (None, None),
    workload_version: int | None = None,
) -> Comparison:
    """Several systems' current step functions on one workload version, on the same axes.

    All curves are read on one workload version (a figure measured under another definition
    is not comparable): the one given, else the newest version on which at least one of the
    systems has a frontier. A system without a frontier there gets an empty curve.
    """
    ax, ay = resolve_axes(*axes)
    ids = list(dict.fromkeys(system_ids))
    if not ids:
        raise Invalid("name at least one system to compare", field="system_id")
    if len(ids) > MAX_COMPARED_SYSTEMS:
        raise Invalid(
            f"compare at most {MAX_COMPARED_SYSTEMS} systems, not {len(ids)}", field="system_id"
        )
    systems = [_system(session, sid) for sid in ids]
    chosen = _newest_with_frontier(session, ids, workload_name, workload_version)
    curves = []
    for system in systems:
        row = latest_version(session, _sid(system), _wid(chosen))
        members = _points(session, row.members) if row else []
        _status, steps, missing = view_of(members, ax, ay)
        curves.append(SystemCurve(system, row, steps, missing))
    return Comparison(chosen, ax, ay, tuple(curves))


def _sid(system: System) -> int:
    assert system.id is not None
    return system.id
