"""Export points and frontiers in the MLPerf Endpoints formats (DESIGN §9).

v1.0 bundle, in the layout the official checker (package `endpoints-submission-cli` 1.5.3.0:
`endpoints-submission-cli check-submission`, `submission_checker/layout.py`) reads:

    OUT/<organisation>/<submission>/src/rollbench/README.md
    OUT/<organisation>/<submission>/docs/README.md
    OUT/<organisation>/<submission>/results/<system>/<model>/r<N>/
        point.yaml  system_desc.json  result_summary.json  config.yaml

`result_summary.json` is the point's own file (the run's for a measured point, the imported
one otherwise), rewritten in two ways only: counts follow the v1.0 convention (completed
excludes failures; see formats.py) and credentials are redacted. It also states
`system_tps` (= output tokens / duration) and `tps_per_user` (= 1000 / TPOT p90 in ms), which
the checker verifies against its own derivation. `accuracy_results.json` is not written:
no accuracy run exists yet, and the checker reads a missing file as "no accuracy result"
(its accuracy-present / accuracy-coverage rules then fail, truthfully) whereas an empty one
would claim an accuracy file and fail as invalid.

v0.7 `run_metadata.json` is computed from the point's canonical metrics, as the MLCommons
field guide (`docs/run-metadata-fields.md`) defines it: `measured_total_requests =
n_samples_completed`, `measured_run_duration = duration_ns / 1e9`, `system_tps = output
tokens / duration`, `tps_per_user = system_tps / concurrency`, `qps = requests / duration`,
`ttft` = TTFT p99 in ms, `measured_latency_*` in ms. A figure the point lacks is null.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml
from sqlmodel import Session

from orchestrator.auth.models import Organisation
from orchestrator.auth.service import Principal
from orchestrator.errors import NotFound
from orchestrator.frontier.service import get_version
from orchestrator.interop.formats import to_v1_counting
from orchestrator.interop.importer import redact_mapping
from orchestrator.runs.models import Point, PointState, Run
from orchestrator.runs.points import get_point
from orchestrator.submissions.models import Publication, Submission
from orchestrator.systems.models import System
from orchestrator.workloads.models import Workload

__all__ = [
    "IMPLEMENTATION",
    "readable_point",
    "result_summary_v1",
    "run_metadata_v07",
    "write_frontier_v1",
    "write_point_v07",
    "write_point_v1",
]

IMPLEMENTATION: Final = "rollbench"
SERIES: Final = ("ttft", "tpot", "latency", "output_sequence_lengths", "input_sequence_lengths")
_V07_SERIES: Final = (("ttft", "ttft_ms"), ("tpot", "tpot_ms"), ("request", "latency_ms"))
_V07_FIGURES: Final = (
    ("min", "min"),
    ("average", "avg"),
    ("p50", "50.0"),
    ("p90", "90.0"),
    ("p95", "95.0"),
    ("p99", "99.0"),
    ("p999", "99.9"),
    ("max", "max"),
)
_PARALLELISM: Final = (
    "tensor_parallel",
    "pipeline_parallel",
    "expert_parallel",
    "data_parallel",
    "disaggregated",
    "batch",
)
# §8.2.1 node fields a system's topology may declare; copied into system_desc.json as given
_NODE_FIELDS: Final = (
    "host_processor_model_name",
    "host_processors_per_node",
    "host_processor_core_count",
    "host_processor_vcpu_count",
    "host_memory_capacity",
    "host_memory_configuration",
    "host_network_card_count",
    "host_networking",
    "host_storage_capacity",
    "host_storage_type",
    "cooling",
    "driver",
    "operating_system",
    "filesystem",
    "container_link",
)


@dataclass(frozen=True)
class _Context:
    point: Point
    run: Run
    submission: Submission
    system: System
    workload: Workload


def _context(session: Session, point: Point) -> _Context:
    run = session.get(Run, point.run_id)
    submission = session.get(Submission, point.submission_id)
    system = session.get(System, point.system_id)
    workload = session.get(Workload, point.workload_id)
    assert run is not None and submission is not None
    assert system is not None and workload is not None
    return _Context(point, run, submission, system, workload)


def readable_point(session: Session, *, principal: Principal, point_id: int) -> Point:
    """The point if `principal` may read it: accepted points are published, others follow
    the submission's organisation (a foreign unpublished point is NotFound, like a missing
    one)."""
    point = session.get(Point, point_id)
    if point is not None and point.state is PointState.ACCEPTED:
        return point
    return get_point(session, principal=principal, point_id=point_id)


# --------------------------------------------------------------------------- documents


def _pct(series: Mapping[str, Any], key: str) -> float | None:
    pct = series.get("percentiles") or {}
    for name in (key, key.removesuffix(".0")):
        value = pct.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def result_summary_v1(session: Session, *, point: Point) -> dict[str, Any]:
    """The point's `result_summary.json` as a v1.0 bundle carries it (times in ns).

    NotFound when the point's result file is gone (a store whose artifacts were removed).
    """
    ctx = _context(session, point)
    where = (ctx.run.summary or {}).get("result_summary_path")
    if not where or not Path(where).is_file():
        raise NotFound(f"point {point.id} has no result_summary.json on this store")
    raw = json.loads(Path(where).read_text(encoding="utf-8"))
    doc = redact_mapping(to_v1_counting(raw))
    # a series nothing was measured for (e.g. TTFT when every request failed) is left out:
    # the checker reads a missing series as empty, but refuses a null one as malformed
    for series in SERIES:
        if series in doc and doc[series] is None:
            del doc[series]
    duration_ns = doc.get("duration_ns")
    osl = doc.get("output_sequence_lengths")
    total = osl.get("total") if isinstance(osl, Mapping) else None
    if (
        isinstance(duration_ns, (int, float))
        and duration_ns > 0
        and isinstance(total, (int, float))
    ):
        doc["system_tps"] = int(total) / (duration_ns / 1e9)
    tpot = doc.get("tpot")
    p90 = _pct(tpot, "90.0") if isinstance(tpot, Mapping) else None
    if p90 is not None and p90 > 0:
        doc["tps_per_user"] = 1000.0 / (p90 / 1e6)
    return doc


def _node_config(system: System) -> str | None:
    if not system.accelerator_model:
        return None
    return f"{system.accelerator_count}x {system.accelerator_model}"


def _config_summary(system: System) -> dict[str, Any]:
    topology = system.topology or {}
    return {name: topology.get(name) for name in _PARALLELISM}


def run_metadata_v07(session: Session, *, point: Point) -> dict[str, Any]:
    """The point as a v0.7 `run_metadata.json` (seconds and milliseconds)."""
    ctx = _context(session, point)
    m = point.metrics
    duration_s = m.get("duration_s")
    completed = m.get("completed")
    tokens = m.get("output_tokens")
    system_tps = tokens / duration_s if tokens is not None and duration_s else m.get("tps")
    qps = completed / duration_s if completed is not None and duration_s else None
    doc: dict[str, Any] = {
        "run_date": ctx.run.finished_at.date().isoformat() if ctx.run.finished_at else None,
        "node_config": _node_config(ctx.system),
        "config_summary": _config_summary(ctx.system),
        "config_summary_notes": None,
        "concurrency": point.concurrency,
        "system_tps": system_tps,
        "tps_per_user": None if system_tps is None else system_tps / point.concurrency,
        "ttft": _metric_pct(m, "ttft_ms", "99.0"),
        "qps": qps,
        "tps_utilization": None,
        "measured_total_output_tokens": tokens,
        "measured_run_duration": duration_s,
        "measured_total_requests": completed,
        "link_config": None,
        "link_logs": None,
    }
    for family, key in _V07_SERIES:
        series = m.get(key) or {}
        for suffix, source in _V07_FIGURES:
            if source in ("min", "avg", "max"):
                value = series.get(source)
            else:
                value = _metric_pct(m, key, source)
            doc[f"measured_latency_{family}_{suffix}"] = value
    return doc


def _metric_pct(metrics: Mapping[str, Any], key: str, pct: str) -> float | None:
    series = metrics.get(key)
    if not isinstance(series, Mapping):
        return None
    value = (series.get("percentiles") or {}).get(pct)
    return None if value is None else float(value)


# --------------------------------------------------------------------------- v1.0 bundle


def _slug(name: str) -> str:
    """A directory name the checker accepts (its `canonical_model_name` rule)."""
    part = name.split("/")[-1].strip()
    slug = re.sub(r"_+", "_", re.sub(r"[^\w\-]", "_", part)).strip("_")
    return slug[:64] or "unnamed"


def _status(submissions: Sequence[Submission]) -> tuple[str, str]:
    """(division, system_availability_status) of a curve from its submissions' publication."""
    publications = {s.publication for s in submissions}
    if Publication.RDI in publications:
        return "RDI", "RDI"
    if Publication.PREVIEW in publications:
        return "Standardized", "Preview"
    return "Standardized", "Available"


