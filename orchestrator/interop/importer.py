"""Import results measured elsewhere as baseline points of a frontier (DESIGN §9).

Three shapes are read, alone or many under one directory:

- a run folder of the MLCommons reference client: `performance/result_summary.json` plus
  `config.yaml`, whose `settings.load_pattern` gives the concurrency. Only the closed-loop
  `concurrency` pattern makes a Pareto point (MLPerf Endpoints §6.1); others are refused;
- a v1.0 point directory (`r<N>/` with `point.yaml` and `result_summary.json`), which is
  what `rollbench export` writes, so an export imports again with the same figures;
- a v0.7 `run_metadata.json` file (or a folder holding one). It carries no distribution, so
  its figures become a `result_summary.json` in nanoseconds (written beside the imported
  file and marked as synthesized) and go through the same `point_metrics` as every other
  point; what v0.7 does not record is listed in the point's `metrics["not_measured"]`.

Everything is read and checked before anything is written: one malformed file and the
import raises `InteropError` (naming the file and the field) with nothing added. The store
writes join the caller's transaction; the copies of the imported files are written last.

Units rule. Times in `result_summary.json` are nanoseconds. A closed loop at concurrency C
that completed N requests in D ns had a mean latency of C·D/N; when that is under 1 µs no
HTTP request could have been that fast, so D was written in another unit (seconds or
milliseconds) and the file is refused, naming `duration_ns`; so it is when it is over a
day (a duration in picoseconds, say). The same 1 µs floor applies
to the TTFT and latency medians. In `run_metadata.json` (seconds and milliseconds) the
stated `qps` and `system_tps` must agree within 1 % with what the counts and
`measured_run_duration` give, which catches a duration given in ns or ms.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
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
from orchestrator.frontier.models import FrontierVersion
from orchestrator.frontier.service import apply_change, check_window
from orchestrator.interop.formats import (
    InteropError,
    PointYamlDoc,
    ReferenceConfigDoc,
    ResultSummaryDoc,
    RunMetadataV07,
    to_reference_counting,
    validate,
)
from orchestrator.runs.metrics import MetricsError, point_metrics
from orchestrator.runs.models import Point, PointState, Run, RunKind, RunState
from orchestrator.submissions.models import Submission, SubmissionSource, SubmissionState
from orchestrator.systems.models import System
from orchestrator.workloads.models import Workload

__all__ = [
    "FORMAT_REFERENCE",
    "FORMAT_V07",
    "FORMAT_V1",
    "ImportResult",
    "ParsedPoint",
    "import_mlperf",
    "read_import",
    "redact",
    "redact_mapping",
]

FORMAT_REFERENCE: Final = "reference-client run folder"
FORMAT_V1: Final = "v1.0 point directory"
FORMAT_V07: Final = "v0.7 run_metadata.json"
REVIEW_COMMENT: Final = "imported baseline"
MIN_LATENCY_NS: Final = 1_000.0  # no HTTP request completes in under 1 µs
MAX_LATENCY_NS: Final = 86_400e9  # nor does a benchmark's mean request last over a day
RATE_TOLERANCE: Final = 0.01
SECRET_KEYS: Final = frozenset({"api_key", "apikey", "authorization", "password", "secret"})
V07_MISSING_ALWAYS: Final = (
    "n_samples_failed",
    "error_rate",
    "success_qps",
    "input_sequence_lengths",
    "std_dev",
    "percentiles other than 50, 90, 95, 99 and 99.9",
)


@dataclass(frozen=True)
class ParsedPoint:
    """One checked, not yet stored, imported point."""

    source: Path  # the run folder, point directory or run_metadata.json it came from
    format: str
    concurrency: int
    metrics: dict[str, Any]
    # file name in the store -> the file to copy, or the document to write (JSON / YAML)
    files: dict[str, Path | dict[str, Any]]
    server_config: dict[str, Any]
    primary: str  # which of `files` is the result summary the run points at


@dataclass(frozen=True)
class ImportResult:
    submission: Submission
    runs: list[Run]
    points: list[Point]
    frontier: FrontierVersion | None
    stored_at: Path = field(default_factory=Path)


# --------------------------------------------------------------------------- reading


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InteropError(f"cannot read: {exc}", path) from None
    except json.JSONDecodeError as exc:
        raise InteropError(f"not JSON: {exc}", path) from None


def _load_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InteropError(f"cannot read: {exc}", path) from None
    except yaml.YAMLError as exc:
        raise InteropError(f"not YAML: {str(exc).splitlines()[0]}", path) from None


def redact(doc: Any) -> Any:
    """`doc` with credentials (api keys, authorization headers, ...) replaced by "<redacted>"."""
    if isinstance(doc, Mapping):
        out: dict[str, Any] = {}
        for key, value in doc.items():
            name = str(key).lower()
            if name in SECRET_KEYS and value not in (None, ""):
                out[key] = "<redacted>"
            elif name == "headers" and isinstance(value, Mapping):
                out[key] = {k: "<redacted>" for k in value}
            else:
                out[key] = redact(value)
        return out
    if isinstance(doc, list):
        return [redact(v) for v in doc]
    return doc


def redact_mapping(doc: Mapping[str, Any]) -> dict[str, Any]:
    """`redact` of an object, typed as one."""
    out = redact(doc)
    assert isinstance(out, dict)
    return out


def _median(doc: Mapping[str, Any], name: str) -> tuple[float, str] | None:
    series = doc.get(name)
    if not isinstance(series, Mapping):
        return None
    pct = series.get("percentiles") or {}
    for key in ("50.0", "50"):
        value = pct.get(key)
        if isinstance(value, (int, float)):
            return float(value), f"{name}.percentiles.{key}"
    value = series.get("median")
    if isinstance(value, (int, float)):
        return float(value), f"{name}.median"
    return None


def _summary_metrics(raw: Any, path: Path, concurrency: int) -> dict[str, Any]:
    """Check one result summary (format, counts, units) and compute its point's figures."""
    validate(ResultSummaryDoc, raw, path)
    doc = to_reference_counting(raw)
    issued, completed = doc["n_samples_issued"], doc["n_samples_completed"]
    failed, duration_ns = doc["n_samples_failed"], float(doc["duration_ns"])
    if completed == 0:
        raise InteropError(
            "is 0: no request completed, there is no point", path, "n_samples_completed"
        )
    if completed > issued:
        raise InteropError(
            f"{completed} exceeds n_samples_issued ({issued})", path, "n_samples_completed"
        )
    if failed > completed:
        raise InteropError(
            f"{failed} exceeds n_samples_completed ({completed})", path, "n_samples_failed"
        )
    implied_ns = concurrency * duration_ns / completed
    if not MIN_LATENCY_NS <= implied_ns <= MAX_LATENCY_NS:
        raise InteropError(
            f"{duration_ns:g} for {completed} requests at concurrency {concurrency} implies a "
            f"mean latency of {implied_ns:.3g} ns; durations are in nanoseconds (was it "
            "written in seconds or milliseconds?)",
            path,
            "duration_ns",
        )
    for name in ("ttft", "latency"):
        median = _median(doc, name)
        if median is not None and 0 <= median[0] < MIN_LATENCY_NS:
            raise InteropError(
                f"{median[0]:g} is under 1 µs; times are in nanoseconds (was it written in "
                "seconds or milliseconds?)",
                path,
                median[1],
            )
    try:
        return point_metrics(doc, concurrency)
    except MetricsError as exc:
        raise InteropError(str(exc).split(": ", 1)[-1], path, exc.field) from None


