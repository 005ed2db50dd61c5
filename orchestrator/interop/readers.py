"""Read reference-client run folders and v1.0 point directories into checked points.

An import (importer.py) reads three shapes, alone or many under one directory (`discover`
finds them); this module reads two of them, and readers_v07.py the third. Each reader checks
its files and returns a `ParsedPoint` — the figures `point_metrics` computes for every point,
and the files to keep — with nothing stored yet:

- a run folder of the MLCommons reference client: `performance/result_summary.json` plus
  `config.yaml`, whose `settings.load_pattern` gives the concurrency. Only the closed-loop
  `concurrency` pattern makes a Pareto point (MLPerf Endpoints §6.1); others are refused;
- a v1.0 point directory (`r<N>/` with `point.yaml` and `result_summary.json`), which is
  what `rollbench export` writes, so an export imports again with the same figures;
- a v0.7 `run_metadata.json` file (or a folder holding one): readers_v07.py.

Units rule. Times in `result_summary.json` are nanoseconds. A closed loop at concurrency C
that completed N requests in D ns had a mean latency of C·D/N; when that is under 1 µs no
HTTP request could have been that fast, so D was written in another unit (seconds or
milliseconds) and the file is refused, naming `duration_ns`; so it is when it is over a
day (a duration in picoseconds, say). The same 1 µs floor applies
to the TTFT and latency medians.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from orchestrator.interop.formats import (
    InteropError,
    PointYamlDoc,
    ReferenceConfigDoc,
    ResultSummaryDoc,
    to_reference_counting,
    validate,
)
from orchestrator.interop.redact import redact, redact_mapping
from orchestrator.runs.metrics import MetricsError, point_metrics

__all__ = [
    "FORMAT_REFERENCE",
    "FORMAT_V07",
    "FORMAT_V1",
    "MAX_LATENCY_NS",
    "MIN_LATENCY_NS",
    "ParsedPoint",
    "discover",
    "load_json",
    "load_yaml",
    "parse_reference",
    "parse_v1_point",
    "summary_metrics",
]

FORMAT_REFERENCE: Final = "reference-client run folder"
FORMAT_V1: Final = "v1.0 point directory"
FORMAT_V07: Final = "v0.7 run_metadata.json"
MIN_LATENCY_NS: Final = 1_000.0  # no HTTP request completes in under 1 µs
MAX_LATENCY_NS: Final = 86_400e9  # nor does a benchmark's mean request last over a day


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


def load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InteropError(f"cannot read: {exc}", path) from None
    except json.JSONDecodeError as exc:
        raise InteropError(f"not JSON: {exc}", path) from None


def load_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InteropError(f"cannot read: {exc}", path) from None
    except yaml.YAMLError as exc:
        raise InteropError(f"not YAML: {str(exc).splitlines()[0]}", path) from None


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


def summary_metrics(raw: Any, path: Path, concurrency: int) -> dict[str, Any]:
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


def parse_reference(folder: Path) -> ParsedPoint:
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
    raw_config = load_yaml(config_path)
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
    raw = load_json(summary_path)
    metrics = summary_metrics(raw, summary_path, concurrency)
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


def parse_v1_point(folder: Path) -> ParsedPoint:
    yaml_path = folder / "point.yaml"
    summary_path = folder / "result_summary.json"
    point = validate(PointYamlDoc, load_yaml(yaml_path), yaml_path)
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
    raw = load_json(summary_path)
    metrics = summary_metrics(raw, summary_path, point.concurrency)
    _check_run_config(raw, summary_path, point.concurrency)
    files: dict[str, Path | dict[str, Any]] = {
        "result_summary.json": summary_path,
        "point.yaml": yaml_path,
    }
    server_config: dict[str, Any] = {"model_name": point.model_name, "dataset": point.dataset}
    config_path = folder / "config.yaml"
    if config_path.is_file():
        raw_config = load_yaml(config_path)
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


def _kind(folder: Path) -> str | None:
    if (folder / "point.yaml").is_file():
        return FORMAT_V1
    if (folder / "run_metadata.json").is_file():
        return FORMAT_V07
    if (folder / "performance").is_dir() or (folder / "config.yaml").is_file():
        return FORMAT_REFERENCE
    return None


def discover(path: Path) -> list[tuple[str, Path]]:
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