def _system_desc(
    system: System, *, division: str, availability: str, c_max: int, utilization: float
) -> dict[str, Any]:
    topology = system.topology or {}
    per_node = system.accelerator_count
    if system.nodes > 1 and system.accelerator_count % system.nodes == 0:
        per_node = system.accelerator_count // system.nodes
    node: dict[str, Any] = {
        "system_node_ensemble_id": 1,
        "number_of_nodes": system.nodes,
        "accelerator_info": [
            {
                "accelerator_model_name": system.accelerator_model or None,
                "accelerators_per_node": per_node,
            }
        ],
        "inference_backend": " ".join(x for x in (system.runtime, system.runtime_version) if x)
        or None,
    }
    node.update({name: topology[name] for name in _NODE_FIELDS if name in topology})
    doc: dict[str, Any] = {
        "system_name": system.name,
        "shortened_system_name": system.name[:20],
        "division": division,
        "system_availability_status": availability,
        "max_supported_concurrency": c_max,
        "system_size": f"{system.nodes} node" + ("s" if system.nodes != 1 else ""),
        "system_node_ensemble_count": 1,
        "system_node_ensemble_total": system.nodes,
        "serving_framework": node["inference_backend"],
        "node_types": [node],
        "node_config": _node_config(system),
        "model_precision": system.precision or None,
        "tps_utilization": utilization,
    }
    for key in ("availability_url", "target_availability_date", "endpoint_url"):
        if key in topology:
            doc[key] = topology[key]
    for name in _PARALLELISM:
        if topology.get(name) is not None:
            doc[name] = topology[name]
    return doc


