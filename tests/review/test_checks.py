"""The automated checker on crafted submissions (SQLite and PostgreSQL): a clean sweep passes
every check under the demo programme; each broken rule fails exactly its own check, with the
severity the rule gives it and the figures in the message."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from orchestrator.programme import DEFAULT_FILE, ProgrammeRules, load_programme
from orchestrator.review.checks import (
    Finding,
    blocking,
    check_harness,
    check_littles_law,
    check_point,
    in_flight_deviation,
    in_flight_floor,
    run_checks,
)
from orchestrator.runs.metrics import point_metrics
from orchestrator.runs.models import PointState
from orchestrator.submissions.models import Submission, SubmissionSource

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "mlperf-reference-client"


def findings_of(engine: Engine, submission_id: int, rules: ProgrammeRules) -> list[Finding]:
    with Session(engine) as session:
        submission = session.get(Submission, submission_id)
        assert submission is not None
        return run_checks(session, submission=submission, rules=rules)


def failed(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if not f.passed]


def only_failure(findings: list[Finding]) -> Finding:
    """The one failed finding; the test breaks one rule, so exactly one check may fail."""
    bad = failed(findings)
    assert len(bad) == 1, [f.as_dict() for f in bad]
    return bad[0]


def with_regions(rules: ProgrammeRules, **update: Any) -> ProgrammeRules:
    return rules.model_copy(update={"regions": rules.regions.model_copy(update=update)})


# --------------------------------------------------------------------------- the clean one


def test_clean_submission_passes_every_check_and_is_stored_as_json(
    craft: Any, review_engine: Engine, demo_rules: ProgrammeRules
) -> None:
    sub_id = craft.submission()
    findings = findings_of(review_engine, sub_id, demo_rules)
    assert failed(findings) == []
    assert blocking(findings) == []
    ids = {f.check for f in findings}
    assert ids >= {
        "metadata.complete",
        "topology.consistent",
        "accuracy.required",
        "duration.min",
        "samples.min",
        "errors.rate",
        "counts.consistent",
        "metrics.consistent",
        "littles_law",
        "harness.saturated",
        "regions.coverage",
        "regions.count",
        "regions.declared_max",
        "reproducibility",
    }
    per_point = [f for f in findings if f.check == "duration.min"]
    assert len(per_point) == 7 and all(f.point_id is not None for f in per_point)
    topology = next(f for f in findings if f.check == "topology.consistent")
    assert "tensor_parallel" in topology.message and "served_model" in topology.message
    # stored with the submission, as the review service does, and read back unchanged
    with Session(review_engine) as session:
        sub = session.get(Submission, sub_id)
        assert sub is not None
        sub.findings = [f.as_dict() for f in findings]
        session.add(sub)
        session.commit()
    with Session(review_engine) as session:
        sub = session.get(Submission, sub_id)
        assert sub is not None
        assert [Finding(**d) for d in sub.findings] == findings
        json.dumps(sub.findings)


# ------------------------------------------------------------------ one broken rule each

Metrics = Callable[..., dict[str, Any]]
# words a message must hold: fixed text, or text computed from the broken point's figures
# (what the crafted summary gave, after the replacements) where the figure follows from the
# crafted model rather than being the point of the case
Word = str | Callable[[dict[str, Any]], str]


def doubled_latency_in_flight(m: dict[str, Any]) -> str:
    """The Little's law figures of level 64 reporting 3.28 s, twice the latency it was
    measured with: twice the requests in flight, above the concurrency itself."""
    in_flight = 3.28 * m["qps"]
    floor = in_flight_floor(m) * 64
    return (
        f"QPS {m['qps']:.4g} = {in_flight:.4g} requests in flight against {floor:.4g}–64 once "
        f"the drain tail is allowed for ({(in_flight / 64 - 1) * 100:+.1f} % outside)"
    )


def delivered_share(m: dict[str, Any]) -> str:
    ratio = m["delivered_concurrency"] / 64 / in_flight_floor(m)
    return (
        f"delivered concurrency {m['delivered_concurrency']:.4g} is {ratio:.0%} of "
        f"{in_flight_floor(m) * 64:.4g}–64 (drain tail allowed for)"
    )


# (check id, severity, level broken, knobs of its figures, figures replaced, figures dropped,
#  words the message must hold)
BROKEN_POINTS: list[
    tuple[str, str, int, dict[str, Any], dict[str, Any], tuple[str, ...], tuple[Word, ...]]
] = [
    (
        "duration.min",
        "error",
        64,
        {"duration_s": 2.5},
        {},
        (),
        ("level 64", "measured 2.5 s", "asks 3 s above concurrency 32"),
    ),
    (
        "duration.min",
        "error",
        8,
        {"duration_s": 1.5, "latency_s": 0.2},
        {},
        (),
        ("level 8", "measured 1.5 s", "asks 2 s at concurrency up to 32"),
    ),
    (
        "samples.min",
        "error",
        1,
        # 12 s requests one at a time: 2 completions in 30 s (the second ends the level)
        {"latency_s": 12.0},
        {},
        (),
        ("level 1", "2 completed requests", "at least 3"),
    ),
    (
        "errors.rate",
        "error",
        64,
        {"failed": 3},
        {},
        (),
        (
            "level 64",
            lambda m: f"error rate {3 / m['issued'] * 100:.2f} %",
            lambda m: f"3 of {m['issued']} requests failed",
            "Wilson",
            "at most 0.10 %",
        ),
    ),
    (
        "counts.consistent",
        "error",
        16,
        {},
        {"issued": 999},
        (),
        ("level 16", "issued 999", lambda m: f"completed {m['completed']} ≠ issued 999"),
    ),
    (
        "metrics.consistent",
        "error",
        32,
        {},
        {"tps_per_user_v1": 999.0},
        (),
        ("level 32", "999", "1000 / TPOT p90 12.5 ms = 80"),
    ),
    (
        "metrics.consistent",
        "error",
        4,
        {},
        {"qps": 3.9},
        (),
        (
            "level 4",
            lambda m: (
                f"QPS 3.9 ≠ completed {m['completed']} / duration 30 s = {m['completed'] / 30:.4g}"
            ),
        ),
    ),
    (
        "metrics.consistent",
        "error",
        2,
        {},
        {"tps": None},
        (),
        ("level 2", "output tokens but TPS is None"),
    ),
    (
        "littles_law",
        "error",
        64,
        {},
        {"latency_avg_ms": 3280.0},
        (),
        (
            "level 64",
            "mean latency 3.28 s",
            doubled_latency_in_flight,
            "±25%",
        ),
    ),
    (
        "harness.saturated",
        "error",
        32,
        {},
        {"valid": False, "invalid_reasons": ["client process 0 used 99% of a core (limit 90%)"]},
        (),
        ("level 32", "invalid", "99% of a core", "the client, not the endpoint"),
    ),
    (
        "harness.saturated",
        "error",
        64,
        {"delivered_ratio": 0.5},
        {},
        (),
        (
            "level 64",
            delivered_share,
            "at least 85%",
        ),
    ),
    (
        "harness.saturated",
        "error",
        8,
        {"read_delay_p99_ms": 45.0},
        {},
        (),
        ("level 8", "read delay p99 45 ms", "at most 20 ms"),
    ),
    (
        "harness.saturated",
        "warning",
        16,
        {},
        {},
        ("valid", "invalid_reasons", "delivered_concurrency", "read_delay_p99_ms"),
        ("level 16", "not measured"),
    ),
]


@pytest.mark.parametrize(
    ("check", "severity", "level", "knobs", "replaced", "dropped", "words"),
    BROKEN_POINTS,
    ids=[f"{b[0]}-{b[2]}-{i}" for i, b in enumerate(BROKEN_POINTS)],
)
def test_a_broken_point_fails_exactly_its_check(
    craft: Any,
    good_metrics: Metrics,
    review_engine: Engine,
    demo_rules: ProgrammeRules,
    check: str,
    severity: str,
    level: int,
    knobs: dict[str, Any],
    replaced: dict[str, Any],
    dropped: tuple[str, ...],
    words: tuple[Word, ...],
) -> None:
    figures = {**good_metrics(level, **knobs), **replaced}
    figures = {k: v for k, v in figures.items() if k not in dropped}
    sub_id = craft.submission(metrics={level: figures})
    findings = findings_of(review_engine, sub_id, demo_rules)
    bad = only_failure(findings)
    assert (bad.check, bad.severity) == (check, severity)
    for word in words:
        text = word(figures) if callable(word) else word
        assert text in bad.message, bad.message
    assert bad.point_id is not None
    broken = next(f for f in findings if f.check == "duration.min" and f.point_id == bad.point_id)
    assert f"level {level}:" in broken.message
    assert blocking(findings) == ([bad] if severity == "error" else [])


def test_missing_metadata_is_an_error_naming_the_field(
    craft: Any, review_engine: Engine, demo_rules: ProgrammeRules
) -> None:
    sub_id = craft.submission(system_id=craft.system(runtime_version="", accelerator_count=0))
    bad = failed(findings_of(review_engine, sub_id, demo_rules))
    assert [(f.check, f.severity) for f in bad] == [("metadata.complete", "error")]
    assert "accelerator_count, runtime_version" in bad[0].message
    assert bad[0].point_id is None


def test_an_empty_server_config_is_an_error_measured_and_a_warning_imported(
    craft: Any, review_engine: Engine, demo_rules: ProgrammeRules
) -> None:
    measured = craft.submission(server_config={})
    bad = only_failure(findings_of(review_engine, measured, demo_rules))
    assert (bad.check, bad.severity) == ("metadata.complete", "error")
    assert "server_config" in bad.message
    imported = craft.submission(server_config={}, source=SubmissionSource.IMPORTED)
    bad = only_failure(findings_of(review_engine, imported, demo_rules))
    assert (bad.check, bad.severity) == ("metadata.complete", "warning")


@pytest.mark.parametrize(
    ("craft_args", "words"),
    [
        (
            {"server_config": {"tensor_parallel_size": 4, "served_model_name": "sim-model"}},
            ("tensor_parallel disagrees", "the system description says 8", "server_config says 4"),
        ),
        (
            {"served_model": "sim-model", "requested_model": "other-model"},
            (
                "served_model disagrees",
                "server_config, the endpoint say 'sim-model'",
                "run 1 metadata (level 1)",
                "run 7 metadata (level 64) say 'other-model'",
            ),
        ),
        (
            {
                "run_config": {
                    "load_pattern": {"type": "concurrency"},
                    "server": {"nnodes": 2},
                }
            },
            ("nodes disagrees", "the system description says 1", "(level 64) say 2"),
        ),
    ],
    ids=["server-config", "run-metadata-model", "run-config-nodes"],
)
def test_a_topology_conflict_names_both_values_and_sources(
    craft: Any,
    review_engine: Engine,
    demo_rules: ProgrammeRules,
    craft_args: dict[str, Any],
    words: tuple[str, ...],
) -> None:
    sub_id = craft.submission(**craft_args)
    bad = failed(findings_of(review_engine, sub_id, demo_rules))
    assert {(f.check, f.severity) for f in bad} == {("topology.consistent", "error")}
    for word in words:
        assert any(word in f.message for f in bad), [f.message for f in bad]


def test_parallel_ranks_beyond_the_accelerators_are_an_error(
    craft: Any, review_engine: Engine, demo_rules: ProgrammeRules
) -> None:
    system = craft.system(topology={"tensor_parallel": 8, "pipeline_parallel": 2})
    sub_id = craft.submission(
        system_id=system, server_config={"tp": 8, "pp": 2, "served_model_name": "sim-model"}
    )
    bad = only_failure(findings_of(review_engine, sub_id, demo_rules))
    assert (bad.check, bad.severity) == ("topology.consistent", "error")
    assert "tensor_parallel 8 × pipeline_parallel 2 = 16 ranks" in bad.message
    assert "(the system description, server_config)" in bad.message
    assert "8 accelerator(s) on 1 node(s)" in bad.message


def test_required_accuracy_absent_or_failing_is_an_error(
    craft: Any, review_engine: Engine, demo_rules: ProgrammeRules
) -> None:
    absent = craft.submission(accuracy_required=True)
    bad = only_failure(findings_of(review_engine, absent, demo_rules))
    assert (bad.check, bad.severity) == ("accuracy.required", "error")
    assert "accuracy required but not measured" in bad.message
    failing = craft.submission(accuracy_required=True, accuracy=[(1, True), (64, False)])
    bad = only_failure(findings_of(review_engine, failing, demo_rules))
    assert (bad.check, bad.severity) == ("accuracy.required", "error")
    assert "failed the quality threshold at level(s) 64" in bad.message
    passing = craft.submission(accuracy_required=True, accuracy=[(1, True), (64, True)])
    assert failed(findings_of(review_engine, passing, demo_rules)) == []


def test_no_points_is_an_error(
    craft: Any, review_engine: Engine, demo_rules: ProgrammeRules
) -> None:
    sub_id = craft.submission(with_points=False)
    bad = failed(findings_of(review_engine, sub_id, demo_rules))
    assert ("points.present", "error") in {(f.check, f.severity) for f in bad}


# ------------------------------------------------------------------------------- regions


def test_an_uncovered_region_is_a_warning_in_the_demo_and_an_error_when_required(
    craft: Any, review_engine: Engine, demo_rules: ProgrammeRules
) -> None:
    sub_id = craft.submission(levels=(1, 2, 4, 8, 16, 17))  # High (18–64) empty
    bad = only_failure(findings_of(review_engine, sub_id, demo_rules))
    assert (bad.check, bad.severity) == ("regions.coverage", "warning")
    assert "High (18–64, from C_min 1 and C_max 64) has no point" in bad.message
    strict = with_regions(demo_rules, required=True)
    bad = only_failure(findings_of(review_engine, sub_id, strict))
    assert (bad.check, bad.severity) == ("regions.coverage", "error")
    assert bad.point_id is None  # about the whole curve: it blocks every point


def test_a_margin_point_does_not_cover_high(
    craft: Any, review_engine: Engine, demo_rules: ProgrammeRules
) -> None:
    sub_id = craft.submission(levels=(1, 2, 4, 8, 16, 70))  # 70 is in the margin 65–71
    bad = only_failure(findings_of(review_engine, sub_id, demo_rules))
    assert bad.check == "regions.coverage"
    assert "Levels in the margin (65–71) do not count for High coverage" in bad.message


def test_a_level_above_the_margin_is_an_error_on_that_point(
    craft: Any, review_engine: Engine, demo_rules: ProgrammeRules
) -> None:
    sub_id = craft.submission(levels=(1, 2, 4, 8, 16, 32, 64, 72))
    findings = findings_of(review_engine, sub_id, demo_rules)
    bad = only_failure(findings)
    assert (bad.check, bad.severity) == ("regions.range", "error")
    assert "level 72 is above the allowed range" in bad.message and "ends at 71" in bad.message
    level_72 = next(f for f in findings if f.check == "duration.min" and "level 72:" in f.message)
    assert bad.point_id == level_72.point_id


def test_too_few_levels_fail_the_count(
    craft: Any, review_engine: Engine, demo_rules: ProgrammeRules
) -> None:
    mlperf_counts = with_regions(demo_rules, min_points=7, required=True)
    sub_id = craft.submission(levels=(1, 4, 16, 64))
    bad = only_failure(findings_of(review_engine, sub_id, mlperf_counts))
    assert (bad.check, bad.severity) == ("regions.count", "error")
    assert "4 distinct level(s)" in bad.message and "at least 7" in bad.message


def test_an_undeclared_maximum_uses_the_highest_level_and_says_so(
    craft: Any, review_engine: Engine, demo_rules: ProgrammeRules
) -> None:
    sub_id = craft.submission(system_id=craft.system(max_concurrency=None))
    bad = only_failure(findings_of(review_engine, sub_id, demo_rules))
    assert (bad.check, bad.severity) == ("regions.declared_max", "warning")
    assert "the highest measured level, 64" in bad.message


def test_coverage_counts_the_curves_accepted_points(
    craft: Any, review_engine: Engine, demo_rules: ProgrammeRules
) -> None:
    system = craft.system()
    craft.submission(system_id=system, levels=(32, 64), point_state=PointState.ACCEPTED)
    sub_id = craft.submission(system_id=system, levels=(1, 2, 8))
    strict = with_regions(demo_rules, required=True, min_points=5)
    findings = findings_of(review_engine, sub_id, strict)
    assert failed(findings) == []
    high = [f for f in findings if f.check == "regions.coverage" and "High" in f.message]
    assert high[0].passed and "32, 64" in high[0].message


# ---------------------------------------------------------------------- reproducibility


@pytest.mark.parametrize(
    ("latency_factor", "outcome", "words"),
    [
        (1.25, ("error", False), ("slower", "±5%")),
        (0.8, ("warning", False), ("faster", "supersedes")),
        (1.02, ("error", True), ("±5%",)),
    ],
    ids=["slower-error", "faster-warning", "within-passes"],
)
def test_reproducibility_against_the_accepted_point(
    craft: Any,
    good_metrics: Metrics,
    review_engine: Engine,
    demo_rules: ProgrammeRules,
    latency_factor: float,
    outcome: tuple[str, bool],
    words: tuple[str, ...],
) -> None:
    system = craft.system()
    craft.submission(system_id=system, point_state=PointState.ACCEPTED)
    newer = good_metrics(64, latency_s=(1.0 + 0.64) * latency_factor)
    sub_id = craft.submission(system_id=system, metrics={64: newer})
    findings = findings_of(review_engine, sub_id, demo_rules)
    repro = [f for f in findings if f.check == "reproducibility" and "level 64:" in f.message]
    assert len(repro) == 1
    assert (repro[0].severity, repro[0].passed) == outcome
    # QPS follows the latency (about 1 / factor, the drain tail moves it a little)
    new_qps, old_qps = newer["qps"], good_metrics(64)["qps"]
    deviation = new_qps / old_qps - 1
    assert deviation == pytest.approx(1 / latency_factor - 1, abs=0.01)
    qps_text = f"QPS {new_qps:.4g} req/s vs {old_qps:.4g} ({deviation * 100:+.1f} %)"
    for word in (qps_text, *words):
        assert word in repro[0].message, repro[0].message
    others = [f for f in failed(findings) if f is not repro[0]]
    assert others == []


# ------------------------------------------------------------- not measured, never a crash


def test_a_point_without_figures_is_not_measured_never_a_crash(
    craft: Any, review_engine: Engine, demo_rules: ProgrammeRules
) -> None:
    sub_id = craft.submission(metrics={8: {"qps": "fast", "duration_s": None, "completed": True}})
    findings = findings_of(review_engine, sub_id, demo_rules)
    level_8 = {f.check: f for f in failed(findings) if "level 8:" in f.message}
    assert set(level_8) >= {"duration.min", "samples.min", "errors.rate", "counts.consistent"}
    assert "not measured" in level_8["duration.min"].message
    assert level_8["littles_law"].severity == "warning"
    assert level_8["harness.saturated"].severity == "warning"
    json.dumps([f.as_dict() for f in findings])
    # figures that are not finite numbers (they cannot be stored as JSON, but may be passed)
    odd = {"qps": float("nan"), "duration_s": float("inf"), "issued": "x", "tpot_p90_ms": 0.0}
    found = {f.check: f for f in check_point(1, 8, odd, demo_rules)}
    assert "not measured" in found["duration.min"].message
    assert "TPOT p90 0 ms is not positive" in found["metrics.consistent"].message


def test_an_imported_reference_client_point_is_judged_on_what_it_carries() -> None:
    """The reference client's run with injected HTTP 500s: errors.rate fails with its
    figures; harness health is not measured (a warning); counts and Little's law hold."""
    rules = load_programme(DEFAULT_FILE)
    doc = json.loads((REFERENCE / "run_flaky" / "performance" / "result_summary.json").read_text())
    concurrency = doc["run_config"]["load_pattern"]["target_concurrency"]
    found = {
        f.check: f for f in check_point(7, concurrency, point_metrics(doc, concurrency), rules)
    }
    assert not found["errors.rate"].passed
    assert "error rate 20.0 %" in found["errors.rate"].message
    assert "40 of 200 requests failed" in found["errors.rate"].message
    assert (found["harness.saturated"].severity, found["harness.saturated"].passed) == (
        "warning",
        False,
    )
    assert found["counts.consistent"].passed
    assert found["metrics.consistent"].passed
    assert not found["duration.min"].passed  # a 1.3 s run against the MLPerf 600 s


