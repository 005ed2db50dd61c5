"""API shapes of frontiers: a version on two axes, its history, and a comparison.

Step functions come ready to plot: the corners (measured points, in drawing order) and the
horizontal segments between them, so a client draws without computing anything — and
cannot interpolate by accident.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.frontier import pareto
from orchestrator.frontier.curves import figures
from orchestrator.frontier.models import FrontierVersion
from orchestrator.frontier.service import Comparison, FrontierView, MemberStatus
from orchestrator.runs.models import PointState
from orchestrator.slo.admissibility import Admissibility, figure
from orchestrator.slo.schemas import ReasonPublic


class AxisPublic(BaseModel):
    name: str
    metric: str = Field(description="the key of a point's metrics it reads (or concurrency)")
    higher_is_better: bool
    label: str


class CornerPublic(BaseModel):
    point_id: int
    x: float
    y: float


class SegmentPublic(BaseModel):
    x_from: float
    x_to: float
    y: float
    point_id: int = Field(description="the measured point whose y this segment holds")


class StepFunctionPublic(BaseModel):
    x: AxisPublic
    y: AxisPublic
    kind: Literal["pareto", "measured"] = Field(
        description="pareto: the Pareto set on (x, y); measured: every measured point "
        "ordered by x (the concurrency view)"
    )
    corners: list[CornerPublic]
    segments: list[SegmentPublic] = Field(
        description="draw each horizontally from x_from to x_to at y, joined by vertical "
        "lines at x_from; no segment ever slopes"
    )


class FrontierAdmissibility(BaseModel):
    admissible: bool
    quality: str
    reasons: list[ReasonPublic]


class MemberPublic(BaseModel):
    point_id: int
    submission_id: int
    concurrency: int
    state: PointState = Field(description="now; a member of an old version may be superseded")
    baseline: bool = Field(description="imported from a reference-client run, not measured here")
    x: float | None
    y: float | None
    on_frontier: bool
    dominated_by: list[int]
    measured: bool = Field(description="False: a figure on x or y is missing; not placed")
    tps: float | None
    tps_per_user: float | None
    qps: float | None
    ttft_p99_ms: float | None
    tpot_p90_ms: float | None
    error_rate: float | None
    admissibility: FrontierAdmissibility | None = None


class FrontierPublic(BaseModel):
    system_id: int
    system: str
    workload: str
    workload_id: int
    workload_version: int
    version: int
    created_at: datetime
    actor: str
    submission_id: int | None
    added: list[int]
    superseded: list[int]
    dominated: list[int]
    members: list[MemberPublic]
    not_measured: list[int] = Field(description="members missing a figure on x or y")
    steps: StepFunctionPublic
    slo: str | None = None
    quality_note: str | None = None


class FrontierVersionPublic(BaseModel):
    version: int
    created_at: datetime
    actor: str
    reason: str
    submission_id: int | None
    added: list[int]
    superseded: list[int]
    dominated: list[int]
    members: list[int]
    pareto: list[int]


class FrontierHistoryPublic(BaseModel):
    system_id: int
    workload: str
    workload_id: int
    workload_version: int
    items: list[FrontierVersionPublic]


class CurvePublic(BaseModel):
    system_id: int
    system: str
    version: int | None = Field(description="None: no frontier on this workload version")
    steps: StepFunctionPublic
    not_measured: list[int]


class ComparisonPublic(BaseModel):
    workload: str
    workload_id: int
    workload_version: int
    curves: list[CurvePublic]


def axis_public(a: pareto.Axis) -> AxisPublic:
    return AxisPublic(name=a.name, metric=a.key, higher_is_better=a.higher_is_better, label=a.label)


def steps_public(steps: pareto.StepFunction) -> StepFunctionPublic:
    x, y = pareto.AXES[steps.x], pareto.AXES[steps.y]
    return StepFunctionPublic(
        x=axis_public(x),
        y=axis_public(y),
        kind="measured" if pareto.is_step_view(x, y) else "pareto",
        corners=[CornerPublic(point_id=c.id, x=c.x, y=c.y) for c in steps.corners],
        segments=[
            SegmentPublic(x_from=s.x_from, x_to=s.x_to, y=s.y, point_id=s.point_id)
            for s in steps.segments
        ],
    )


def member_public(
    m: MemberStatus,
    view: FrontierView,
    admissibility: Admissibility | None = None,
) -> MemberPublic:
    figs = figures(m.point)
    assert m.point.id is not None
    return MemberPublic(
        point_id=m.point.id,
        submission_id=m.point.submission_id,
        concurrency=m.point.concurrency,
        state=m.point.state,
        baseline=m.point.id in view.baseline,
        x=figure(figs, view.x.key) if m.measured else None,
        y=figure(figs, view.y.key) if m.measured else None,
        on_frontier=m.on_frontier,
        dominated_by=list(m.dominated_by),
        measured=m.measured,
        tps=figure(figs, "tps"),
        tps_per_user=figure(figs, "tps_per_user_v1"),
        qps=figure(figs, "qps"),
        ttft_p99_ms=figure(figs, "ttft_p99_ms"),
        tpot_p90_ms=figure(figs, "tpot_p90_ms"),
        error_rate=figure(figs, "error_rate"),
        admissibility=None
        if admissibility is None
        else FrontierAdmissibility(
            admissible=admissibility.admissible,
            quality=admissibility.quality,
            reasons=[
                ReasonPublic(
                    limit=r.limit,
                    passed=r.passed,
                    measured=r.measured,
                    threshold=r.threshold,
                    message=r.message,
                )
                for r in admissibility.reasons
            ],
        ),
    )


def frontier_public(
    view: FrontierView,
    *,
    slo: str | None = None,
    quality_note: str | None = None,
    verdicts: Mapping[int, Admissibility] | None = None,
) -> FrontierPublic:
    row, system, workload = view.version, view.system, view.workload
    assert system.id is not None and workload.id is not None
    return FrontierPublic(
        system_id=system.id,
        system=system.name,
        workload=workload.name,
        workload_id=workload.id,
        workload_version=workload.version,
        version=row.version,
        created_at=row.created_at,
        actor=row.actor,
        submission_id=row.submission_id,
        added=list(row.added),
        superseded=list(row.superseded),
        dominated=list(row.dominated),
        members=[
            member_public(m, view, (verdicts or {}).get(m.point.id or 0)) for m in view.members
        ],
        not_measured=list(view.not_measured),
        steps=steps_public(view.steps),
        slo=slo,
        quality_note=quality_note,
    )


def version_public(row: FrontierVersion) -> FrontierVersionPublic:
    return FrontierVersionPublic(
        version=row.version,
        created_at=row.created_at,
        actor=row.actor,
        reason=row.reason,
        submission_id=row.submission_id,
        added=list(row.added),
        superseded=list(row.superseded),
        dominated=list(row.dominated),
        members=list(row.members),
        pareto=list(row.pareto),
    )


def comparison_public(result: Comparison) -> ComparisonPublic:
    w = result.workload
    assert w.id is not None
    curves = []
    for c in result.curves:
        assert c.system.id is not None
        curves.append(
            CurvePublic(
                system_id=c.system.id,
                system=c.system.name,
                version=c.version.version if c.version else None,
                steps=steps_public(c.steps),
                not_measured=list(c.not_measured),
            )
        )
    return ComparisonPublic(
        workload=w.name, workload_id=w.id, workload_version=w.version, curves=curves
    )
