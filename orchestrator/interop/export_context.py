"""What an export reads of one point, and how it writes what it makes of it.

Both exporters (export.py for the v1.0 bundle, export_v07.py for v0.7 `run_metadata.json`)
see a point with its run, submission, system and workload (`PointContext`), describe the
system's nodes and parallelism the same way, and write JSON (indented, with a final newline)
and YAML (in key order) alike. `readable_point` is the access rule of the export routes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml
from sqlmodel import Session

from orchestrator.auth.service import Principal
from orchestrator.runs.models import Point, PointState, Run
from orchestrator.runs.points import get_point
from orchestrator.submissions.models import Submission
from orchestrator.systems.models import System
from orchestrator.workloads.models import Workload

__all__ = [
    "PARALLELISM",
    "PointContext",
    "node_config",
    "point_context",
    "readable_point",
    "write_json",
    "write_yaml",
]

PARALLELISM: Final = (
    "tensor_parallel",
    "pipeline_parallel",
    "expert_parallel",
    "data_parallel",
    "disaggregated",
    "batch",
)


@dataclass(frozen=True)
class PointContext:
    point: Point
    run: Run
    submission: Submission
    system: System
    workload: Workload


def point_context(session: Session, point: Point) -> PointContext:
    run = session.get(Run, point.run_id)
    submission = session.get(Submission, point.submission_id)
    system = session.get(System, point.system_id)
    workload = session.get(Workload, point.workload_id)
    assert run is not None and submission is not None
    assert system is not None and workload is not None
    return PointContext(point, run, submission, system, workload)


def readable_point(session: Session, *, principal: Principal, point_id: int) -> Point:
    """The point if `principal` may read it: accepted points are published, others follow
    the submission's organisation (a foreign unpublished point is NotFound, like a missing
    one)."""
    point = session.get(Point, point_id)
    if point is not None and point.state is PointState.ACCEPTED:
        return point
    return get_point(session, principal=principal, point_id=point_id)


def node_config(system: System) -> str | None:
    if not system.accelerator_model:
        return None
    return f"{system.accelerator_count}x {system.accelerator_model}"


def write_json(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def write_yaml(path: Path, doc: Any) -> None:
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
