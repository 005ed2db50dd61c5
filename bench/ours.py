"""Run rollbench's own client the way `peers.py` runs the peers, so the figures compare.

The client runs as `rollbench run` in its own session, pinned with taskset, through the same
bounded runner and CPU sampler as the peers; its measurement window (first issue → last
completion, CLOCK_MONOTONIC) comes from its own per-request records.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from peers import _base_result, _finish, run_bounded, window_cpu

EVENTS_PER_STREAM_EXTRA = 4  # role chunk, finish chunk, usage chunk, [DONE]


def _pct_ms(dist: dict[str, Any] | None, key: str) -> float | None:
    return None if not dist else dist["percentiles"][key] / 1e6


def run_rollbench(
    base_url: str,
    model: str,
    concurrency: int,
    n_requests: int,
    timeout_s: float,
    *,
    tokens: int = 16,
    client_cpus: str | None = "0",
    transport: str = "native",
    workers: int = 1,
    extra_args: tuple[str, ...] = (),
) -> dict[str, Any]:
    """`rollbench run` at one concurrency level; figures from its own result files."""
    with tempfile.TemporaryDirectory(prefix="rollbench-ours-") as tmp_s:
        tmp = Path(tmp_s)
        out_dir = tmp / "run"
        cmd = [
            sys.executable,
            "-m",
            "orchestrator.cli",
            "run",
            "--url",
            base_url,
            "--model",
            model,
            "--levels",
            str(concurrency),
            "--requests",
            str(n_requests),
            "--warmup",
            str(concurrency),
            "--synthetic",
            f"isl=16,osl={tokens}",
            "--workers",
            str(workers),
            "--transport",
            transport,
            "--out",
            str(out_dir),
            *extra_args,
        ]
        out = run_bounded(cmd, dict(os.environ), timeout_s, client_cpus, tmp / "client.log")
        name = "rollbench" if transport == "native" else f"rollbench-{transport}"
        res = _base_result(
            name, sys.executable, "rollbench", cmd, out, concurrency, n_requests, client_cpus
        )
        summaries = sorted(out_dir.glob("*/performance/result_summary.json"))
        if out.timed_out or not summaries:
            res["error"] = (
                f"no result ({'timed out' if out.timed_out else out.returncode}): "
                + (out.log_tail[-1500:])
            )
            return res
        s = json.loads(summaries[0].read_text())
        extra = s["rollbench"]
        duration_s = s["duration_ns"] / 1e9
        ttft = s["ttft"] or {}
        pct = ttft.get("percentiles") or {}
        records = np.load(summaries[0].parent.parent / "records.npz")
        start_ns, end_ns = int(records["issue_ns"].min()), int(records["end_ns"].max())
        chunks = int(records["chunks"].sum())
        res.update(
            {
                "ok": out.returncode == 0,
                "completed": s["n_samples_completed"],
                "failed": s["n_samples_failed"],
                "duration_s": duration_s,
                "qps": s["qps"],
                "latency_avg_s": s["latency"]["avg"] / 1e9,
                "ttft_p50_ms": pct.get("50.0", float("nan")) / 1e6,
                "ttft_p90_ms": pct.get("90.0", float("nan")) / 1e6,
                "ttft_p99_ms": pct.get("99.0", float("nan")) / 1e6,
                "sse_events": chunks + EVENTS_PER_STREAM_EXTRA * s["n_samples_completed"],
                "harness_valid": extra["harness"]["valid"],
                "harness_reasons": extra["harness"]["reasons"],
                "read_delay_p50_ms": _pct_ms(extra.get("read_delay_ns"), "50.0"),
                "read_delay_p99_ms": _pct_ms(extra.get("read_delay_ns"), "99.0"),
                "read_delay_max_ms": (extra.get("read_delay_ns") or {}).get("max", 0) / 1e6
                if extra.get("read_delay_ns")
                else None,
                "loop_lag_p99_ms": max(p["loop_lag_p99_ms"] for p in extra["harness"]["processes"]),
            }
        )
        _finish(res, window_cpu(out.samples, start_ns, end_ns, "mono_ns"))
        if res.get("window_tree_cpu_s") and res["sse_events"]:
            res["cpu_us_per_event"] = res["window_tree_cpu_s"] / res["sse_events"] * 1e6
        return res
