"""Read a v0.7 `run_metadata.json` into a checked point (the third shape an import reads).

A v0.7 file carries no distribution, so its figures become a `result_summary.json` in
nanoseconds (written beside the imported file and marked as synthesized) and go through the
same checks and `point_metrics` as every other point (readers.py); what v0.7 does not record
is listed in the point's `metrics["not_measured"]`.

Units rule. In `run_metadata.json` (seconds and milliseconds) the stated `qps` and
`system_tps` must agree within 1 % with what the counts and `measured_run_duration` give,
which catches a duration given in ns or ms; the mean latency they imply must lie between
1 µs and a day, as in readers.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from orchestrator.interop.formats import InteropError, RunMetadataV07, validate
from orchestrator.interop.readers import (
    FORMAT_V07,
    MAX_LATENCY_NS,
    MIN_LATENCY_NS,
    ParsedPoint,
    load_json,
    summary_metrics,
)
from orchestrator.interop.redact import redact

__all__ = ["V07_MISSING_ALWAYS", "parse_v07"]

RATE_TOLERANCE: Final = 0.01
V07_MISSING_ALWAYS: Final = (
    "n_samples_failed",
    "error_rate",
    "success_qps",
    "input_sequence_lengths",
    "std_dev",
    "percentiles other than 50, 90, 95, 99 and 99.9",
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


def parse_v07(path: Path) -> ParsedPoint:
    meta = validate(RunMetadataV07, load_json(path), path)
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
    metrics = summary_metrics(doc, path, concurrency)
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