def _relevant_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """What a submission's server_config keeps of a reference-client config.yaml."""
    settings = config.get("settings") or {}
    endpoint = config.get("endpoint_config") or {}
    return redact_mapping(
        {
            "name": config.get("name"),
            "type": config.get("type"),
            "model_params": config.get("model_params"),
            "load_pattern": settings.get("load_pattern"),
            "runtime": settings.get("runtime"),
            "warmup": settings.get("warmup"),
            "api_type": endpoint.get("api_type") if isinstance(endpoint, Mapping) else None,
        }
    )


def _check_run_config(raw: Mapping[str, Any], path: Path, concurrency: int) -> None:
    """The summary's own run_config, when present, must describe the same load."""
    run_config = raw.get("run_config")
    pattern = run_config.get("load_pattern") if isinstance(run_config, Mapping) else None
    if not isinstance(pattern, Mapping):
        return
    kind = pattern.get("type")
    if kind is not None and kind != "concurrency":
        raise InteropError(
            f"is {kind!r}: only concurrency runs are Pareto points",
            path,
            "run_config.load_pattern.type",
        )
    target = pattern.get("target_concurrency")
    if target is not None and target != concurrency:
        raise InteropError(
            f"is {target!r} but the run's configuration says {concurrency}",
            path,
            "run_config.load_pattern.target_concurrency",
        )


