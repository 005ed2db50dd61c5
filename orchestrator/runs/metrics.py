"""A point's figures, derived from a `result_summary.json` in the reference client's format.

Measured points (our sweeps write that format) and imported ones (the MLCommons reference
client writes it) go through the same function, so a point's figures mean the same thing
whichever way it arrived. Latencies are in milliseconds; percentile keys are the reference
client's decimal strings ("99.0", "99.9").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from orchestrator.stats.percentiles import percentile_key

NS_PER_MS = 1e6
DISTRIBUTIONS = {"ttft": "ttft_ms", "tpot": "tpot_ms", "latency": "latency_ms"}


class MetricsError(ValueError):
    """A result summary that cannot be read; `field` names the offending key."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def _number(doc: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> float | None:
    value = doc.get(key)
    if value is None:
        if required:
            raise MetricsError("missing", f"{where}{key}")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MetricsError(f"must be a finite number, not {value!r}", f"{where}{key}")
    return float(value)


def _distribution_ms(doc: Any, name: str) -> dict[str, Any] | None:
    if doc is None:
        return None
    if not isinstance(doc, Mapping):
        raise MetricsError("must be an object", name)
    out: dict[str, Any] = {}
    for key in ("min", "avg", "max"):
        value = _number(doc, key, f"{name}.", required=False)
        out[key] = None if value is None else value / NS_PER_MS
    percentiles = doc.get("percentiles") or {}
    if not isinstance(percentiles, Mapping):
        raise MetricsError("must be an object", f"{name}.percentiles")
    pct: dict[str, float] = {}
    for key in percentiles:
        if not isinstance(key, str):
            raise MetricsError('keys must be strings like "99.0"', f"{name}.percentiles")
        try:
            rank = float(key)
        except ValueError:
            raise MetricsError(f"{key!r} is not a percentile", f"{name}.percentiles") from None
        canonical = percentile_key(rank) if (rank * 10).is_integer() else key
        number = _number(percentiles, key, f"{name}.percentiles.", required=False)
        if number is not None:
            pct[canonical] = number / NS_PER_MS
    out["percentiles"] = pct
    return out


def percentile_ms(metrics: Mapping[str, Any], distribution: str, percentile: float) -> float | None:
    """The `percentile` of `distribution` ("ttft", "tpot", "latency") in ms, None if unmeasured."""
    dist = metrics.get(DISTRIBUTIONS[distribution])
    if not dist:
        return None
    value = dist["percentiles"].get(percentile_key(percentile))
    return None if value is None else float(value)


def point_metrics(summary: Mapping[str, Any], concurrency: float) -> dict[str, Any]:
    """The canonical figures of one level, from its `result_summary.json` document.

    `n_samples_completed` counts failed requests too (reference client semantics), so
    `succeeded = completed − failed`; error rate is failed / issued.
    """
    issued = _number(summary, "n_samples_issued", "")
    completed = _number(summary, "n_samples_completed", "")
    failed = _number(summary, "n_samples_failed", "")
    duration_ns = _number(summary, "duration_ns", "")
    assert issued is not None and completed is not None and failed is not None
    assert duration_ns is not None
    if duration_ns <= 0:
        raise MetricsError("must be positive (nanoseconds)", "duration_ns")
    if min(issued, completed, failed) < 0:
        raise MetricsError("counts must not be negative", "n_samples_issued")
    duration_s = duration_ns / 1e9
    osl = summary.get("output_sequence_lengths")
    isl = summary.get("input_sequence_lengths")
    output_tokens = None
    if isinstance(osl, Mapping):
        output_tokens = _number(osl, "total", "output_sequence_lengths.", required=False)
    input_tokens = None
    if isinstance(isl, Mapping):
        input_tokens = _number(isl, "total", "input_sequence_lengths.", required=False)
    tps = output_tokens / duration_s if output_tokens is not None else None
    if tps is None:
        tps = _number(summary, "tps", "", required=False)
    succeeded = completed - failed
    metrics: dict[str, Any] = {
        "concurrency": concurrency,
        "issued": int(issued),
        "completed": int(completed),
        "succeeded": int(succeeded),
        "failed": int(failed),
        "duration_s": duration_s,
        "qps": completed / duration_s,
        "success_qps": succeeded / duration_s,
        "tps": tps,
        "output_tokens": output_tokens,
        "input_tokens": input_tokens,
        "error_rate": failed / issued if issued else 0.0,
    }
    for source, target in DISTRIBUTIONS.items():
        metrics[target] = _distribution_ms(summary.get(source), source)
    tpot_p90 = percentile_ms(metrics, "tpot", 90)
    metrics["tps_per_user_v1"] = 1000.0 / tpot_p90 if tpot_p90 else None
    metrics["tps_per_user_v07"] = tps / concurrency if tps is not None and concurrency else None
    # flat figures that tables show
    for name, dist, pct in (
        ("ttft_p50_ms", "ttft", 50),
        ("ttft_p90_ms", "ttft", 90),
        ("ttft_p99_ms", "ttft", 99),
        ("tpot_p50_ms", "tpot", 50),
        ("tpot_p90_ms", "tpot", 90),
        ("tpot_p99_ms", "tpot", 99),
        ("latency_p50_ms", "latency", 50),
        ("latency_p99_ms", "latency", 99),
    ):
        metrics[name] = percentile_ms(metrics, dist, pct)
    latency = metrics["latency_ms"]
    metrics["latency_avg_ms"] = latency["avg"] if latency else None
    ours = summary.get("rollbench")
    if isinstance(ours, Mapping):
        metrics["delivered_concurrency"] = ours.get("delivered_concurrency")
        read_delay = ours.get("read_delay_ns")
        p99 = (
            (read_delay.get("percentiles") or {}).get("99.0")
            if isinstance(read_delay, Mapping)
            else None
        )
        metrics["read_delay_p99_ms"] = None if p99 is None else p99 / NS_PER_MS
        metrics["failure_counts"] = {
            k: v for k, v in (ours.get("failure_counts") or {}).items() if v
        }
    return metrics
