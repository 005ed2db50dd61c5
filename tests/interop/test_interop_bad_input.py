"""Malformed imports: an error naming the file and the field, and nothing written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from interop.interop_helpers import REFERENCE, Store, reference_copy

from orchestrator.db import session_scope
from orchestrator.interop.formats import InteropError
from orchestrator.interop.importer import import_mlperf
from orchestrator.systems.models import System
from orchestrator.workloads.service import resolve

SUMMARY = Path("performance") / "result_summary.json"


def edit_summary(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / SUMMARY
        doc = json.loads(path.read_text())
        change(doc)
        path.write_text(json.dumps(doc))

    return apply


def edit_config(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / "config.yaml"
        doc = yaml.safe_load(path.read_text())
        change(doc)
        path.write_text(yaml.safe_dump(doc))

    return apply


def _set(doc: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split("/")
    for key in parents:
        doc = doc[key]
    doc[last] = value


CASES: dict[str, tuple[Callable[[Path], None], str, str, str]] = {
    # name: (breakage, file the error names, field it names, words in the message)
    "missing result summary": (
        lambda f: (f / SUMMARY).unlink(),
        "performance/result_summary.json",
        "",
        "missing",
    ),
    "missing config": (lambda f: (f / "config.yaml").unlink(), "config.yaml", "", "missing"),
    "percentile as a string": (
        edit_summary(lambda d: _set(d, "ttft/percentiles/99.0", "147860998.0")),
        "result_summary.json",
        "ttft.percentiles.99.0",
        "string",
    ),
    "percentile keys as fractions": (
        edit_summary(lambda d: _set(d, "tpot/percentiles", {"0.5": 2e6, "0.9": 2.1e6})),
        "result_summary.json",
        "tpot.percentiles",
        "fractions",
    ),
    "percentile key not a number": (
        edit_summary(lambda d: _set(d, "latency/percentiles", {"p99": 8e8})),
        "result_summary.json",
        "latency.percentiles",
        "p99",
    ),
    "duration in seconds": (
        edit_summary(lambda d: _set(d, "duration_ns", 11.587715549)),
        "result_summary.json",
        "duration_ns",
        "nanoseconds",
    ),
    "latencies in milliseconds": (
        edit_summary(lambda d: _set(d, "latency/percentiles/50.0", 440.33)),
        "result_summary.json",
        "latency.percentiles.50.0",
        "nanoseconds",
    ),
    "negative count": (
        edit_summary(lambda d: _set(d, "n_samples_failed", -1)),
        "result_summary.json",
        "n_samples_failed",
        "negative",
    ),
    "count as a string": (
        edit_summary(lambda d: _set(d, "n_samples_issued", "400")),
        "result_summary.json",
        "n_samples_issued",
        "string",
    ),
    "poisson load pattern": (
        edit_config(
            lambda d: _set(d, "settings/load_pattern", {"type": "poisson", "target_qps": 30.0})
        ),
        "config.yaml",
        "settings.load_pattern.type",
        "concurrency",
    ),
    "concurrency disagreeing with the summary": (
        edit_config(lambda d: _set(d, "settings/load_pattern/target_concurrency", 32)),
        "result_summary.json",
        "run_config.load_pattern.target_concurrency",
        "32",
    ),
    "not JSON": (
        lambda f: (f / SUMMARY).write_text("{not json"),
        "result_summary.json",
        "",
        "not JSON",
    ),
}


def _attempt(store: Store, path: Path) -> InteropError:
    with store.session() as s:
        system = s.exec(__import__("sqlmodel").select(System)).first()
    with pytest.raises(InteropError) as caught, session_scope(store.engine) as s:
        import_mlperf(
            s, path=path, system=system, workload=resolve(s, name="synthetic-chat"), actor="tester"
        )
    return caught.value


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_malformed_folder_names_file_and_field_and_writes_nothing(
    store: Store, tmp_path: Path, case: str
) -> None:
    store.new_system("target")
    breakage, file, field, words = CASES[case]
    # a good folder beside the broken one: it must not be imported either
    runs = tmp_path / "runs"
    reference_copy("run_conc16", runs, concurrency=8)
    broken = reference_copy("run_conc16", runs)
    breakage(broken)
    before = store.counts()
    error = _attempt(store, runs)
    assert str(error.path).endswith(file), error
    assert str(error.path).startswith(str(broken)), error
    assert (error.field or "") == field, error
    assert words in str(error), error
    assert store.counts() == before
    assert not (store.data_dir / "artifacts" / "imported").exists()


V07_GOOD = {
    "concurrency": 16,
    "measured_run_duration": 11.587715549,
    "measured_total_requests": 400,
    "measured_total_output_tokens": 80076,
    "system_tps": 6910.42,
    "qps": 34.519,
    "ttft": 147.86,
    "measured_latency_ttft_p99": 147.86,
    "measured_latency_tpot_p90": 2.049,
}

V07_CASES: dict[str, tuple[dict[str, Any], str, str]] = {
    "duration in milliseconds": ({"measured_run_duration": 11587.715549}, "qps", "seconds"),
    "duration in ns, no qps": (
        {"measured_run_duration": 11587715549.0, "qps": None},
        "system_tps",
        "seconds",
    ),
    "duration in ns, no rates": (
        {"measured_run_duration": 11587715549.0, "qps": None, "system_tps": None},
        "measured_run_duration",
        "seconds",
    ),
    "requests as a string": (
        {"measured_total_requests": "400"},
        "measured_total_requests",
        "string",
    ),
    "negative requests": ({"measured_total_requests": -400}, "measured_total_requests", "negative"),
    "ttft not the p99": ({"ttft": 51.7}, "ttft", "p99"),
    "missing concurrency": ({"concurrency": None}, "concurrency", ""),
}


@pytest.mark.parametrize("case", sorted(V07_CASES))
def test_a_malformed_run_metadata_names_the_field_and_writes_nothing(
    store: Store, tmp_path: Path, case: str
) -> None:
    store.new_system("target")
    change, field, words = V07_CASES[case]
    doc = {k: v for k, v in {**V07_GOOD, **change}.items() if v is not None}
    path = tmp_path / "run_metadata.json"
    path.write_text(json.dumps(doc))
    before = store.counts()
    error = _attempt(store, path)
    assert error.path == path and error.field == field, error
    assert words in str(error), error
    assert store.counts() == before


def test_two_points_at_one_concurrency_are_refused(store: Store) -> None:
    store.new_system("target")
    before = store.counts()
    error = _attempt(store, REFERENCE)  # run_conc16 and run_flaky: both at concurrency 16
    assert error.field == "concurrency" and "16" in str(error)
    assert store.counts() == before


def test_a_folder_without_runs_is_refused(store: Store, tmp_path: Path) -> None:
    store.new_system("target")
    (tmp_path / "empty" / "nothing").mkdir(parents=True)
    error = _attempt(store, tmp_path / "empty")
    assert "no run folder" in str(error)
    error = _attempt(store, tmp_path / "absent")
    assert "does not exist" in str(error)