def test_the_harness_check_reports_every_figure_it_had(good_metrics: Metrics) -> None:
    rules = load_programme(DEFAULT_FILE)
    metrics = good_metrics(64, delivered_ratio=0.8, read_delay_p99_ms=7.5)
    finding = check_harness(3, 64, metrics, rules)
    assert (finding.check, finding.severity, finding.passed, finding.point_id) == (
        "harness.saturated",
        "error",
        False,
        3,
    )
    assert delivered_share(metrics) + ", the programme asks at least 95%" in finding.message
    assert "read delay p99 7.5 ms, the programme allows at most 5 ms" in finding.message


# ------------------------------------------------------------------------- the drain tail


def test_the_in_flight_floor_allows_for_the_drain_tail() -> None:
    """Every slot is busy until issuing stops, at least duration − L_max: the floor is
    1 − L_max / duration (the slowest request, else p99, else the mean); 1 when a figure is
    missing; never below 0."""
    assert in_flight_floor({}) == 1.0
    assert in_flight_floor({"latency_avg_ms": 3000.0}) == 1.0
    assert in_flight_floor({"duration_s": 600.0, "latency_avg_ms": None}) == 1.0
    programme_level = {"latency_avg_ms": 3000.0, "duration_s": 600.0}
    assert in_flight_floor(programme_level) == pytest.approx(0.995)
    slowest = {**programme_level, "latency_ms": {"max": 6000.0}, "latency_p99_ms": 5000.0}
    assert in_flight_floor(slowest) == pytest.approx(0.99)
    assert in_flight_floor({**programme_level, "latency_p99_ms": 5000.0}) == pytest.approx(
        1 - 5 / 600
    )
    assert in_flight_floor({"latency_avg_ms": 3000.0, "duration_s": 2.0}) == 0.0
    # inside [floor, 1] nothing deviates; outside, the distance to the nearer bound
    assert in_flight_deviation(0.9, 0.8) == 0.0
    assert in_flight_deviation(1.1, 0.8) == pytest.approx(0.1)
    assert in_flight_deviation(0.4, 0.8) == pytest.approx(-0.5)


