"""The MLPerf Endpoints file formats rollbench reads and writes, as pydantic models.

Reading is strict where a lenient reader would import wrong figures: a count is a whole
number that is not negative, a time is a JSON number (a string such as "1.2e8" is refused,
not parsed), and a percentile key is the reference client's decimal string ("99.0"; "99" is
read as the same percentile, as the official checker does). Every refusal becomes an
`InteropError` that names the file and the field.

Counting conventions. The MLCommons reference client (mlcommons/endpoints at ea33275) counts
failed requests in `n_samples_completed` (so completed == issued after a drain), while the
official v1.0 checker (`submission-checker`, rule metric-consistency-accounting) requires
`n_samples_completed + n_samples_failed == n_samples_issued`, i.e. completed = succeeded.
rollbench stores the reference client's convention (orchestrator/runs/metrics.py reads it);
`to_v1_counting` and `to_reference_counting` convert a `result_summary.json` document, and
v1.0 documents written by rollbench say which convention they use in `COUNTING_KEY`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Final, TypeVar

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, field_validator

from orchestrator.errors import Invalid

__all__ = [
    "COUNTING_KEY",
    "COUNTING_V1",
    "DistributionDoc",
    "InteropError",
    "PointYamlDoc",
    "ReferenceConfigDoc",
    "ResultSummaryDoc",
    "RunMetadataV07",
    "is_v1_counting",
    "to_reference_counting",
    "to_v1_counting",
    "validate",
]

COUNTING_KEY: Final = "counting_convention"
COUNTING_V1: Final = "mlperf-endpoints-v1.0: n_samples_completed excludes failed requests"

M = TypeVar("M", bound=BaseModel)
Number = Annotated[float, Strict()]
Count = Annotated[int, Strict(), Field(ge=0)]


class InteropError(Invalid):
    """A file that cannot be imported (or a point that cannot be exported), and where.

    `path` is the offending file, `field` the dotted key inside it ("" for the file itself).
    It is an `Invalid`, so the API answers 422 and the CLI one line with exit status 2.
    """

    def __init__(self, message: str, path: Path | str, field: str = "") -> None:
        where = f"{path}: {field}: " if field else f"{path}: "
        super().__init__(where + message, field=field or None)
        self.path = Path(path)
        self.detail = message


class _Doc(BaseModel):
    model_config = ConfigDict(extra="allow")


class DistributionDoc(_Doc):
    """One series of `result_summary.json` (TTFT, TPOT, latency: ns; sequence lengths: tokens)."""

    total: Number | None = None
    min: Number | None = None
    max: Number | None = None
    median: Number | None = None
    avg: Number | None = None
    std_dev: Number | None = None
    percentiles: dict[str, Number | None] = Field(default_factory=dict)

    @field_validator("percentiles", mode="before")
    @classmethod
    def _keys(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise ValueError('must be an object keyed by percentile strings like "99.0"')
        keys: list[float] = []
        for key in value:
            if not isinstance(key, str):
                raise ValueError(f'key {key!r} must be a string like "99.0", not a number')
            try:
                number = float(key)
            except ValueError:
                raise ValueError(f'key {key!r} is not a percentile like "99.0"') from None
            if not math.isfinite(number) or not 0 <= number <= 100:
                raise ValueError(f"key {key!r} is not a percentile between 0 and 100")
            keys.append(number)
        if len(keys) > 1 and max(keys) <= 1.0:
            raise ValueError(
                f"keys {sorted(value)} look like fractions; percentiles are 0-100 "
                '("99.0", not "0.99")'
            )
        return value


class ResultSummaryDoc(_Doc):
    """`performance/result_summary.json` of the reference client (and of rollbench runs)."""

    n_samples_issued: Count
    n_samples_completed: Count
    n_samples_failed: Count
    duration_ns: Number = Field(gt=0)
    ttft: DistributionDoc | None = None
    tpot: DistributionDoc | None = None
    latency: DistributionDoc | None = None
    output_sequence_lengths: DistributionDoc | None = None
    input_sequence_lengths: DistributionDoc | None = None
    qps: Number | None = None
    tps: Number | None = None
    run_config: dict[str, Any] | None = None


class LoadPatternDoc(_Doc):
    type: str
    target_concurrency: Annotated[int, Strict(), Field(ge=1)] | None = None
    target_qps: Number | None = None


class SettingsDoc(_Doc):
    load_pattern: LoadPatternDoc
    runtime: dict[str, Any] | None = None
    warmup: dict[str, Any] | None = None


class ReferenceConfigDoc(_Doc):
    """`config.yaml` of a reference-client run folder: the resolved benchmark config."""

    settings: SettingsDoc
    name: str | None = None
    type: str | None = None
    model_params: dict[str, Any] | None = None
    endpoint_config: dict[str, Any] | None = None


class RuntimeSettingsDoc(_Doc):
    load_pattern: str = "concurrency"


class PointYamlDoc(_Doc):
    """`point.yaml` of a v1.0 point directory (only what an import reads)."""

    concurrency: Annotated[int, Strict(), Field(ge=1)]
    runtime_settings: RuntimeSettingsDoc = Field(default_factory=RuntimeSettingsDoc)
    model_name: str | None = None
    dataset: str | None = None


_MS = Number | None


class RunMetadataV07(_Doc):
    """v0.7 `run_metadata.json`: durations in seconds, latencies in milliseconds.

    Only `concurrency`, `measured_run_duration` and `measured_total_requests` are required;
    a missing latency figure is imported as not measured.
    """

    concurrency: Annotated[int, Strict(), Field(ge=1)]
    measured_run_duration: Number = Field(gt=0)
    measured_total_requests: Count
    measured_total_output_tokens: Annotated[float, Strict(), Field(ge=0)] | None = None
    system_tps: Annotated[float, Strict(), Field(ge=0)] | None = None
    tps_per_user: Number | None = None
    qps: Annotated[float, Strict(), Field(ge=0)] | None = None
    ttft: _MS = None
    run_date: str | None = None
    node_config: str | None = None
    measured_latency_ttft_min: _MS = None
    measured_latency_ttft_average: _MS = None
    measured_latency_ttft_p50: _MS = None
    measured_latency_ttft_p90: _MS = None
    measured_latency_ttft_p95: _MS = None
    measured_latency_ttft_p99: _MS = None
    measured_latency_ttft_p999: _MS = None
    measured_latency_ttft_max: _MS = None
    measured_latency_tpot_min: _MS = None
    measured_latency_tpot_average: _MS = None
    measured_latency_tpot_p50: _MS = None
    measured_latency_tpot_p90: _MS = None
    measured_latency_tpot_p95: _MS = None
    measured_latency_tpot_p99: _MS = None
    measured_latency_tpot_p999: _MS = None
    measured_latency_tpot_max: _MS = None
    measured_latency_request_min: _MS = None
    measured_latency_request_average: _MS = None
    measured_latency_request_p50: _MS = None
    measured_latency_request_p90: _MS = None
    measured_latency_request_p95: _MS = None
    measured_latency_request_p99: _MS = None
    measured_latency_request_p999: _MS = None
    measured_latency_request_max: _MS = None


def _explain(error: Mapping[str, Any]) -> str:
    kind = str(error.get("type", ""))
    value = error.get("input")
    if kind in ("float_type", "int_type", "int_from_float") and isinstance(value, str):
        return f"must be a JSON number, not the string {value!r}"
    if kind == "float_type":
        return f"must be a number, not {value!r}"
    if kind in ("int_type", "int_from_float"):
        return f"must be a whole number, not {value!r}"
    if kind == "greater_than_equal":
        return f"must not be negative (got {value!r})"
    if kind == "greater_than":
        return f"must be positive (got {value!r})"
    if kind == "missing":
        return "is missing"
    if kind == "value_error":
        return str(error.get("ctx", {}).get("error", error.get("msg", "")))
    return str(error.get("msg", "is invalid"))


def validate(model: type[M], data: Any, path: Path) -> M:
    """`data` as `model`, or an InteropError naming `path` and the first bad field."""
    if not isinstance(data, Mapping):
        raise InteropError(f"must hold an object, not {type(data).__name__}", path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in first["loc"])
        raise InteropError(_explain(first), path, field) from None


def is_v1_counting(doc: Mapping[str, Any]) -> bool:
    """True when `n_samples_completed` of `doc` excludes failures (the v1.0 checker's reading).

    A document written by rollbench says so in `COUNTING_KEY`. Otherwise, with failures, the
    counts decide: completed + failed == issued with completed < issued can only be the
    v1.0 convention (the reference client drains, so its completed equals issued).
    """
    if doc.get(COUNTING_KEY) == COUNTING_V1:
        return True
    issued, completed, failed = (
        doc.get("n_samples_issued"),
        doc.get("n_samples_completed"),
        doc.get("n_samples_failed"),
    )
    if not all(isinstance(v, int) for v in (issued, completed, failed)):
        return False
    assert isinstance(issued, int) and isinstance(completed, int) and isinstance(failed, int)
    return failed > 0 and completed < issued and completed + failed == issued


def to_reference_counting(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `doc` whose `n_samples_completed` counts failures (what point_metrics reads)."""
    out = copy.deepcopy(dict(doc))
    if is_v1_counting(doc):
        out["n_samples_completed"] = int(doc["n_samples_completed"]) + int(doc["n_samples_failed"])
    out.pop(COUNTING_KEY, None)
    return out


def to_v1_counting(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `doc` in the v1.0 checker's convention: completed excludes failed requests,
    so that completed + failed == issued (rule metric-consistency-accounting)."""
    out = copy.deepcopy(dict(doc))
    if not is_v1_counting(doc):
        completed, failed = doc.get("n_samples_completed"), doc.get("n_samples_failed")
        if isinstance(completed, int) and isinstance(failed, int):
            out["n_samples_completed"] = completed - failed
    out[COUNTING_KEY] = COUNTING_V1
    return out
