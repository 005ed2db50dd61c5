"""The automated checker (DESIGN §8): every rule a submission must pass before review.

Each finding has a stable id (`duration.min`), a severity — "error" blocks acceptance,
"warning" informs — whether it passed, and a sentence a submitter understands, with the
figures and the rule. Passed findings are kept too: an operator sees what was checked, not
only what failed. A passed finding carries the severity it would have had, had it failed.

Checks, per point where one applies:

- `metadata.complete`: the system declares `rules.checks.required_metadata`; the submission
  carries a server configuration (a warning only for imported submissions, whose reference
  client folders have none).
- `topology.consistent`: parallel sizes, accelerator count, nodes and model agree wherever
  they are declared (system description, server_config, endpoint, run metadata), and the
  parallel sizes fit the accelerators.
- `accuracy.required`: accuracy runs present and passing where the submission requires them.
- `points.present`: a submission with nothing measured has nothing to accept.
- `duration.min`, `samples.min`, `errors.rate`, `counts.consistent`, `metrics.consistent`,
  `littles_law`, `harness.saturated`: per point.
- `regions.*`: concurrency coverage of the whole curve (this submission's points plus the
  curve's live accepted points), see `orchestrator.review.regions`.
- `reproducibility`: against the live accepted point of the same (system, workload) at the
  same concurrency from another submission.

Reproducibility, decided: MLPerf (§6.6) gives ±5 % throughput on the same system as the
margin an audit must reproduce, and a Preview result must come back within 5 % when the
system becomes Available. Rolling submissions exist so that systems improve; so a newer
point *faster* by more than the margin is a warning (it will supersede the older point; the
operator should see that the curve moves), while one *slower* by more than the margin is an
error: either the published point does not reproduce, or the system changed and should be
declared as a new system. Either way an operator must look before the curve changes. QPS
and TPS are compared; the worse deviation decides.

A figure missing from a point (an older row, an imported point) is "not measured": the
checks that need it say so, as an error where the rule cannot be judged without it
(duration, counts, error rate) and as a warning where the figure is optional.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml
from sqlmodel import Session, col, select

from orchestrator.endpoints.models import Endpoint
from orchestrator.programme import ProgrammeRules, programme
from orchestrator.review.regions import coverage
from orchestrator.runs.models import Point, PointState, Run, RunKind, RunState
from orchestrator.stats.intervals import wilson_interval
from orchestrator.submissions.models import Submission, SubmissionSource
from orchestrator.systems.models import System

ERROR = "error"
WARNING = "warning"
LIVE = (PointState.CANDIDATE, PointState.ACCEPTED)


@dataclass(frozen=True)
class Finding:
    check: str
    severity: str  # "error" blocks acceptance | "warning" informs
    passed: bool
    message: str
    point_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def blocking(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that stop acceptance: failed, with severity error."""
    return [f for f in findings if not f.passed and f.severity == ERROR]


def run_checks(
    session: Session, *, submission: Submission, rules: ProgrammeRules | None = None
) -> list[Finding]:
    """Every finding for `submission`, passed ones too, under `rules` (default: programme)."""
    rules = rules or programme()
    system = session.get(System, submission.system_id)
    endpoint = session.get(Endpoint, submission.endpoint_id) if submission.endpoint_id else None
    points = list(
        session.exec(
            select(Point)
            .where(Point.submission_id == submission.id, col(Point.state).in_(LIVE))
            .order_by(col(Point.concurrency), col(Point.id))
        ).all()
    )
    runs = list(
        session.exec(
            select(Run).where(Run.submission_id == submission.id).order_by(col(Run.position))
        ).all()
    )
    published = list(
        session.exec(
            select(Point)
            .where(
                Point.system_id == submission.system_id,
                Point.workload_id == submission.workload_id,
                Point.state == PointState.ACCEPTED,
                Point.submission_id != submission.id,
            )
            .order_by(col(Point.created_at), col(Point.id))
        ).all()
    )
    findings = [
        *check_metadata(system, submission, rules),
        *check_topology(system, submission, endpoint, runs),
        check_accuracy(submission, runs),
    ]
    if not points:
        findings.append(
            Finding("points.present", ERROR, False, "the submission has no measured point.")
        )
    for point in points:
        findings.extend(check_point(point.id, point.concurrency, point.metrics or {}, rules))
    findings.extend(check_regions(points, published, system, rules))
    for point in points:
        findings.append(check_reproducibility(point, published, rules))
    return findings


