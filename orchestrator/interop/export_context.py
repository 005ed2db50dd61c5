"""What an export reads of one point, and how it writes what it makes of it.

Both exporters (export.py for the v1.0 bundle, export_v07.py for v0.7 `run_metadata.json`)
see a point with its run, submission, system and workload (`PointContext`), describe the
system's nodes and parallelism the same way, and write JSON (indented, with a final newline)
and YAML (in key order) alike. Who may read a point is `orchestrator.runs.points.get_point`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml
from sqlmodel import Session

from orchestrator.runs.models import Point, Run
from orchestrator.submissions.models import Submission
from orchestrator.systems.models import System
from orchestrator.workloads.models import Workload

__all__ = [
    "PARALLELISM",
    "PointContext",
    "node_config",
    "point_context",
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


def node_config(system: System) -> str | None:
    if not system.accelerator_model:
        return None
    return f"{system.accelerator_count}x {system.accelerator_model}"


def write_json(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def write_yaml(path: Path, doc: Any) -> None:
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
