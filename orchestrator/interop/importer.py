"""Import results measured elsewhere as baseline points of a frontier (DESIGN §9).

The import is one transaction: every point under the given path is read and checked first
(readers.py: reference-client run folders and v1.0 point directories; readers_v07.py: v0.7
`run_metadata.json` files), and only then is anything written. One malformed file and the
import raises `InteropError` (naming the file and the field) with nothing added. The store
writes join the caller's transaction; the copies of the imported files are written last.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import yaml
from sqlmodel import Session

from orchestrator.audit.service import record
from orchestrator.config import get_settings
from orchestrator.db import utcnow
from orchestrator.frontier.changes import apply_change, check_window
from orchestrator.frontier.models import FrontierVersion
from orchestrator.interop.formats import InteropError
from orchestrator.interop.readers import (
    FORMAT_REFERENCE,
    FORMAT_V07,
    FORMAT_V1,
    ParsedPoint,
    discover,
    parse_reference,
    parse_v1_point,
)
from orchestrator.interop.readers_v07 import parse_v07
from orchestrator.runs.models import Point, PointState, Run, RunKind, RunState
from orchestrator.submissions.models import Submission, SubmissionSource, SubmissionState
from orchestrator.systems.models import System
from orchestrator.workloads.models import Workload

__all__ = ["ImportResult", "import_mlperf", "read_import"]

REVIEW_COMMENT: Final = "imported baseline"


@dataclass(frozen=True)
class ImportResult:
    submission: Submission
    runs: list[Run]
    points: list[Point]
    frontier: FrontierVersion | None
    stored_at: Path = field(default_factory=Path)


# --------------------------------------------------------------------------- reading


_PARSERS = {FORMAT_REFERENCE: parse_reference, FORMAT_V1: parse_v1_point, FORMAT_V07: parse_v07}


def read_import(path: Path) -> list[ParsedPoint]:
    """Every point under `path`, checked; raises InteropError at the first bad file."""
    parsed = [_PARSERS[kind](where) for kind, where in discover(path)]
    by_level: dict[int, ParsedPoint] = {}
    for point in parsed:
        other = by_level.get(point.concurrency)
        if other is not None:
            raise InteropError(
                f"{point.concurrency} is also the concurrency of {other.source}; one import "
                "holds one point per concurrency",
                point.source,
                "concurrency",
            )
        by_level[point.concurrency] = point
    return sorted(parsed, key=lambda p: p.concurrency)


# --------------------------------------------------------------------------- storing


def _stored_bytes(name: str, content: Path | dict[str, Any]) -> bytes:
    """What the store keeps as file `name`: the file's bytes, or the document as JSON / YAML."""
    if isinstance(content, Path):
        return content.read_bytes()
    if name.endswith(".json"):
        return json.dumps(content, indent=2).encode("utf-8")
    return yaml.safe_dump(content, sort_keys=False).encode("utf-8")


def _write_files(
    parsed: Sequence[ParsedPoint], stored: Sequence[dict[str, bytes]], root: Path
) -> None:
    for point, files in zip(parsed, stored, strict=True):
        folder = root / f"c{point.concurrency}"
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)


def _finite(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """JSON columns hold no NaN or infinity: such a figure is not measured."""

    def clean(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, Mapping):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    out = clean(metrics)
    assert isinstance(out, dict)
    return out


def import_mlperf(
    session: Session,
    *,
    path: Path,
    system: System,
    workload: Workload,
    actor: str,
    now: datetime | None = None,
) -> ImportResult:
    """Import the run folders or run_metadata files at `path` as accepted baseline points.

    One imported submission (state accepted, no endpoint), one finished run and one
    ACCEPTED point per concurrency, then one new frontier version. Raises InteropError
    before writing anything when a file is malformed, and Conflict (from the frontier) when
    the curve's update window has closed; the caller's transaction then rolls back.
    """
    assert system.id is not None and workload.id is not None
    parsed = read_import(path)
    stored = [{name: _stored_bytes(name, c) for name, c in p.files.items()} for p in parsed]
    check_window(session, system_id=system.id, workload_id=workload.id, submission_id=None, now=now)
    moment = now or utcnow()
    submission = Submission(
        organisation_id=system.organisation_id,
        system_id=system.id,
        endpoint_id=None,
        workload_id=workload.id,
        state=SubmissionState.ACCEPTED,
        pattern="concurrency",
        levels=[float(p.concurrency) for p in parsed],
        server_config={
            "imported_from": str(path),
            "points": [
                {
                    "concurrency": p.concurrency,
                    "format": p.format,
                    "source": str(p.source),
                    **p.server_config,
                }
                for p in parsed
            ],
        },
        source=SubmissionSource.IMPORTED,
        created_by=actor,
        created_at=moment,
        updated_at=moment,
        decided_at=moment,
    )
    session.add(submission)
    session.flush()
    assert submission.id is not None
    record(
        session,
        actor=actor,
        organisation_id=system.organisation_id,
        object_type="submission",
        object_id=submission.id,
        action="import",
        to_state=SubmissionState.ACCEPTED.value,
        reason=f"{REVIEW_COMMENT} from {path}",
        data={
            "formats": sorted({p.format for p in parsed}),
            "levels": [p.concurrency for p in parsed],
        },
    )
    root = get_settings().resolved_artifacts_dir() / "imported" / f"submission-{submission.id}"
    runs: list[Run] = []
    points: list[Point] = []
    for position, (item, files) in enumerate(zip(parsed, stored, strict=True)):
        folder = root / f"c{item.concurrency}"
        run = Run(
            submission_id=submission.id,
            run_key=f"import-{submission.id}-performance-{item.concurrency}",
            kind=RunKind.PERFORMANCE,
            position=position,
            level=float(item.concurrency),
            state=RunState.FINISHED,
            finished_at=moment,
            summary={
                "result_summary_path": str(folder / item.primary),
                "source": str(item.source),
                "format": item.format,
                "files": sorted(item.files),
                "config_path": str(folder / "config.yaml") if "config.yaml" in item.files else None,
                "sha256": {name: hashlib.sha256(b).hexdigest() for name, b in files.items()},
            },
            artifact_path=str(folder),
        )
        session.add(run)
        session.flush()
        assert run.id is not None
        point = Point(
            submission_id=submission.id,
            run_id=run.id,
            system_id=system.id,
            workload_id=workload.id,
            concurrency=item.concurrency,
            state=PointState.ACCEPTED,
            metrics=_finite(item.metrics),
            created_at=moment,
            reviewed_by=actor,
            reviewed_at=moment,
            review_comment=REVIEW_COMMENT,
        )
        session.add(point)
        session.flush()
        assert point.id is not None
        record(
            session,
            actor=actor,
            organisation_id=system.organisation_id,
            object_type="point",
            object_id=point.id,
            action="accept",
            from_state=None,
            to_state=PointState.ACCEPTED.value,
            reason=REVIEW_COMMENT,
            data={"concurrency": item.concurrency, "source": str(item.source)},
        )
        runs.append(run)
        points.append(point)
    frontier = apply_change(
        session,
        system_id=system.id,
        workload_id=workload.id,
        accepted=points,
        actor=actor,
        submission_id=submission.id,
        reason=f"{REVIEW_COMMENT} from {path.name}",
        now=moment,
    )
    try:
        _write_files(parsed, stored, root)
    except OSError as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise InteropError(f"cannot store the imported files: {exc}", root) from None
    return ImportResult(
        submission=submission, runs=runs, points=points, frontier=frontier, stored_at=root
    )