# ----------------------------------------------------------------------------- helpers


def _figure(metrics: Mapping[str, Any], key: str) -> float | None:
    """A finite number from `metrics`, or None: "not measured"."""
    value = metrics.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _n(value: float) -> str:
    """A figure for a sentence: 212, 2.5, 0.0123, 1200."""
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.2f} %" if abs(fraction) < 0.1 else f"{fraction * 100:.1f} %"


def _close(a: float, b: float, rel: float = 1e-6) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)


# ----------------------------------------------------------------------- submission level


def check_metadata(
    system: System | None, submission: Submission, rules: ProgrammeRules
) -> list[Finding]:
    if system is None:
        return [Finding("metadata.complete", ERROR, False, "the submission's system is missing.")]
    missing = []
    for name in rules.checks.required_metadata:
        value = getattr(system, name, None)
        if isinstance(value, str):
            ok = bool(value.strip())
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            ok = value > 0
        else:
            ok = value is not None and value != {}
        if not ok:
            missing.append(name)
    out = []
    if missing:
        out.append(
            Finding(
                "metadata.complete",
                ERROR,
                False,
                f"system {system.name!r} does not declare {', '.join(missing)}; the programme "
                f"requires {', '.join(rules.checks.required_metadata)} (counts above 0).",
            )
        )
    else:
        out.append(
            Finding(
                "metadata.complete",
                ERROR,
                True,
                f"system {system.name!r} declares {', '.join(rules.checks.required_metadata)}.",
            )
        )
    imported = submission.source is SubmissionSource.IMPORTED
    if submission.server_config:
        out.append(Finding("metadata.complete", ERROR, True, "the submission has a server_config."))
    else:
        out.append(
            Finding(
                "metadata.complete",
                WARNING if imported else ERROR,
                False,
                "the submission has no server_config: a snapshot of the serving "
                "configuration (runtime flags, parallelism, batch limits) is required so "
                "that the result can be reproduced"
                + (" (imported: the reference client's folder carries none)." if imported else "."),
            )
        )
    return out


ALIASES: dict[str, str] = {
    **dict.fromkeys(
        ("tensor_parallel", "tensor_parallel_size", "tp", "tp_size"), "tensor_parallel"
    ),
    **dict.fromkeys(
        ("pipeline_parallel", "pipeline_parallel_size", "pp", "pp_size"), "pipeline_parallel"
    ),
    **dict.fromkeys(("data_parallel", "data_parallel_size", "dp", "dp_size"), "data_parallel"),
    **dict.fromkeys(
        ("expert_parallel", "expert_parallel_size", "ep", "ep_size", "moe_expert_parallel_size"),
        "expert_parallel",
    ),
    **dict.fromkeys(
        ("accelerator_count", "accelerators", "num_accelerators", "gpus", "num_gpus", "gpu_count"),
        "accelerator_count",
    ),
    **dict.fromkeys(("nodes", "num_nodes", "nnodes", "node_count"), "nodes"),
    **dict.fromkeys(("model", "model_path", "model_name"), "model"),
    **dict.fromkeys(("served_model", "served_model_name"), "served_model"),
}
TEXT_KEYS = ("model", "served_model")


def _normalise(key: str, value: Any) -> Any:
    """A comparable value, or None when the value cannot be compared (bool, dict, blank)."""
    if isinstance(value, list) and value and key in TEXT_KEYS:
        value = value[0]
    if key in TEXT_KEYS:
        return value.strip() if isinstance(value, str) and value.strip() else None
    if isinstance(value, bool):
        return None  # e.g. vLLM's enable_expert_parallel: a switch, not a size
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return int(value) if float(value).is_integer() else float(value)
    return None


def declared_topology(doc: Any, depth: int = 0) -> dict[str, Any]:
    """Canonical topology keys found anywhere in a (nested) config document; first wins."""
    out: dict[str, Any] = {}
    if not isinstance(doc, Mapping) or depth > 5:
        return out
    nested = []
    for raw_key, value in doc.items():
        key = ALIASES.get(str(raw_key).lower().replace("-", "_"))
        if isinstance(value, Mapping):
            nested.append(value)
        elif key is not None and key not in out:
            normal = _normalise(key, value)
            if normal is not None:
                out[key] = normal
    for value in nested:
        for key, normal in declared_topology(value, depth + 1).items():
            out.setdefault(key, normal)
    return out


