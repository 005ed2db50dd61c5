"""Export a point as a v0.7 `run_metadata.json` (seconds and milliseconds).

The file is computed from the point's canonical metrics, as the MLCommons field guide
(`docs/run-metadata-fields.md`) defines it: `measured_total_requests = n_samples_completed`,
`measured_run_duration = duration_ns / 1e9`, `system_tps = output tokens / duration`,
`tps_per_user = system_tps / concurrency`, `qps = requests / duration`, `ttft` = TTFT p99 in
ms, `measured_latency_*` in ms. A figure the point lacks is null.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from sqlmodel import Session

from orchestrator.interop.export_context import (
    PARALLELISM,
    node_config,
    point_context,
    write_json,
)
from orchestrator.runs.metrics import DISTRIBUTIONS, percentile_ms
from orchestrator.runs.models import Point
from orchestrator.systems.models import System

__all__ = ["run_metadata_v07", "write_point_v07"]

_V07_SERIES: Final = (("ttft", "ttft"), ("tpot", "tpot"), ("request", "latency"))
# v0.7 suffix -> the series' own figure (str) or the percentile (float) it is
_V07_FIGURES: Final[tuple[tuple[str, str | float], ...]] = (
    ("min", "min"),
    ("average", "avg"),
    ("p50", 50.0),
    ("p90", 90.0),
    ("p95", 95.0),
    ("p99", 99.0),
    ("p999", 99.9),
    ("max", "max"),
)


def _config_summary(system: System) -> dict[str, Any]:
    topology = system.topology or {}
    return {name: topology.get(name) for name in PARALLELISM}


def run_metadata_v07(session: Session, *, point: Point) -> dict[str, Any]:
    """The point as a v0.7 `run_metadata.json` (seconds and milliseconds)."""
    ctx = point_context(session, point)
    m = point.metrics
    duration_s = m.get("duration_s")
    completed = m.get("completed")
    tokens = m.get("output_tokens")
    system_tps = tokens / duration_s if tokens is not None and duration_s else m.get("tps")
    qps = completed / duration_s if completed is not None and duration_s else None
    doc: dict[str, Any] = {
        "run_date": ctx.run.finished_at.date().isoformat() if ctx.run.finished_at else None,
        "node_config": node_config(ctx.system),
        "config_summary": _config_summary(ctx.system),
        "config_summary_notes": None,
        "concurrency": point.concurrency,
        "system_tps": system_tps,
        "tps_per_user": None if system_tps is None else system_tps / point.concurrency,
        "ttft": percentile_ms(m, "ttft", 99),
        "qps": qps,
        "tps_utilization": None,
        "measured_total_output_tokens": tokens,
        "measured_run_duration": duration_s,
        "measured_total_requests": completed,
        "link_config": None,
        "link_logs": None,
    }
    for family, name in _V07_SERIES:
        series = m.get(DISTRIBUTIONS[name]) or {}
        for suffix, source in _V07_FIGURES:
            doc[f"measured_latency_{family}_{suffix}"] = (
                series.get(source) if isinstance(source, str) else percentile_ms(m, name, source)
            )
    return doc


def write_point_v07(session: Session, *, point: Point, out: Path) -> Path:
    """The point's v0.7 `run_metadata.json` under `out/point_<N>/`; returns the file."""
    folder = out / f"point_{point.concurrency}"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "run_metadata.json"
    write_json(target, run_metadata_v07(session, point=point))
    return target