def _parse_reference(folder: Path) -> ParsedPoint:
    summary_path = folder / "performance" / "result_summary.json"
    config_path = folder / "config.yaml"
    if not summary_path.is_file():
        raise InteropError(
            "missing: a reference-client run folder holds performance/result_summary.json",
            summary_path,
        )
    if not config_path.is_file():
        raise InteropError(
            "missing: a reference-client run folder holds config.yaml (the concurrency is its "
            "settings.load_pattern.target_concurrency)",
            config_path,
        )
    raw_config = _load_yaml(config_path)
    config = validate(ReferenceConfigDoc, raw_config, config_path)
    pattern = config.settings.load_pattern
    if pattern.type != "concurrency":
        raise InteropError(
            f"is {pattern.type!r}: only closed-loop concurrency runs are Pareto points "
            "(MLPerf Endpoints §6.1); this run cannot join a frontier",
            config_path,
            "settings.load_pattern.type",
        )
    if pattern.target_concurrency is None:
        raise InteropError("is missing", config_path, "settings.load_pattern.target_concurrency")
    concurrency = pattern.target_concurrency
    raw = _load_json(summary_path)
    metrics = _summary_metrics(raw, summary_path, concurrency)
    _check_run_config(raw, summary_path, concurrency)
    return ParsedPoint(
        source=folder,
        format=FORMAT_REFERENCE,
        concurrency=concurrency,
        metrics=metrics,
        files={"result_summary.json": summary_path, "config.yaml": redact(raw_config)},
        server_config=_relevant_config(raw_config),
        primary="result_summary.json",
    )


def _parse_v1_point(folder: Path) -> ParsedPoint:
    yaml_path = folder / "point.yaml"
    summary_path = folder / "result_summary.json"
    point = validate(PointYamlDoc, _load_yaml(yaml_path), yaml_path)
    if point.runtime_settings.load_pattern != "concurrency":
        raise InteropError(
            f"is {point.runtime_settings.load_pattern!r}: only concurrency points join a frontier",
            yaml_path,
            "runtime_settings.load_pattern",
        )
    if not summary_path.is_file():
        raise InteropError(
            "missing: a v1.0 point directory holds result_summary.json", summary_path
        )
    raw = _load_json(summary_path)
    metrics = _summary_metrics(raw, summary_path, point.concurrency)
    _check_run_config(raw, summary_path, point.concurrency)
    files: dict[str, Path | dict[str, Any]] = {
        "result_summary.json": summary_path,
        "point.yaml": yaml_path,
    }
    server_config: dict[str, Any] = {"model_name": point.model_name, "dataset": point.dataset}
    config_path = folder / "config.yaml"
    if config_path.is_file():
        raw_config = _load_yaml(config_path)
        if isinstance(raw_config, Mapping):
            files["config.yaml"] = redact(raw_config)
            server_config.update(_relevant_config(raw_config))
    return ParsedPoint(
        source=folder,
        format=FORMAT_V1,
        concurrency=point.concurrency,
        metrics=metrics,
        files=files,
        server_config=server_config,
        primary="result_summary.json",
    )