def _read_doc(path: Path) -> Any:
    try:
        text = path.read_text()
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError):
        return None


def _run_sources(runs: Sequence[Run]) -> list[tuple[str, dict[str, Any]]]:
    """Topology the runs recorded: result_summary.json's run_config and the request model."""
    out = []
    for run in runs:
        path = (run.summary or {}).get("result_summary_path")
        if not isinstance(path, str) or not path:
            continue
        doc = _read_doc(Path(path))
        if not isinstance(doc, Mapping):
            continue
        found = declared_topology(doc.get("run_config"))
        ours = doc.get("rollbench")
        spec = ours.get("spec") if isinstance(ours, Mapping) else None
        endpoint = spec.get("endpoint") if isinstance(spec, Mapping) else None
        if isinstance(endpoint, Mapping) and _normalise("served_model", endpoint.get("model")):
            found.setdefault("served_model", _normalise("served_model", endpoint.get("model")))
        # a reference-client run folder: config.yaml beside performance/
        config = _read_doc(Path(path).parent.parent / "config.yaml")
        params = config.get("model_params") if isinstance(config, Mapping) else None
        if isinstance(params, Mapping) and _normalise("served_model", params.get("name")):
            found.setdefault("served_model", _normalise("served_model", params.get("name")))
        if found:
            out.append((f"run {run.id} metadata (level {run.level:g})", found))
    return out


def check_topology(
    system: System | None,
    submission: Submission,
    endpoint: Endpoint | None,
    runs: Sequence[Run],
) -> list[Finding]:
    sources: list[tuple[str, dict[str, Any]]] = []
    if system is not None:
        declared = declared_topology(system.topology)
        for key, value in (
            ("accelerator_count", system.accelerator_count or None),
            ("nodes", system.nodes),
            ("model", system.model),
        ):
            normal = _normalise(key, value)
            if normal is not None:
                declared[key] = normal
        sources.append(("the system description", declared))
    sources.append(("server_config", declared_topology(submission.server_config)))
    if endpoint is not None:
        sources.append(("the endpoint", {"served_model": endpoint.served_model}))
    sources.extend(_run_sources(runs))
    out: list[Finding] = []
    compared = []
    for key in dict.fromkeys(ALIASES.values()):
        seen = [(label, found[key]) for label, found in sources if key in found]
        if len(seen) < 2:
            continue
        compared.append(key)
        by_value: dict[Any, tuple[Any, list[str]]] = {}
        for label, value in seen:
            canonical = str(value).lower() if key in TEXT_KEYS else value
            by_value.setdefault(canonical, (value, []))[1].append(label)
        if len(by_value) > 1:
            claims = "; ".join(
                f"{', '.join(labels)} {'says' if len(labels) == 1 else 'say'} {value!r}"
                for value, labels in by_value.values()
            )
            out.append(
                Finding(
                    "topology.consistent",
                    ERROR,
                    False,
                    f"{key} disagrees: {claims}. The declared topology must match what was "
                    "served and measured.",
                )
            )
    out.extend(_parallel_fits(system, sources))
    if not out:
        message = (
            f"{', '.join(compared)} agree across "
            f"{', '.join(label for label, found in sources if found)}."
            if compared
            else "nothing is declared in more than one place to compare."
        )
        out.append(Finding("topology.consistent", ERROR, True, message))
    return out


def _parallel_fits(
    system: System | None, sources: Sequence[tuple[str, dict[str, Any]]]
) -> list[Finding]:
    """Tensor × pipeline × data parallel ranks need at least that many accelerators."""
    if system is None or system.accelerator_count <= 0:
        return []
    total = system.accelerator_count * max(system.nodes, 1)
    too_many: dict[str, tuple[int, list[str]]] = {}
    for label, found in sources:
        sizes = {
            k: found[k]
            for k in ("tensor_parallel", "pipeline_parallel", "data_parallel")
            if isinstance(found.get(k), int) and found[k] > 0
        }
        product = math.prod(sizes.values()) if sizes else 0
        if product > total:
            terms = " × ".join(f"{k} {v}" for k, v in sizes.items())
            too_many.setdefault(terms, (product, []))[1].append(label)
    return [
        Finding(
            "topology.consistent",
            ERROR,
            False,
            f"{terms} = {product} ranks ({', '.join(labels)}), but the system declares "
            f"{system.accelerator_count} accelerator(s) on {system.nodes} node(s).",
        )
        for terms, (product, labels) in too_many.items()
    ]


