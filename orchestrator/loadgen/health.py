"""Did the client measure the endpoint, or itself? Harness health of one level.

A level is invalid when any client process ran out of CPU, its event loop made ready
callbacks wait too long (that wait lands in TTFT and gaps), or — open loop — requests left
later than scheduled. Delivered concurrency below the level asked for is reported too.
The verdict and every reason go into the summary; a saturated level is never reported as a
clean figure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from orchestrator.loadgen.protocol import HealthReport
from orchestrator.loadgen.spec import HarnessLimits


def assess(
    reports: list[HealthReport],
    *,
    limits: HarnessLimits,
    pattern: str,
    level: float,
    delivered_concurrency: float | None,
    issue_lag_p99_ns: float | None,
    interrupted: bool,
) -> dict[str, Any]:
    reasons: list[str] = []
    warnings: list[str] = []
    processes = []
    for i, r in enumerate(reports):
        util = r.cpu_s / r.wall_s if r.wall_s > 0 else 0.0
        lag = np.asarray(r.loop_lag_ns, dtype=np.int64)
        lag_p99_ms = float(np.percentile(lag, 99, method="lower")) / 1e6 if lag.size else 0.0
        lag_max_ms = float(lag.max()) / 1e6 if lag.size else 0.0
        processes.append(
            {
                "cpu_s": round(r.cpu_s, 4),
                "wall_s": round(r.wall_s, 4),
                "cpu_util": round(util, 4),
                "loop_lag_p99_ms": round(lag_p99_ms, 4),
                "loop_lag_max_ms": round(lag_max_ms, 4),
                "loop_lag_samples": int(lag.size),
                "connections_opened": r.connections_opened,
                "stale_connection_resends": r.stale_resends,
                "server_keeps_connections_alive": r.keep_alive,
                "drained_by_deadline": r.drained_by_deadline,
            }
        )
        # Over a very short level the CPU ratio is start-up noise; loop lag still applies.
        if util > limits.max_cpu_util and r.wall_s >= 1.0:
            reasons.append(
                f"client process {i} used {util:.0%} of a core (limit {limits.max_cpu_util:.0%})"
            )
        if lag_p99_ms > limits.max_loop_lag_p99_ms:
            reasons.append(
                f"client process {i} event-loop lag p99 {lag_p99_ms:.1f} ms "
                f"(limit {limits.max_loop_lag_p99_ms:g} ms)"
            )
    if pattern == "poisson" and issue_lag_p99_ns is not None:
        lag_ms = issue_lag_p99_ns / 1e6
        if lag_ms > limits.max_issue_lag_p99_ms:
            reasons.append(
                f"issue lag p99 {lag_ms:.1f} ms behind the Poisson schedule "
                f"(limit {limits.max_issue_lag_p99_ms:g} ms)"
            )
    ratio = None
    if pattern == "concurrency" and delivered_concurrency is not None and level > 0:
        ratio = delivered_concurrency / level
        if ratio < limits.min_delivered_concurrency_ratio:
            warnings.append(
                f"delivered concurrency {delivered_concurrency:.1f} is {ratio:.0%} of {level:g} "
                "(ramp-up and drain tail count; long levels approach 100 %)"
            )
    if any(r.gave_up for r in reports):
        reasons.append("stopped early: every request of the level so far had failed")
    if interrupted:
        reasons.append("interrupted by the operator before the level's stop condition")
    sources: dict[str, int] = {}
    for r in reports:
        for k, v in r.token_sources.items():
            sources[k] = sources.get(k, 0) + v
    return {
        "valid": not reasons,
        "reasons": reasons,
        "warnings": warnings,
        "delivered_concurrency_ratio": ratio,
        "processes": processes,
        "token_sources": sources,
    }
