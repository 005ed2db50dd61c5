"""Exports: v1.0 bundles the official checker's metric rules accept, and round trips.

The official checker (`endpoints-submission-cli check-submission`, API
`submission_checker.checker.SubmissionChecker`) comes from the PyPI package endpoints-submission-cli
(1.5.3.0). A demo system legitimately fails its other rules (model-name allow-list, region
coverage, seed sets, power descriptor, full disclosure, accuracy present); the tests here
assert on its metric-consistency rules specifically.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from interop.interop_helpers import REFERENCE, Store, reference_copy
from sqlmodel import select

from orchestrator.db import session_scope
from orchestrator.frontier.service import apply_change
from orchestrator.interop.export import write_frontier_v1, write_point_v07, write_point_v1
from orchestrator.interop.importer import import_mlperf
from orchestrator.loadgen import DatasetSpec, EndpointSpec, SweepSpec, SyntheticSpec, run_sweep
from orchestrator.loadgen.spec import TimeoutSpec
from orchestrator.runs.metrics import point_metrics
from orchestrator.runs.models import Point, PointState, Run, RunKind, RunState
from orchestrator.simulator import SimulatorConfig, start_in_thread
from orchestrator.submissions.models import Submission, SubmissionState
from orchestrator.systems.models import System
from orchestrator.workloads.service import resolve

SECRET = "s3cr3t-header-value"
METRIC_RULES = {
    "metric-consistency-duration",
    "metric-consistency-accounting",
    "metric-consistency-output-tokens",
    "metric-consistency-system-tps",
    "metric-consistency-tpot-p90",
    "metric-consistency-tps-per-user",
}


def import_into(store: Store, path: Path, system: System) -> list[Point]:
    with session_scope(store.engine) as s:
        result = import_mlperf(
            s,
            path=path,
            system=s.get(System, system.id),
            workload=resolve(s, name="synthetic-chat"),
            actor="tester",
        )
        return result.points


def add_measured_points(store: Store, system: System, tmp_path: Path) -> list[Point]:
    """A real sweep against the simulator (with failures), stored the way runs/service does."""
    config = SimulatorConfig(ttft_ms=5, tpot_ms=1, output_tokens=12, error_rate=0.1, seed=7)
    with start_in_thread(config) as sim:
        spec = SweepSpec(
            endpoint=EndpointSpec(
                url=sim.url, model="sim-model", headers={"X-Key": SECRET}, api_key=SECRET
            ),
            dataset=DatasetSpec(synthetic=SyntheticSpec(isl=8, osl=12, prompts=16)),
            levels=[2, 4],
            requests=40,
            warmup=2,
            timeouts=TimeoutSpec(connect_s=5, stall_s=5, total_s=20, drain_s=5),
        )
        result = run_sweep(spec, tmp_path / "sweep")
    with session_scope(store.engine) as s:
        wl = resolve(s, name="synthetic-chat")
        sub = Submission(
            organisation_id=system.organisation_id,
            system_id=system.id,
            workload_id=wl.id,
            levels=[2.0, 4.0],
            state=SubmissionState.ACCEPTED,
        )
        s.add(sub)
        s.flush()
        points = []
        for i, level in enumerate(result.levels):
            path = level.folder / "performance" / "result_summary.json"
            run = Run(
                submission_id=sub.id,
                run_key=f"m-{sub.id}-{i}",
                kind=RunKind.PERFORMANCE,
                position=i,
                level=level.level,
                state=RunState.FINISHED,
                summary={"row": level.row(), "result_summary_path": str(path)},
            )
            s.add(run)
            s.flush()
            point = Point(
                submission_id=sub.id,
                run_id=run.id,
                system_id=system.id,
                workload_id=wl.id,
                concurrency=int(level.level),
                state=PointState.ACCEPTED,
                reviewed_by="op",
                metrics=point_metrics(json.loads(path.read_text()), level.level),
            )
            s.add(point)
            s.flush()
            points.append(point)
        apply_change(
            s,
            system_id=system.id,
            workload_id=wl.id,
            accepted=points,
            actor="op",
            submission_id=sub.id,
        )
    assert any(p.metrics["failed"] for p in points), "the sweep should include failures"
    assert all(p.metrics["succeeded"] for p in points), result.levels[0].failure_examples
    return points


def metric_results(report: Any) -> dict[str, list[tuple[str, str]]]:
    """{rule: [(severity, path), ...]} of the metric-consistency rules of a checker report."""
    out: dict[str, list[tuple[str, str]]] = {}
    for r in report["results"]:
        if r["rule"].startswith("metric-consistency") or r["rule"] in (
            "tps-utilization",
            "agentic-metric-consistency",
        ):
            out.setdefault(r["rule"], []).append((r["severity"], str(r["path"])))
    return out


def check(root: Path) -> dict[str, Any]:
    from submission_checker.checker import SubmissionChecker

    report = SubmissionChecker(root).run()
    return json.loads(report.model_dump_json())


def assert_metric_rules_pass(report: dict[str, Any], points: int) -> None:
    results = metric_results(report)
    assert set(results) >= METRIC_RULES, sorted(results)
    for rule in METRIC_RULES:
        assert len(results[rule]) == points, (rule, results[rule])
    failed = {rule: r for rule, r in results.items() if any(sev == "error" for sev, _ in r)}
    assert not failed, failed
    assert len(results["tps-utilization"]) == points


def test_a_frontier_bundle_passes_the_official_metric_rules(store: Store, tmp_path: Path) -> None:
    system = store.new_system(
        "demo-sys", accelerator_model="H100", accelerator_count=8, max_concurrency=64
    )
    runs = tmp_path / "runs"
    reference_copy("run_conc16", runs)
    reference_copy("run_flaky", runs, concurrency=8)
    import_into(store, runs, system)
    add_measured_points(store, system, tmp_path)
    with session_scope(store.engine) as s:
        root, version = write_frontier_v1(
            s,
            system=s.get(System, system.id),
            workload=resolve(s, name="synthetic-chat"),
            out=tmp_path / "out",
        )
    assert version == 2
    curve = root / "results" / "demo-sys" / "synthetic-chat"
    assert sorted(p.name for p in curve.iterdir()) == ["r16", "r2", "r4", "r8"]
    for point_dir in curve.iterdir():
        names = {p.name for p in point_dir.iterdir()}
        assert names == {"point.yaml", "system_desc.json", "result_summary.json", "config.yaml"}
    assert (root / "src" / "rollbench" / "README.md").is_file() and (root / "docs").is_dir()
    assert_metric_rules_pass(check(root), points=4)
    # credentials never leave the store
    for path in root.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(), path


def test_the_checker_command_agrees(store: Store, tmp_path: Path) -> None:
    system = store.new_system("cli-sys")
    [point] = import_into(store, REFERENCE / "run_flaky", system)
    with store.session() as s:
        root = write_point_v1(s, point=s.get(Point, point.id), out=tmp_path / "out")
    # the 1.5.3.0 wheel's console script for the checker
    exe = Path(sys.executable).with_name("endpoints-submission-cli")
    report_path = tmp_path / "report.json"
    done = subprocess.run(
        [str(exe), "check-submission", str(root), "-o", str(report_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: the demo system's other rules fail
    report = json.loads(report_path.read_text())
    assert_metric_rules_pass(report, points=1)
    # what fails is not about the metrics: name it, so a change is noticed
    failing = {r["rule"] for r in report["results"] if r["severity"] == "error"}
    assert failing and not failing & METRIC_RULES
    assert "model-name-valid" in failing and "accuracy-present" in failing


def test_an_unconverted_reference_summary_fails_the_accounting_rule(
    store: Store, tmp_path: Path
) -> None:
    """The control: the checker test can fail. The reference client counts failures in
    n_samples_completed; the v1.0 rule wants completed + failed == issued."""
    system = store.new_system("control")
    [point] = import_into(store, REFERENCE / "run_flaky", system)
    with store.session() as s:
        root = write_point_v1(s, point=s.get(Point, point.id), out=tmp_path / "out")
    [summary] = root.rglob("result_summary.json")
    shutil.copyfile(REFERENCE / "run_flaky" / "performance" / "result_summary.json", summary)
    results = metric_results(check(root))
    assert [sev for sev, _ in results["metric-consistency-accounting"]] == ["error"]
    with pytest.raises(AssertionError):
        assert_metric_rules_pass(check(root), points=1)


def _figures(points: list[Point]) -> dict[int, dict[str, Any]]:
    return {p.concurrency: p.metrics for p in points}


def test_import_export_v1_import_gives_the_same_figures(store: Store, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    reference_copy("run_conc16", runs)
    reference_copy("run_flaky", runs, concurrency=4)
    first = import_into(store, runs, store.new_system("first"))
    with store.session() as s:
        root, _ = write_frontier_v1(
            s,
            system=s.exec(select(System)).first(),
            workload=resolve(s, name="synthetic-chat"),
            out=tmp_path / "out",
        )
    [flaky] = root.rglob("r4/result_summary.json")
    counts = json.loads(flaky.read_text())
    assert (
        counts["n_samples_issued"],
        counts["n_samples_completed"],
        counts["n_samples_failed"],
    ) == (200, 160, 40)
    again = import_into(store, root, store.new_system("second", org="globex"))
    assert _figures(again) == _figures(first)


V07_KEPT = (
    "qps",
    "tps",
    "completed",
    "duration_s",
    "output_tokens",
    "ttft_p99_ms",
    "ttft_p50_ms",
    "ttft_p90_ms",
    "tpot_p50_ms",
    "tpot_p90_ms",
    "tpot_p99_ms",
    "latency_p50_ms",
    "latency_p99_ms",
    "latency_avg_ms",
    "tps_per_user_v1",
    "tps_per_user_v07",
)


@pytest.mark.parametrize("folder", ["run_conc16", "run_flaky"])
def test_export_v07_then_import_keeps_what_v07_keeps(
    store: Store, tmp_path: Path, folder: str
) -> None:
    [point] = import_into(store, REFERENCE / folder, store.new_system("orig"))
    with store.session() as s:
        path = write_point_v07(s, point=s.get(Point, point.id), out=tmp_path / "v07")
    meta = json.loads(path.read_text())
    doc = json.loads((REFERENCE / folder / "performance" / "result_summary.json").read_text())
    assert meta["measured_total_requests"] == doc["n_samples_completed"]
    assert meta["measured_run_duration"] == doc["duration_ns"] / 1e9
    assert (
        meta["ttft"]
        == meta["measured_latency_ttft_p99"]
        == pytest.approx(doc["ttft"]["percentiles"]["99.0"] / 1e6)
    )
    assert meta["tps_per_user"] == pytest.approx(meta["system_tps"] / 16)
    assert meta["measured_latency_request_p95"] == pytest.approx(
        doc["latency"]["percentiles"]["95.0"] / 1e6
    )
    [again] = import_into(store, path, store.new_system("copy"))
    for key in V07_KEPT:
        assert again.metrics[key] == pytest.approx(point.metrics[key], rel=1e-12), key
    for dist in ("ttft_ms", "tpot_ms", "latency_ms"):
        for stat in ("min", "avg", "max"):
            assert again.metrics[dist][stat] == pytest.approx(point.metrics[dist][stat]), dist
        for pct in ("50.0", "90.0", "95.0", "99.0", "99.9"):
            assert again.metrics[dist]["percentiles"][pct] == pytest.approx(
                point.metrics[dist]["percentiles"][pct], rel=1e-12
            )