def _accuracy_passed(run: Run) -> bool | None:
    summary = run.summary or {}
    verdict = summary.get("passed")
    nested = summary.get("accuracy")
    if verdict is None and isinstance(nested, Mapping):
        verdict = nested.get("passed")
    return verdict if isinstance(verdict, bool) else None


def check_accuracy(submission: Submission, runs: Sequence[Run]) -> Finding:
    accuracy = [r for r in runs if r.kind is RunKind.ACCURACY and r.state is RunState.FINISHED]
    if not submission.accuracy_required:
        return Finding(
            "accuracy.required",
            ERROR,
            True,
            "accuracy is not required for this submission (quality: not measured).",
        )
    if not accuracy:
        return Finding(
            "accuracy.required",
            ERROR,
            False,
            "accuracy required but not measured: the submission has no finished accuracy run.",
        )
    verdicts = {r.level: _accuracy_passed(r) for r in accuracy}
    failed = [f"{level:g}" for level, v in verdicts.items() if v is False]
    unknown = [f"{level:g}" for level, v in verdicts.items() if v is None]
    if failed or unknown:
        parts = []
        if failed:
            parts.append(f"failed the quality threshold at level(s) {', '.join(failed)}")
        if unknown:
            parts.append(f"has no pass/fail verdict at level(s) {', '.join(unknown)}")
        return Finding(
            "accuracy.required",
            ERROR,
            False,
            f"accuracy required: the accuracy run {'; '.join(parts)}.",
        )
    return Finding(
        "accuracy.required",
        ERROR,
        True,
        f"accuracy measured and passed at level(s) {', '.join(f'{v:g}' for v in verdicts)}.",
    )


# ----------------------------------------------------------------------------- per point


def check_point(
    point_id: int | None, concurrency: int, metrics: Mapping[str, Any], rules: ProgrammeRules
) -> list[Finding]:
    """The per-point checks, on one point's `metrics` (pure)."""
    return [
        check_duration(point_id, concurrency, metrics, rules),
        check_samples(point_id, concurrency, metrics, rules),
        check_error_rate(point_id, concurrency, metrics, rules),
        check_counts(point_id, concurrency, metrics),
        check_metrics_consistent(point_id, concurrency, metrics),
        check_littles_law(point_id, concurrency, metrics, rules),
        check_harness(point_id, concurrency, metrics, rules),
    ]


def check_duration(
    point_id: int | None, concurrency: int, metrics: Mapping[str, Any], rules: ProgrammeRules
) -> Finding:
    d = rules.durations
    minimum = d.minimum_s(concurrency)
    where = (
        f"at concurrency up to {d.low_concurrency_max}"
        if concurrency <= d.low_concurrency_max
        else f"above concurrency {d.low_concurrency_max}"
    )
    duration = _figure(metrics, "duration_s")
    if duration is None:
        return Finding(
            "duration.min",
            ERROR,
            False,
            f"level {concurrency}: duration not measured; the programme asks {_n(minimum)} s "
            f"{where}.",
            point_id,
        )
    ok = duration >= minimum
    return Finding(
        "duration.min",
        ERROR,
        ok,
        f"level {concurrency}: measured {_n(duration)} s, the programme asks {_n(minimum)} s "
        f"{where}.",
        point_id,
    )


def check_samples(
    point_id: int | None, concurrency: int, metrics: Mapping[str, Any], rules: ProgrammeRules
) -> Finding:
    minimum = rules.checks.min_samples
    completed = _figure(metrics, "completed")
    if completed is None:
        return Finding(
            "samples.min",
            ERROR,
            False,
            f"level {concurrency}: completed requests not recorded; the programme asks at "
            f"least {minimum}.",
            point_id,
        )
    return Finding(
        "samples.min",
        ERROR,
        completed >= minimum,
        f"level {concurrency}: {completed:.0f} completed requests, the programme asks at least "
        f"{minimum}.",
        point_id,
    )


