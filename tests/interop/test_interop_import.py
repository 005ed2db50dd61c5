"""Importing reference-client run folders and v0.7 run_metadata.json as baseline points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from interop.interop_helpers import REFERENCE, Store, reference_copy
from sqlmodel import select

from orchestrator.db import session_scope
from orchestrator.frontier.models import FrontierVersion
from orchestrator.interop.importer import import_mlperf
from orchestrator.runs.models import Point, PointState, Run, RunState
from orchestrator.submissions.models import Submission, SubmissionSource, SubmissionState
from orchestrator.systems.models import System
from orchestrator.workloads.models import Workload
from orchestrator.workloads.service import resolve


def do_import(store: Store, path: Path, system: System, workload: str = "synthetic-chat"):
    with session_scope(store.engine) as s:
        wl = resolve(s, name=workload)
        result = import_mlperf(
            s, path=path, system=s.get(System, system.id), workload=wl, actor="tester"
        )
        return result


@pytest.mark.parametrize("folder", ["run_conc16", "run_flaky"])
def test_a_reference_folder_imports_with_the_files_figures(store: Store, folder: str) -> None:
    system = store.new_system("ref-sys")
    result = do_import(store, REFERENCE / folder, system)
    doc = json.loads((REFERENCE / folder / "performance" / "result_summary.json").read_text())
    [point] = result.points
    m = point.metrics
    duration_s = doc["duration_ns"] / 1e9
    assert point.concurrency == 16
    assert m["qps"] == pytest.approx(doc["qps"], rel=1e-12)
    assert m["tps"] == pytest.approx(doc["tps"], rel=1e-12)
    assert m["qps"] == pytest.approx(doc["n_samples_completed"] / duration_s, rel=1e-12)
    assert (m["issued"], m["completed"], m["failed"]) == (
        doc["n_samples_issued"],
        doc["n_samples_completed"],
        doc["n_samples_failed"],
    )
    assert m["succeeded"] == doc["n_samples_completed"] - doc["n_samples_failed"]
    assert m["error_rate"] == pytest.approx(doc["n_samples_failed"] / doc["n_samples_issued"])
    assert m["duration_s"] == pytest.approx(duration_s, rel=1e-15)
    assert m["ttft_p99_ms"] == pytest.approx(doc["ttft"]["percentiles"]["99.0"] / 1e6)
    assert m["tpot_p90_ms"] == pytest.approx(doc["tpot"]["percentiles"]["90.0"] / 1e6)
    assert m["latency_p50_ms"] == pytest.approx(doc["latency"]["percentiles"]["50.0"] / 1e6)
    assert m["ttft_ms"]["min"] == pytest.approx(doc["ttft"]["min"] / 1e6)
    assert m["output_tokens"] == doc["output_sequence_lengths"]["total"]
    assert m["tps_per_user_v1"] == pytest.approx(1e9 / doc["tpot"]["percentiles"]["90.0"])
    assert m["tps_per_user_v07"] == pytest.approx(doc["tps"] / 16)

    with store.session() as s:
        sub = s.get(Submission, result.submission.id)
        assert sub is not None
        assert (sub.source, sub.state, sub.endpoint_id) == (
            SubmissionSource.IMPORTED,
            SubmissionState.ACCEPTED,
            None,
        )
        assert (sub.pattern, sub.levels) == ("concurrency", [16.0])
        assert sub.server_config["points"][0]["load_pattern"]["target_concurrency"] == 16
        assert "endpoints" not in json.dumps(sub.server_config)  # no endpoint URLs kept
        run = s.get(Run, point.run_id)
        assert run is not None and run.state is RunState.FINISHED
        stored = Path(run.summary["result_summary_path"])
        assert (
            stored.read_bytes()
            == (REFERENCE / folder / "performance" / "result_summary.json").read_bytes()
        )
        assert stored.is_relative_to(store.data_dir)
        assert run.summary["source"] == str(REFERENCE / folder)
        row = s.get(Point, point.id)
        assert row is not None and row.state is PointState.ACCEPTED
        assert (row.reviewed_by, row.review_comment) == ("tester", "imported baseline")
        [version] = s.exec(select(FrontierVersion)).all()
        assert (version.version, version.added, version.pareto) == (1, [point.id], [point.id])
        assert version.submission_id == sub.id


def test_a_directory_of_run_folders_is_one_submission(store: Store, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    reference_copy("run_conc16", runs)
    reference_copy("run_flaky", runs, concurrency=4)
    system = store.new_system("two-levels")
    result = do_import(store, runs, system)
    assert [p.concurrency for p in result.points] == [4, 16]
    assert result.submission.levels == [4.0, 16.0]
    assert result.frontier is not None and result.frontier.version == 1
    assert sorted(result.frontier.members) == sorted(p.id for p in result.points)
    assert len({p.submission_id for p in result.points}) == 1


def test_a_second_import_supersedes_the_same_concurrency(store: Store) -> None:
    system = store.new_system("rolling")
    first = do_import(store, REFERENCE / "run_conc16", system)
    second = do_import(store, REFERENCE / "run_flaky", system)
    assert second.frontier is not None and second.frontier.version == 2
    with store.session() as s:
        old = s.get(Point, first.points[0].id)
        assert old is not None and old.state is PointState.SUPERSEDED
        assert old.superseded_by == second.points[0].id


def test_a_v07_run_metadata_imports_in_the_canonical_shape(store: Store, tmp_path: Path) -> None:
    meta = {
        "run_date": None,
        "node_config": "8x H100",
        "config_summary": {"tensor_parallel": 8},
        "config_summary_notes": None,
        "concurrency": 128,
        "system_tps": 306.94,
        "tps_per_user": 2.398,
        "ttft": 312.5,
        "qps": 5.0686,
        "tps_utilization": None,
        "measured_total_output_tokens": 60557,
        "measured_run_duration": 197.29,
        "measured_total_requests": 1000,
        "link_config": None,
        "link_logs": None,
        "measured_latency_ttft_min": 10.624,
        "measured_latency_ttft_average": 32.218,
        "measured_latency_ttft_p50": 28.4,
        "measured_latency_ttft_p90": 280.1,
        "measured_latency_ttft_p95": 300.7,
        "measured_latency_ttft_p99": 312.5,
        "measured_latency_ttft_p999": 316.572,
        "measured_latency_ttft_max": 316.675,
        "measured_latency_tpot_min": 3.076,
        "measured_latency_tpot_average": 4.049,
        "measured_latency_tpot_p50": 3.9,
        "measured_latency_tpot_p90": 5.4,
        "measured_latency_tpot_p95": 6.0,
        "measured_latency_tpot_p99": 6.5,
        "measured_latency_tpot_p999": 6.863,
        "measured_latency_tpot_max": 6.919,
        "measured_latency_request_min": 47.108,
        "measured_latency_request_average": 271.979,
        "measured_latency_request_p50": 250.3,
        "measured_latency_request_p90": 600.1,
        "measured_latency_request_p95": 620.4,
        "measured_latency_request_p99": 640.0,
        "measured_latency_request_p999": 643.234,
        "measured_latency_request_max": 650.2,
    }
    path = tmp_path / "point_128" / "run_metadata.json"
    path.parent.mkdir()
    path.write_text(json.dumps(meta))
    result = do_import(store, path, store.new_system("v07-sys"))
    [point] = result.points
    m = point.metrics
    assert point.concurrency == 128
    assert m["qps"] == pytest.approx(1000 / 197.29)
    assert m["tps"] == pytest.approx(60557 / 197.29)
    assert m["completed"] == 1000 and m["duration_s"] == pytest.approx(197.29)
    assert m["ttft_p99_ms"] == pytest.approx(312.5)
    assert m["tpot_p90_ms"] == pytest.approx(5.4)
    assert m["latency_p99_ms"] == pytest.approx(640.0)
    assert m["latency_avg_ms"] == pytest.approx(271.979)
    assert m["ttft_ms"]["percentiles"]["99.9"] == pytest.approx(316.572)
    assert m["tps_per_user_v1"] == pytest.approx(1000 / 5.4)
    assert m["tps_per_user_v07"] == pytest.approx(60557 / 197.29 / 128)
    # v0.7 records no failures: unknown, not zero
    assert m["error_rate"] is None
    assert "n_samples_failed" in m["not_measured"]
    with store.session() as s:
        run = s.get(Run, point.run_id)
        assert run is not None
        folder = Path(run.artifact_path or "")
        assert json.loads((folder / "run_metadata.json").read_text()) == meta
        synthesized = json.loads(Path(run.summary["result_summary_path"]).read_text())
        assert synthesized["ttft"]["percentiles"]["99.0"] == pytest.approx(312.5e6)
        # the same keys as a point measured here (plus the list of what v0.7 lacks)
        measured_keys = set(json.loads(json.dumps(m)))
        w = s.exec(select(Workload)).first()
        assert w is not None
    from orchestrator.runs.metrics import point_metrics

    reference = point_metrics(
        json.loads((REFERENCE / "run_conc16/performance/result_summary.json").read_text()), 16
    )
    assert set(reference) <= measured_keys
