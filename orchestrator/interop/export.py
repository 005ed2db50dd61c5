"""Export points and frontiers as the MLPerf Endpoints v1.0 bundle (DESIGN §9).

The bundle is in the layout the official checker (package `endpoints-submission-cli`
1.5.3.0: `endpoints-submission-cli check-submission`, `submission_checker/layout.py`) reads:

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

The v0.7 `run_metadata.json` writer is export_v07.py; `write_point_v07` is re-exported here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import yaml
from sqlmodel import Session

from orchestrator.auth.models import Organisation
from orchestrator.errors import NotFound
from orchestrator.frontier.service import get_version
from orchestrator.interop.export_context import (
    PARALLELISM,
    PointContext,
    node_config,
    point_context,
    write_json,
    write_yaml,
)
from orchestrator.interop.export_v07 import write_point_v07
from orchestrator.interop.formats import to_v1_counting
from orchestrator.interop.redact import redact_mapping
from orchestrator.runs.models import Point
from orchestrator.submissions.models import Publication, Submission
from orchestrator.systems.models import System
from orchestrator.workloads.models import Workload

__all__ = [
    "IMPLEMENTATION",
    "result_summary_v1",
    "write_frontier_v1",
    "write_point_v07",  # re-exported from export_v07.py
    "write_point_v1",
]

IMPLEMENTATION: Final = "rollbench"
SERIES: Final = ("ttft", "tpot", "latency", "output_sequence_lengths", "input_sequence_lengths")
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
    ctx = point_context(session, point)
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
        "node_config": node_config(system),
        "model_precision": system.precision or None,
        "tps_utilization": utilization,
    }
    for key in ("availability_url", "target_availability_date", "endpoint_url"):
        if key in topology:
            doc[key] = topology[key]
    for name in PARALLELISM:
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
    ctx: PointContext, doc: Mapping[str, Any], *, division: str, model: str, c_max: int
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


def _config_yaml(ctx: PointContext, doc: Mapping[str, Any]) -> dict[str, Any]:
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


def _write_shared(root: Path, contexts: Sequence[PointContext]) -> None:
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
    contexts = [point_context(session, p) for p in sorted(points, key=lambda p: p.concurrency)]
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
        write_json(folder / "result_summary.json", doc)
        write_yaml(
            folder / "point.yaml",
            _point_yaml(ctx, doc, division=division, model=model, c_max=c_max),
        )
        write_json(
            folder / "system_desc.json",
            _system_desc(
                system,
                division=division,
                availability=availability,
                c_max=c_max,
                utilization=point_tps / peak if peak > 0 else 0.0,
            ),
        )
        write_yaml(folder / "config.yaml", _config_yaml(ctx, doc))
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