def check_error_rate(
    point_id: int | None, concurrency: int, metrics: Mapping[str, Any], rules: ProgrammeRules
) -> Finding:
    limit = rules.checks.max_error_rate
    rate = _figure(metrics, "error_rate")
    issued, failed = _figure(metrics, "issued"), _figure(metrics, "failed")
    if rate is None and issued and failed is not None:
        rate = failed / issued
    if rate is None:
        return Finding(
            "errors.rate",
            ERROR,
            False,
            f"level {concurrency}: error rate not measured; the programme allows at most "
            f"{_pct(limit)}.",
            point_id,
        )
    detail = ""
    if issued and failed is not None and 0 <= failed <= issued:
        carried = metrics.get("error_rate_wilson95")
        if isinstance(carried, Sequence) and len(carried) == 2:
            lo, hi = float(carried[0]), float(carried[1])
        else:
            lo, hi = wilson_interval(int(failed), int(issued))
        detail = (
            f" ({failed:.0f} of {issued:.0f} requests failed; 95 % Wilson interval "
            f"{_pct(lo)}–{_pct(hi)})"
        )
    return Finding(
        "errors.rate",
        ERROR,
        rate <= limit,
        f"level {concurrency}: error rate {_pct(rate)}{detail}, the programme allows at most "
        f"{_pct(limit)}.",
        point_id,
    )


def check_counts(point_id: int | None, concurrency: int, metrics: Mapping[str, Any]) -> Finding:
    issued, completed = _figure(metrics, "issued"), _figure(metrics, "completed")
    succeeded, failed = _figure(metrics, "succeeded"), _figure(metrics, "failed")
    if None in (issued, completed, succeeded, failed):
        return Finding(
            "counts.consistent",
            ERROR,
            False,
            f"level {concurrency}: request counts (issued, completed, succeeded, failed) not "
            "all recorded.",
            point_id,
        )
    assert issued is not None and completed is not None
    assert succeeded is not None and failed is not None
    problems = []
    if issued != succeeded + failed:
        problems.append(
            f"issued {issued:.0f} ≠ succeeded {succeeded:.0f} + failed {failed:.0f} "
            f"(= {succeeded + failed:.0f}): every issued request must end counted as one or "
            "the other"
        )
    if completed != issued:
        problems.append(
            f"completed {completed:.0f} ≠ issued {issued:.0f}: a finished closed-loop level "
            "completes every request it issued (failed ones count as completed)"
        )
    if problems:
        return Finding(
            "counts.consistent",
            ERROR,
            False,
            f"level {concurrency}: {'; '.join(problems)}.",
            point_id,
        )
    return Finding(
        "counts.consistent",
        ERROR,
        True,
        f"level {concurrency}: issued {issued:.0f} = succeeded {succeeded:.0f} + failed "
        f"{failed:.0f}, all completed.",
        point_id,
    )


def check_metrics_consistent(
    point_id: int | None, concurrency: int, metrics: Mapping[str, Any]
) -> Finding:
    """QPS, TPS and per-user TPS must follow from the counts, tokens and TPOT they came from."""
    problems = []
    duration = _figure(metrics, "duration_s")
    completed, qps = _figure(metrics, "completed"), _figure(metrics, "qps")
    tokens, tps = _figure(metrics, "output_tokens"), _figure(metrics, "tps")
    if duration is None or duration <= 0:
        problems.append("duration is missing or not positive")
    else:
        if completed is not None and qps is not None and not _close(qps, completed / duration):
            problems.append(
                f"QPS {_n(qps)} ≠ completed {completed:.0f} / duration {_n(duration)} s "
                f"= {_n(completed / duration)}"
            )
        if tokens is not None and tokens > 0:
            if tps is None or tps <= 0:
                problems.append(f"{tokens:.0f} output tokens but TPS is {metrics.get('tps')!r}")
            elif not _close(tps, tokens / duration):
                problems.append(
                    f"TPS {_n(tps)} ≠ output tokens {tokens:.0f} / duration {_n(duration)} s "
                    f"= {_n(tokens / duration)}"
                )
    tpot_p90 = _figure(metrics, "tpot_p90_ms")
    per_user = _figure(metrics, "tps_per_user_v1")
    if tpot_p90 is not None:
        if tpot_p90 <= 0:
            problems.append(f"TPOT p90 {_n(tpot_p90)} ms is not positive")
        elif per_user is None or not _close(per_user, 1000.0 / tpot_p90):
            problems.append(
                f"per-user TPS (v1.0) {metrics.get('tps_per_user_v1')!r} ≠ 1000 / TPOT p90 "
                f"{_n(tpot_p90)} ms = {_n(1000.0 / tpot_p90)}"
            )
    if problems:
        return Finding(
            "metrics.consistent",
            ERROR,
            False,
            f"level {concurrency}: {'; '.join(problems)}.",
            point_id,
        )
    return Finding(
        "metrics.consistent",
        ERROR,
        True,
        f"level {concurrency}: QPS, TPS and per-user TPS follow from the counts, tokens and TPOT.",
        point_id,
    )


