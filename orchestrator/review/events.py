"""What the review's webhooks say (`orchestrator.review.webhooks` delivers them).

`subject` is what every event says about the submission it concerns; `review_requested` is
the body of `submission.review_requested`; `outcome` is one decided point, as
`point.decided` and `submission.decided` report it.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import Session

from orchestrator.review.access import point_id_of, submission_id_of
from orchestrator.review.findings import stored_blocking, summary_of
from orchestrator.runs.models import Point
from orchestrator.stats.jsontypes import JsonValue
from orchestrator.submissions.models import Submission
from orchestrator.systems.models import System
from orchestrator.workloads.models import Workload

__all__ = ["outcome", "review_requested", "subject"]


def subject(session: Session, sub: Submission) -> dict[str, JsonValue]:
    """What every webhook says about the submission it concerns."""
    system = session.get(System, sub.system_id)
    workload = session.get(Workload, sub.workload_id)
    return {
        "submission_id": submission_id_of(sub),
        "organisation_id": sub.organisation_id,
        "system_id": sub.system_id,
        "system": system.name if system else None,
        "workload_id": sub.workload_id,
        "workload": f"{workload.name} v{workload.version}" if workload else None,
        "state": sub.state.value,
        "publication": sub.publication.value,
    }


def review_requested(
    session: Session, sub: Submission, candidates: Sequence[Point]
) -> dict[str, JsonValue]:
    """The body of `submission.review_requested`; `candidates`: the points to decide."""
    findings = list(sub.findings or [])
    return {
        **subject(session, sub),
        "points": [{"point_id": point_id_of(p), "concurrency": p.concurrency} for p in candidates],
        "findings": summary_of(findings),
        "blocking": sorted({f.check for f in stored_blocking(findings)}),
        "checked_at": sub.checked_at.isoformat() if sub.checked_at else None,
    }


def outcome(point: Point) -> dict[str, JsonValue]:
    return {
        "point_id": point_id_of(point),
        "concurrency": point.concurrency,
        "state": point.state.value,
        "comment": point.review_comment,
        "reviewed_by": point.reviewed_by,
    }