@pytest.mark.parametrize(
    ("delivered", "slowest_s", "holds"),
    [
        (63.83, 2.93, True),  # lockstep: a batching server finishes its batch together
        (43.7, 4.0, True),  # spread out: slots drain one by one over the last latency
        (15.0, 4.0, False),  # neither: the client did not hold its concurrency
    ],
)
def test_a_short_demo_level_holds_littles_law_within_the_drain_tail(
    demo_rules: ProgrammeRules, delivered: float, slowest_s: float, holds: bool
) -> None:
    """Demo levels of 64 slots, ~6 s to the last completion, requests of up to 3–4 s: the
    mean in flight may lie anywhere from 64·(1 − L_max/D) to 64 (measured in the demo: 63.8
    for the lockstep batching system, 43.7 for the queueing one). Held against the full 64,
    43.7 would look like a −32 % deviation and blame the endpoint."""
    rules = demo_rules  # configs/programme-demo.yaml: Little's law within ±25 %
    duration_s, latency_s = 6.2, 3.08
    qps = delivered / latency_s
    level = {
        "latency_avg_ms": latency_s * 1000,
        "latency_ms": {"max": slowest_s * 1000},
        "duration_s": duration_s,
        "qps": qps,
        "delivered_concurrency": delivered,
    }
    floor = 64 * (1 - slowest_s / duration_s)
    finding = check_littles_law(5, 64, level, rules)
    assert finding.passed is holds, finding.message
    assert f"against {floor:.4g}–64 once the drain tail is allowed for" in finding.message
    outside = 0.0 if delivered >= floor else delivered / floor - 1
    assert f"({outside * 100:+.1f} % outside)" in finding.message
    assert check_harness(5, 64, level, rules).passed is (delivered / floor >= 0.85)

    # the same figures with no duration to size the tail: held against the full 64
    no_duration = {k: v for k, v in level.items() if k != "duration_s"}
    untailed = check_littles_law(5, 64, no_duration, rules)
    assert "drain tail" not in untailed.message
    assert untailed.passed is (abs(delivered / 64 - 1) <= 0.25)