def in_flight_floor(metrics: Mapping[str, Any]) -> float:
    """The least share of its concurrency a healthy closed loop holds over MLPerf's window.

    MLPerf's duration runs from tracking start to the *last completion*. Every slot of a
    closed loop is busy until issuing stops, at least `duration − L_max` (the last request
    to finish took at most L_max), so mean in flight / C lies between 1 − L_max / duration
    and 1: near 1 when the slots finish together (a batching server completing a batch),
    about 1 − L / (2 · duration) when they finish spread out. At the programme's 600 s
    levels with second-long latencies the allowance is under 1 %; at a demo's few-second
    levels it is large, and without it Little's law would blame the endpoint for the
    harness's stop condition. L_max is the slowest request (else p99, else the mean).
    """
    duration_s = _figure(metrics, "duration_s")
    latency = metrics.get("latency_ms")
    slowest_ms = latency.get("max") if isinstance(latency, Mapping) else None
    if not isinstance(slowest_ms, int | float) or isinstance(slowest_ms, bool):
        slowest_ms = _figure(metrics, "latency_p99_ms") or _figure(metrics, "latency_avg_ms")
    if slowest_ms is None or duration_s is None or duration_s <= 0:
        return 1.0
    return max(0.0, 1.0 - slowest_ms / 1000.0 / duration_s)


def in_flight_deviation(ratio: float, floor: float) -> float:
    """How far `ratio` (mean in flight / C) lies outside [floor, 1]: 0 inside."""
    if ratio > 1.0:
        return ratio - 1.0
    if ratio < floor:
        return ratio / floor - 1.0 if floor > 0 else -1.0
    return 0.0


def check_littles_law(
    point_id: int | None, concurrency: int, metrics: Mapping[str, Any], rules: ProgrammeRules
) -> Finding:
    """Closed loop: mean requests in flight = mean latency × QPS must be the concurrency,
    less what the drain tail allows (see `in_flight_floor`)."""
    tolerance = rules.checks.littles_law_tolerance
    latency_ms, qps = _figure(metrics, "latency_avg_ms"), _figure(metrics, "qps")
    if latency_ms is None or qps is None or concurrency <= 0:
        return Finding(
            "littles_law",
            WARNING,
            False,
            f"level {concurrency}: mean latency or QPS not measured; Little's law cannot be "
            "checked.",
            point_id,
        )
    in_flight = latency_ms / 1000.0 * qps
    floor = in_flight_floor(metrics)
    deviation = in_flight_deviation(in_flight / concurrency, floor)
    band = (
        f"{concurrency}"
        if floor >= 1.0
        else f"{_n(floor * concurrency)}–{concurrency} once the drain tail is allowed for"
    )
    return Finding(
        "littles_law",
        ERROR,
        abs(deviation) <= tolerance,
        f"level {concurrency}: mean latency {_n(latency_ms / 1000.0)} s × QPS {_n(qps)} = "
        f"{_n(in_flight)} requests in flight against {band} ({deviation * 100:+.1f} % "
        f"outside); Little's law must hold within ±{tolerance:.0%}.",
        point_id,
    )