def _close(stated: float, derived: float) -> bool:
    return abs(stated - derived) <= RATE_TOLERANCE * max(abs(stated), abs(derived), 1e-12)


def _v07_series(meta: RunMetadataV07, name: str) -> tuple[dict[str, Any] | None, list[str]]:
    """One `measured_latency_<name>_*` family as a result-summary series in ns."""
    figures = {
        suffix: getattr(meta, f"measured_latency_{name}_{suffix}")
        for suffix in ("min", "average", "p50", "p90", "p95", "p99", "p999", "max")
    }
    missing = [f"measured_latency_{name}_{s}" for s, v in figures.items() if v is None]
    if all(v is None for v in figures.values()):
        return None, missing
    ns = {k: None if v is None else v * 1e6 for k, v in figures.items()}
    keys = {"p50": "50.0", "p90": "90.0", "p95": "95.0", "p99": "99.0", "p999": "99.9"}
    series: dict[str, Any] = {
        "min": ns["min"],
        "max": ns["max"],
        "avg": ns["average"],
        "median": ns["p50"],
        "percentiles": {key: ns[s] for s, key in keys.items() if ns[s] is not None},
    }
    return {k: v for k, v in series.items() if v is not None}, missing


def _parse_v07(path: Path) -> ParsedPoint:
    meta = validate(RunMetadataV07, _load_json(path), path)
    concurrency, duration_s = meta.concurrency, meta.measured_run_duration
    requests = meta.measured_total_requests
    if requests == 0:
        raise InteropError(
            "is 0: no request completed, there is no point", path, "measured_total_requests"
        )
    if meta.qps is not None and not _close(meta.qps, requests / duration_s):
        raise InteropError(
            f"{meta.qps:g} disagrees with measured_total_requests / measured_run_duration = "
            f"{requests / duration_s:.6g}; measured_run_duration must be in seconds",
            path,
            "qps",
        )
    tokens = meta.measured_total_output_tokens
    if tokens is None and meta.system_tps is not None:
        tokens = meta.system_tps * duration_s
    elif (
        tokens is not None
        and meta.system_tps is not None
        and not _close(meta.system_tps, tokens / duration_s)
    ):
        raise InteropError(
            f"{meta.system_tps:g} disagrees with measured_total_output_tokens / "
            f"measured_run_duration = {tokens / duration_s:.6g}; measured_run_duration "
            "must be in seconds",
            path,
            "system_tps",
        )
    implied_ns = concurrency * duration_s * 1e9 / requests
    if not MIN_LATENCY_NS <= implied_ns <= MAX_LATENCY_NS:
        raise InteropError(
            f"{duration_s:g} s for {requests} requests at concurrency {concurrency} implies a "
            f"mean latency of {implied_ns / 1e9:.3g} s; measured_run_duration must be in "
            "seconds",
            path,
            "measured_run_duration",
        )
    if (
        meta.ttft is not None
        and meta.measured_latency_ttft_p99 is not None
        and not _close(meta.ttft, meta.measured_latency_ttft_p99)
    ):
        raise InteropError(
            f"{meta.ttft:g} differs from measured_latency_ttft_p99 "
            f"({meta.measured_latency_ttft_p99:g}); v0.7 defines ttft as TTFT p99 in ms",
            path,
            "ttft",
        )
    not_measured = list(V07_MISSING_ALWAYS)
    doc: dict[str, Any] = {
        "version": "synthesized by rollbench from a v0.7 run_metadata.json",
        "n_samples_issued": requests,
        "n_samples_completed": requests,
        "n_samples_failed": 0,
        "duration_ns": duration_s * 1e9,
    }
    for source, target in (("ttft", "ttft"), ("tpot", "tpot"), ("request", "latency")):
        series, missing = _v07_series(meta, source)
        not_measured.extend(missing)
        if series is not None:
            doc[target] = series
    if meta.ttft is not None and "ttft" not in doc:
        doc["ttft"] = {"percentiles": {"99.0": meta.ttft * 1e6}}
    if tokens is not None:
        doc["output_sequence_lengths"] = {"total": tokens}
    else:
        not_measured.append("measured_total_output_tokens")
    doc["qps"] = requests / duration_s
    doc["tps"] = None if tokens is None else tokens / duration_s
    doc["run_config"] = {
        "load_pattern": {
            "type": "concurrency",
            "target_qps": None,
            "target_concurrency": concurrency,
        }
    }
    doc["imported_from"] = {"format": FORMAT_V07, "file": path.name, "not_measured": not_measured}
    metrics = _summary_metrics(doc, path, concurrency)
    # v0.7 records no failures: the error rate is unknown, not zero
    metrics["error_rate"] = None
    metrics["success_qps"] = None
    metrics["not_measured"] = not_measured
    return ParsedPoint(
        source=path,
        format=FORMAT_V07,
        concurrency=concurrency,
        metrics=metrics,
        files={"run_metadata.json": path, "result_summary.json": doc},
        server_config=redact(
            {
                "node_config": meta.node_config,
                "config_summary": meta.model_extra and meta.model_extra.get("config_summary"),
            }
        ),
        primary="result_summary.json",
    )