def _seeds(doc: Mapping[str, Any]) -> dict[str, Any]:
    run_config = doc.get("run_config") or {}
    out: dict[str, Any] = {}
    if isinstance(run_config, Mapping):
        if run_config.get("scheduler_random_seed") is not None:
            out["scheduler_rng_seed"] = run_config["scheduler_random_seed"]
        seed = run_config.get("dataloader_random_seed", run_config.get("scheduler_random_seed"))
        if seed is not None:
            out["sample_index_rng_seed"] = seed
    return out


def _warmup(doc: Mapping[str, Any], concurrency: int) -> dict[str, Any]:
    run_config = doc.get("run_config") or {}
    warmup = run_config.get("warmup") if isinstance(run_config, Mapping) else None
    issued = 0
    if isinstance(warmup, Mapping) and warmup.get("enabled"):
        issued = int(warmup.get("n_requests") or 0)
    if not issued:
        return {
            "duration_s": 0.0,
            "requests_issued": 0,
            "requests_completed": 0,
            "data_source": "no warm-up",
            "concurrency": 0,
        }
    ours = doc.get("rollbench")
    failed = ours.get("warmup_failed") if isinstance(ours, Mapping) else None
    completed = issued - int(failed) if isinstance(failed, int) else issued
    return {
        "duration_s": 0.0,  # not recorded by either client
        "requests_issued": issued,
        "requests_completed": max(completed, 0),
        "data_source": "the performance dataset, before measurement started"
        + ("" if isinstance(failed, int) else " (completions not recorded: assumed all)"),
        "concurrency": concurrency,
        "logs_retained": False,
    }


def _dataset(workload: Workload) -> tuple[str, str]:
    dataset = (workload.definition or {}).get("dataset") or {}
    if dataset.get("path"):
        return str(dataset["path"]), str(dataset["path"])
    return f"{workload.name} (synthetic)", f"rollbench workload {workload.name} v{workload.version}"


def _point_yaml(
    ctx: _Context, doc: Mapping[str, Any], *, division: str, model: str, c_max: int
) -> dict[str, Any]:
    dataset_name, dataset_link = _dataset(ctx.workload)
    return {
        "concurrency": ctx.point.concurrency,
        "dataset": ctx.workload.name,
        "runtime_settings": {
            "load_pattern": "concurrency",
            "stream_all_chunks": True,
            "runtime": _seeds(doc),
        },
        "warmup": _warmup(doc, ctx.point.concurrency),
        "division": division,
        "max_supported_concurrency": c_max,
        "model_name": model,
        "model_precision": ctx.system.precision or None,
        "link_to_model": ctx.system.model or None,
        "dataset_name": dataset_name,
        "dataset_type": "Performance",
        "dataset_link": dataset_link,
        "shared_src": f"src/{IMPLEMENTATION}",
        "shared_docs": "docs",
        "rollbench": {
            "point_id": ctx.point.id,
            "state": ctx.point.state.value,
            "submission_id": ctx.submission.id,
            "source": ctx.submission.source.value,
            "workload": f"{ctx.workload.name} v{ctx.workload.version}",
        },
    }