def check_harness(
    point_id: int | None, concurrency: int, metrics: Mapping[str, Any], rules: ProgrammeRules
) -> Finding:
    """Was the endpoint measured, or the load generator? (DESIGN §5, harness health)."""
    c = rules.checks
    valid = metrics.get("valid")
    delivered = _figure(metrics, "delivered_concurrency")
    read_delay = _figure(metrics, "read_delay_p99_ms")
    if not isinstance(valid, bool) and delivered is None and read_delay is None:
        return Finding(
            "harness.saturated",
            WARNING,
            False,
            f"level {concurrency}: harness health not measured (no validity verdict, delivered "
            "concurrency or read delay, as for an imported point): nothing shows that the "
            "client kept up.",
            point_id,
        )
    problems, seen = [], []
    if valid is False:
        reasons = metrics.get("invalid_reasons") or []
        problems.append(
            "the load generator flagged the level invalid"
            + (f": {'; '.join(map(str, reasons))}" if reasons else "")
        )
    elif valid is True:
        seen.append("the load generator found the level valid")
    if delivered is not None and concurrency > 0:
        # held against the least a healthy closed loop holds over the window (drain tail)
        floor = in_flight_floor(metrics)
        ratio = 1.0 + min(0.0, in_flight_deviation(delivered / concurrency, floor))
        text = (
            f"delivered concurrency {_n(delivered)} is {ratio:.0%} of "
            f"{_n(floor * concurrency)}–{concurrency} (drain tail allowed for), the programme "
            f"asks at least {c.min_delivered_concurrency:.0%}"
        )
        (problems if ratio < c.min_delivered_concurrency else seen).append(text)
    if read_delay is not None:
        text = (
            f"client read delay p99 {_n(read_delay)} ms, the programme allows at most "
            f"{_n(c.max_read_delay_p99_ms)} ms"
        )
        (problems if read_delay > c.max_read_delay_p99_ms else seen).append(text)
    if problems:
        return Finding(
            "harness.saturated",
            ERROR,
            False,
            f"level {concurrency}: {'; '.join(problems)} — the figures describe the client, "
            "not the endpoint.",
            point_id,
        )
    return Finding(
        "harness.saturated", ERROR, True, f"level {concurrency}: {'; '.join(seen)}.", point_id
    )


# --------------------------------------------------------------------------- whole curve


def check_regions(
    points: Sequence[Point],
    published: Sequence[Point],
    system: System | None,
    rules: ProgrammeRules,
) -> list[Finding]:
    """Coverage of the curve this submission would leave: its points and the live ones."""
    by_level: dict[int, int | None] = {p.concurrency: p.id for p in published}
    by_level.update({p.concurrency: p.id for p in points})  # this submission's win
    c_max = system.max_concurrency if system is not None else None
    return [
        Finding(
            f.check,
            f.severity,
            f.passed,
            f.message,
            by_level.get(f.level) if f.level is not None else None,
        )
        for f in coverage(by_level, c_max, rules.regions)
    ]


def check_reproducibility(
    point: Point, published: Sequence[Point], rules: ProgrammeRules
) -> Finding:
    tolerance = rules.checks.reproducibility_tolerance
    earlier = [p for p in published if p.concurrency == point.concurrency]
    where = f"level {point.concurrency}"
    if not earlier:
        return Finding(
            "reproducibility",
            ERROR,
            True,
            f"{where}: no accepted point at this concurrency yet; nothing to reproduce.",
            point.id,
        )
    old = earlier[-1]  # the newest live one
    deviations = []
    for key, unit in (("qps", "req/s"), ("tps", "tok/s")):
        new_value, old_value = _figure(point.metrics, key), _figure(old.metrics, key)
        if new_value is not None and old_value:
            deviations.append((new_value / old_value - 1, key.upper(), new_value, old_value, unit))
    if not deviations:
        return Finding(
            "reproducibility",
            WARNING,
            False,
            f"{where}: throughput not measured on this point or on accepted point {old.id}; "
            "reproducibility cannot be checked.",
            point.id,
        )
    text = "; ".join(
        f"{name} {_n(new)} {unit} vs {_n(was)} ({dev * 100:+.1f} %)"
        for dev, name, new, was, unit in deviations
    )
    worst = min(dev for dev, *_ in deviations)
    best = max(dev for dev, *_ in deviations)
    rule = f"the programme asks ±{tolerance:.0%} against accepted point {old.id} (same system)"
    if worst < -tolerance:
        return Finding(
            "reproducibility",
            ERROR,
            False,
            f"{where}: slower than the accepted point: {text}; {rule}. Either the published "
            "point does not reproduce or the system changed (declare a new system).",
            point.id,
        )
    if best > tolerance:
        return Finding(
            "reproducibility",
            WARNING,
            False,
            f"{where}: faster than the accepted point: {text}; {rule}. Accepting it supersedes "
            "the older point.",
            point.id,
        )
    return Finding("reproducibility", ERROR, True, f"{where}: {text}; {rule}.", point.id)