def _kind(folder: Path) -> str | None:
    if (folder / "point.yaml").is_file():
        return FORMAT_V1
    if (folder / "run_metadata.json").is_file():
        return FORMAT_V07
    if (folder / "performance").is_dir() or (folder / "config.yaml").is_file():
        return FORMAT_REFERENCE
    return None


def _discover(path: Path) -> list[tuple[str, Path]]:
    if not path.exists():
        raise InteropError("does not exist", path)
    if path.is_file():
        if path.suffix.lower() == ".json":
            return [(FORMAT_V07, path)]
        raise InteropError(
            "is not a run folder, a directory of run folders or a run_metadata.json file", path
        )
    kind = _kind(path)
    if kind is not None:
        return [(kind, path if kind != FORMAT_V07 else path / "run_metadata.json")]
    found: list[tuple[str, Path]] = []
    for root, dirs, _files in os.walk(path):
        dirs.sort()
        here = Path(root)
        kind = _kind(here) if here != path else None
        if kind is not None:
            found.append((kind, here if kind != FORMAT_V07 else here / "run_metadata.json"))
            dirs.clear()  # a run folder's own subfolders are part of it
    if not found:
        raise InteropError(
            "holds no run folder (performance/result_summary.json + config.yaml), v1.0 point "
            "directory (point.yaml + result_summary.json) or run_metadata.json",
            path,
        )
    return found


_PARSERS = {FORMAT_REFERENCE: _parse_reference, FORMAT_V1: _parse_v1_point, FORMAT_V07: _parse_v07}


def read_import(path: Path) -> list[ParsedPoint]:
    """Every point under `path`, checked; raises InteropError at the first bad file."""
    parsed = [_PARSERS[kind](where) for kind, where in _discover(path)]
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


def _write_files(parsed: Sequence[ParsedPoint], root: Path) -> None:
    for point in parsed:
        folder = root / f"c{point.concurrency}"
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in point.files.items():
            target = folder / name
            if isinstance(content, Path):
                shutil.copyfile(content, target)
            elif name.endswith(".json"):
                target.write_text(json.dumps(content, indent=2), encoding="utf-8")
            else:
                target.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")


def _sha256(content: Path | dict[str, Any]) -> str:
    if isinstance(content, Path):
        return hashlib.sha256(content.read_bytes()).hexdigest()
    return hashlib.sha256(json.dumps(content, indent=2).encode()).hexdigest()


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
    for position, item in enumerate(parsed):
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
                "sha256": {name: _sha256(c) for name, c in item.files.items()},
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
        _write_files(parsed, root)
    except OSError as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise InteropError(f"cannot store the imported files: {exc}", root) from None
    return ImportResult(
        submission=submission, runs=runs, points=points, frontier=frontier, stored_at=root
    )