def test_an_imported_run_is_compared_with_the_config_yaml_it_stored(tmp_path: Path) -> None:
    """The importer stores a run's files apart (result_summary.json and config.yaml side by
    side) and records `config_path`: the served model that config.yaml names is held
    against the submission's server_config, not looked for two folders up."""
    import shutil

    from orchestrator.review.topology import check_topology
    from orchestrator.runs.models import Run, RunKind, RunState

    stored = tmp_path / "imported" / "c16"
    stored.mkdir(parents=True)
    shutil.copy(REFERENCE / "run_conc16" / "performance" / "result_summary.json", stored)
    shutil.copy(REFERENCE / "run_conc16" / "config.yaml", stored)  # model_params.name: test-model
    run = Run(
        id=3,
        submission_id=1,
        run_key="import-c16",
        kind=RunKind.PERFORMANCE,
        position=0,
        level=16,
        state=RunState.FINISHED,
        summary={
            "result_summary_path": str(stored / "result_summary.json"),
            "config_path": str(stored / "config.yaml"),
        },
    )
    submission = Submission(
        organisation_id=1,
        system_id=1,
        workload_id=1,
        levels=[16],
        source=SubmissionSource.IMPORTED,
        server_config={"served_model_name": "other-model"},
    )
    bad = [f for f in check_topology(None, submission, None, [run]) if not f.passed]
    assert [f.check for f in bad] == ["topology.consistent"]
    assert "served_model disagrees" in bad[0].message
    assert "'test-model'" in bad[0].message and "'other-model'" in bad[0].message
    assert "run 3 metadata (level 16)" in bad[0].message
