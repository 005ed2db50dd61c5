"""A sweep: the levels of one load pattern, measured one after another, written to disk.

Output layout (each level folder reads like a run folder of the MLCommons reference client,
so tools that read those read ours):

    OUT/sweep_summary.json                  every level's key figures and validity
    OUT/<pattern>-<level>/performance/result_summary.json
    OUT/<pattern>-<level>/records.npz       per-request records, one array per column

Every level is written as soon as it is measured, so an interrupted sweep keeps its
finished levels.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from orchestrator.loadgen import protocol as p
from orchestrator.loadgen.dataset import build_bodies, load_samples, prompt_text
from orchestrator.loadgen.health import assess
from orchestrator.loadgen.openai import ROUTES
from orchestrator.loadgen.pool import ClientPool, LevelOutcome, LevelPlan
from orchestrator.loadgen.spec import SweepSpec
from orchestrator.stats import LevelSummary, summarize_level

SWEEP_SUMMARY = "sweep_summary.json"


class SweepReporter(Protocol):
    def level_started(self, index: int, total: int, label: str) -> None: ...
    def progress(self, issued: int, completed: int, failed: int) -> None: ...
    def level_finished(self, result: LevelResult) -> None: ...


@dataclass(slots=True)
class LevelResult:
    label: str
    level: float
    folder: Path
    summary: LevelSummary
    health: dict[str, Any]
    failure_examples: dict[str, list[str]]

    def row(self) -> dict[str, Any]:
        """The figures shown in tables and in sweep_summary.json."""
        s = self.summary

        def pct(dist: Any, key: str, scale: float) -> float | None:
            return None if dist is None else dist.percentiles[key] / scale

        return {
            "label": self.label,
            "level": self.level,
            "folder": self.folder.name,
            "issued": s.issued,
            "succeeded": s.succeeded,
            "failed": s.failed,
            "duration_s": s.duration_s,
            "qps": s.qps,
            "success_qps": s.success_qps,
            "tps": s.tps,
            "ttft_p50_ms": pct(s.ttft_ns, "50.0", 1e6),
            "ttft_p99_ms": pct(s.ttft_ns, "99.0", 1e6),
            "tpot_p50_ms": pct(s.tpot_ns, "50.0", 1e6),
            "tpot_p90_ms": pct(s.tpot_ns, "90.0", 1e6),
            "tpot_p99_ms": pct(s.tpot_ns, "99.0", 1e6),
            "latency_p99_ms": pct(s.latency_ns, "99.0", 1e6),
            "tps_per_user_v1": s.tps_per_user_v1,
            "tps_per_user_v07": s.tps_per_user_v07,
            "error_rate": s.error_rate,
            "error_rate_wilson95": [s.error_rate_lower, s.error_rate_upper],
            "failure_counts": {k: v for k, v in s.failure_counts.items() if v},
            "delivered_concurrency": s.delivered_concurrency,
            "valid": self.health["valid"],
            "invalid_reasons": self.health["reasons"],
        }


@dataclass(slots=True)
class SweepResult:
    out_dir: Path
    levels: list[LevelResult]
    token_counting: str
    interrupted: bool


def token_counting_method(spec: SweepSpec) -> str:
    if spec.tokenizer is not None:
        return "tokenizer"
    if spec.include_usage or not spec.stream:
        return "usage"
    return "chunks"


def level_label(pattern: str, level: float) -> str:
    return f"{pattern}-{level:g}"


def run_sweep(
    spec: SweepSpec,
    out_dir: Path,
    *,
    reporter: SweepReporter | None = None,
    stop_requested: Callable[[], bool] | None = None,
) -> SweepResult:
    """Measure every level of `spec`, writing results under `out_dir`."""
    samples = load_samples(spec.dataset)
    bodies = build_bodies(
        samples, spec.dataset, spec.endpoint, stream=spec.stream, include_usage=spec.include_usage
    )
    input_tokens: list[int] = []
    if spec.tokenizer is not None:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(spec.tokenizer))
        input_tokens = [
            len(e.ids)
            for e in tok.encode_batch([prompt_text(s) for s in samples], add_special_tokens=False)
        ]
    headers = dict(spec.endpoint.headers)
    if spec.endpoint.api_key is not None:
        headers["Authorization"] = f"Bearer {spec.endpoint.api_key.get_secret_value()}"
    out_dir.mkdir(parents=True, exist_ok=True)
    method = token_counting_method(spec)
    results: list[LevelResult] = []
    interrupted = False
    with ClientPool(spec.auto_workers()) as pool:
        pool.setup(
            p.Setup(
                base_url=spec.endpoint.url,
                route=ROUTES[spec.endpoint.api],
                verify_tls=spec.endpoint.verify_tls,
                transport=spec.transport,
                headers=headers,
                bodies=bodies,
                input_tokens=input_tokens,
                stream=spec.stream,
                max_event_bytes=spec.max_event_bytes,
                tokenizer_path=str(spec.tokenizer) if spec.tokenizer else None,
                connect_timeout_s=spec.timeouts.connect_s,
                stall_timeout_s=spec.timeouts.stall_s,
                total_timeout_s=spec.timeouts.total_s,
                max_idle_s=spec.max_idle_s,
                connect_parallelism=spec.connect_parallelism,
            )
        )
        for i, level in enumerate(spec.levels):
            if interrupted:
                break
            if stop_requested is not None and stop_requested():
                interrupted = True
                break
            label = level_label(spec.pattern, level)
            if reporter is not None:
                reporter.level_started(i, len(spec.levels), label)
            outcome = pool.run_level(
                _plan(spec, level),
                reporter.progress if reporter is not None else None,
                stop_requested,
            )
            result = _finish_level(spec, level, label, outcome, out_dir, method, pool.workers)
            results.append(result)
            interrupted = outcome.interrupted
            _write_sweep_summary(spec, out_dir, results, method, interrupted)
            if reporter is not None:
                reporter.level_finished(result)
    _write_sweep_summary(spec, out_dir, results, method, interrupted)
    return SweepResult(out_dir, results, method, interrupted)


def _plan(spec: SweepSpec, level: float) -> LevelPlan:
    if spec.pattern == "concurrency":
        concurrency, rate, n = int(level), 0.0, spec.requests
    elif spec.pattern == "poisson":
        # Connections to pre-open: the expected number in flight is unknown before measuring.
        concurrency, rate, n = min(256, max(1, int(level))), level, spec.requests
    else:
        concurrency, rate, n = int(level), 0.0, int(level)
    return LevelPlan(
        pattern=spec.pattern,
        concurrency=concurrency,
        rate_qps=rate,
        n_requests=n,
        n_warmup=spec.warmup,
        min_duration_s=spec.min_duration_s if spec.pattern != "offline" else None,
        max_duration_s=spec.max_duration_s,
        drain_timeout_s=spec.timeouts.drain_s,
        seed=spec.seed,
        give_up_after=spec.give_up_after,
    )


def _finish_level(
    spec: SweepSpec,
    level: float,
    label: str,
    outcome: LevelOutcome,
    out_dir: Path,
    method: str,
    workers: int,
) -> LevelResult:
    records = outcome.records
    summary = summarize_level(
        records,
        measurement_start_ns=outcome.measurement_start_ns,
        concurrency=int(level) if spec.pattern in ("concurrency", "offline") else None,
        target_qps=level if spec.pattern == "poisson" else None,
    )
    lag = summary.issue_lag_ns
    health = assess(
        outcome.health,
        limits=spec.limits,
        pattern=spec.pattern,
        level=level,
        delivered_concurrency=summary.delivered_concurrency,
        issue_lag_p99_ns=None if lag is None else lag.percentiles["99.0"],
        interrupted=outcome.interrupted,
    )
    folder = out_dir / label
    (folder / "performance").mkdir(parents=True, exist_ok=True)
    run_config = {
        "load_pattern": {
            "type": spec.pattern,
            "target_qps": level if spec.pattern == "poisson" else None,
            "target_concurrency": int(level) if spec.pattern != "poisson" else None,
        },
        "warmup": {"enabled": spec.warmup > 0, "n_requests": spec.warmup, "drain": True},
        "scheduler_random_seed": spec.seed,
    }
    doc = summary.to_result_summary(run_config)
    extra = doc["rollbench"]
    assert isinstance(extra, dict)
    extra["harness"] = health
    extra["token_counting"] = method
    extra["client_processes"] = workers
    extra["connections_warm"] = outcome.connections
    extra["warmup_failed"] = outcome.warmup_failed
    extra["failure_examples"] = outcome.failure_examples
    extra["spec"] = public_spec(spec)
    _write_json(folder / "performance" / "result_summary.json", doc)
    records.save(folder / "records.npz")
    return LevelResult(label, level, folder, summary, health, outcome.failure_examples)


def _write_sweep_summary(
    spec: SweepSpec, out_dir: Path, results: list[LevelResult], method: str, interrupted: bool
) -> None:
    _write_json(
        out_dir / SWEEP_SUMMARY,
        {
            "pattern": spec.pattern,
            "endpoint": {"url": spec.endpoint.url, "model": spec.endpoint.model},
            "token_counting": method,
            "interrupted": interrupted,
            "levels": [r.row() for r in results],
            "spec": public_spec(spec),
        },
    )


def public_spec(spec: SweepSpec) -> dict[str, Any]:
    """`spec` as written into result files: header values may carry credentials (the API
    key already prints masked), so only their names are kept."""
    doc = spec.model_dump(mode="json")
    doc["endpoint"]["headers"] = {name: "<redacted>" for name in doc["endpoint"]["headers"]}
    return doc


def _write_json(path: Path, doc: object) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n")
    os.replace(tmp, path)
