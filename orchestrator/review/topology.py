"""The `topology.consistent` check: one serving topology, wherever it is declared.

Parallel sizes, accelerator count, nodes and model must agree wherever they are declared —
the system description, the submission's server_config, the endpoint, and the metadata the
runs recorded (result_summary.json, a reference client's config.yaml) — under any of the
usual spellings (`ALIASES`), and the parallel sizes must fit the system's accelerators.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from orchestrator.endpoints.models import Endpoint
from orchestrator.review.findings import ERROR, Finding
from orchestrator.runs.models import Run
from orchestrator.submissions.models import Submission
from orchestrator.systems.models import System

__all__ = ["ALIASES", "TEXT_KEYS", "check_topology", "declared_topology"]


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
        # an imported run records where its reference-client config.yaml is stored; a run
        # folder read in place has it beside performance/
        config_path = (run.summary or {}).get("config_path")
        config = _read_doc(
            Path(config_path)
            if isinstance(config_path, str) and config_path
            else Path(path).parent.parent / "config.yaml"
        )
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
