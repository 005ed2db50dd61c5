"""The automated checker (DESIGN §8): every rule a submission must pass before review.

`run_checks` gathers what a submission is judged on — its system, endpoint, runs, live
points, and the curve's accepted points from other submissions — and returns every finding
(`orchestrator.review.findings`), passed ones too. The checks, per point where one applies:

- `metadata.complete`, `accuracy.required`: what the submission declares
  (`orchestrator.review.submission_checks`).
- `topology.consistent`: parallel sizes, accelerator count, nodes and model agree wherever
  they are declared, and the parallel sizes fit the accelerators
  (`orchestrator.review.topology`).
- `points.present`: a submission with nothing measured has nothing to accept.
- `duration.min`, `samples.min`, `errors.rate`, `counts.consistent`, `metrics.consistent`,
  `littles_law`, `harness.saturated`: per point (`orchestrator.review.point_checks`).
- `regions.*` and `reproducibility`: the whole curve (`orchestrator.review.curve_checks`).
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from orchestrator.endpoints.models import Endpoint
from orchestrator.programme import ProgrammeRules, programme
from orchestrator.review.curve_checks import check_regions, check_reproducibility
from orchestrator.review.findings import ERROR, Finding, blocking
from orchestrator.review.point_checks import (
    check_harness,
    check_littles_law,
    check_point,
    in_flight_deviation,
    in_flight_floor,
)
from orchestrator.review.submission_checks import check_accuracy, check_metadata
from orchestrator.review.topology import check_topology
from orchestrator.runs.models import Point, PointState, Run
from orchestrator.submissions.models import Submission
from orchestrator.systems.models import System

# Finding, blocking and the per-point checks are re-exported for the tests that import them
# from here.
__all__ = [
    "Finding",
    "blocking",
    "check_harness",
    "check_littles_law",
    "check_point",
    "in_flight_deviation",
    "in_flight_floor",
    "run_checks",
]

LIVE = (PointState.CANDIDATE, PointState.ACCEPTED)


def run_checks(
    session: Session, *, submission: Submission, rules: ProgrammeRules | None = None
) -> list[Finding]:
    """Every finding for `submission`, passed ones too, under `rules` (default: programme)."""
    rules = rules or programme()
    system = session.get(System, submission.system_id)
    endpoint = session.get(Endpoint, submission.endpoint_id) if submission.endpoint_id else None
    points = list(
        session.exec(
            select(Point)
            .where(Point.submission_id == submission.id, col(Point.state).in_(LIVE))
            .order_by(col(Point.concurrency), col(Point.id))
        ).all()
    )
    runs = list(
        session.exec(
            select(Run).where(Run.submission_id == submission.id).order_by(col(Run.position))
        ).all()
    )
    published = list(
        session.exec(
            select(Point)
            .where(
                Point.system_id == submission.system_id,
                Point.workload_id == submission.workload_id,
                Point.state == PointState.ACCEPTED,
                Point.submission_id != submission.id,
            )
            .order_by(col(Point.created_at), col(Point.id))
        ).all()
    )
    findings = [
        *check_metadata(system, submission, rules),
        *check_topology(system, submission, endpoint, runs),
        check_accuracy(submission, runs),
    ]
    if not points:
        findings.append(
            Finding("points.present", ERROR, False, "the submission has no measured point.")
        )
    for point in points:
        findings.extend(check_point(point.id, point.concurrency, point.metrics or {}, rules))
    findings.extend(check_regions(points, published, system, rules))
    for point in points:
        findings.append(check_reproducibility(point, published, rules))
    return findings
