"""A stored curve as both sides of the frontier read it: its newest version and its points.

`apply_change` (changes.py) and the reads (service.py) share these few primitives: the newest
`FrontierVersion` of a (system, workload) curve, a member point's id (points reach the
frontier flushed), and a point's figures for the axes — its metrics plus its concurrency,
which lives in a column rather than in the metrics.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, col, select

from orchestrator.frontier.models import FrontierVersion
from orchestrator.runs.models import Point

__all__ = ["figures", "latest_version", "point_id"]


def latest_version(session: Session, system_id: int, workload_id: int) -> FrontierVersion | None:
    return session.exec(
        select(FrontierVersion)
        .where(
            FrontierVersion.system_id == system_id,
            FrontierVersion.workload_id == workload_id,
        )
        .order_by(col(FrontierVersion.version).desc())
    ).first()


def figures(point: Point) -> dict[str, Any]:
    """A point's figures for the axes: its metrics, and its concurrency from the column."""
    return {**point.metrics, "concurrency": point.concurrency}


def point_id(point: Point) -> int:
    assert point.id is not None, "points must be flushed before they reach the frontier"
    return point.id