def _config_yaml(ctx: _Context, doc: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration the harness ran: the imported config.yaml, else rollbench's spec."""
    stored = (ctx.run.summary or {}).get("config_path")
    if stored and Path(stored).is_file():
        loaded = yaml.safe_load(Path(stored).read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            return redact_mapping(loaded)
    ours = doc.get("rollbench")
    spec = ours.get("spec") if isinstance(ours, Mapping) else None
    run_config = doc.get("run_config") or {}
    return redact_mapping(
        {
            "name": f"rollbench run {ctx.run.id}",
            "type": "online",
            "generator": IMPLEMENTATION,
            "model_params": {"name": ctx.system.model or ctx.workload.name, "streaming": "on"},
            "settings": {
                "load_pattern": {
                    "type": "concurrency",
                    "target_concurrency": ctx.point.concurrency,
                },
                "runtime": {k: v for k, v in run_config.items() if "seed" in k}
                if isinstance(run_config, Mapping)
                else {},
            },
            "rollbench_spec": spec,
        }
    )


def _write_json(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def _write_yaml(path: Path, doc: Any) -> None:
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def _write_shared(root: Path, contexts: Sequence[_Context]) -> None:
    src = root / "src" / IMPLEMENTATION
    src.mkdir(parents=True, exist_ok=True)
    kinds = sorted({c.submission.source.value for c in contexts})
    (src / "README.md").write_text(
        "# rollbench\n\nPoints exported by rollbench (rolling-submission orchestration for LLM "
        "inference endpoints).\n"
        f"Sources of these points: {', '.join(kinds)} (measured = by rollbench's load generator, "
        "closed-loop concurrency, times from a monotonic clock in ns; imported = MLCommons "
        "reference-client results kept as they were imported).\n"
        "No accuracy run exists for these points: accuracy_results.json is absent.\n",
        encoding="utf-8",
    )
    docs = root / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "README.md").write_text(
        "Exported by rollbench. Counts in result_summary.json follow the v1.0 convention "
        "(n_samples_completed excludes failed requests).\n",
        encoding="utf-8",
    )


def _write_bundle(session: Session, points: Sequence[Point], root: Path) -> Path:
    contexts = [_context(session, p) for p in sorted(points, key=lambda p: p.concurrency)]
    docs = [result_summary_v1(session, point=c.point) for c in contexts]
    tps = [float(d.get("system_tps") or 0.0) for d in docs]
    peak = max(tps) if tps else 0.0
    system = contexts[0].system
    c_max = system.max_concurrency or max(c.point.concurrency for c in contexts)
    division, availability = _status([c.submission for c in contexts])
    model = _slug(system.model or contexts[0].workload.name)
    curve = root / "results" / _slug(system.name) / model
    for ctx, doc, point_tps in zip(contexts, docs, tps, strict=True):
        folder = curve / f"r{ctx.point.concurrency}"
        folder.mkdir(parents=True, exist_ok=True)
        _write_json(folder / "result_summary.json", doc)
        _write_yaml(
            folder / "point.yaml",
            _point_yaml(ctx, doc, division=division, model=model, c_max=c_max),
        )
        _write_json(
            folder / "system_desc.json",
            _system_desc(
                system,
                division=division,
                availability=availability,
                c_max=c_max,
                utilization=point_tps / peak if peak > 0 else 0.0,
            ),
        )
        _write_yaml(folder / "config.yaml", _config_yaml(ctx, doc))
    _write_shared(root, contexts)
    return root


def _org(session: Session, system: System) -> str:
    org = session.get(Organisation, system.organisation_id)
    return _slug(org.name) if org is not None else f"org-{system.organisation_id}"


def write_point_v1(session: Session, *, point: Point, out: Path) -> Path:
    """One point as a v1.0 bundle under `out`; returns the submission root for the checker."""
    system = session.get(System, point.system_id)
    assert system is not None
    root = out / _org(session, system) / f"point-{point.id}"
    return _write_bundle(session, [point], root)


def write_point_v07(session: Session, *, point: Point, out: Path) -> Path:
    """The point's v0.7 `run_metadata.json` under `out/point_<N>/`; returns the file."""
    folder = out / f"point_{point.concurrency}"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "run_metadata.json"
    _write_json(target, run_metadata_v07(session, point=point))
    return target


def write_frontier_v1(
    session: Session, *, system: System, workload: Workload, out: Path, version: int | None = None
) -> tuple[Path, int]:
    """Every member of frontier version `version` (newest when None) as one v1.0 bundle.

    Returns the submission root and the version written.
    """
    assert system.id is not None and workload.id is not None
    row = get_version(session, system_id=system.id, workload_id=workload.id, version=version)
    points = [p for p in (session.get(Point, i) for i in row.members) if p is not None]
    if not points:
        raise NotFound(f"frontier version {row.version} has no points", field="version")
    label = (
        f"{_slug(system.name)}-{_slug(workload.name)}-v{workload.version}-frontier-{row.version}"
    )
    root = out / _org(session, system) / label
    return _write_bundle(session, points, root), row.version
