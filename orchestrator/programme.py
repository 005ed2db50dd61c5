"""Programme rules: one config for everything a submission programme decides.

Durations, sample counts, thresholds, region coverage, reproducibility, the update window,
the cost band and the webhooks live in one YAML file (`configs/programme.yaml`, the MLPerf
Endpoints values; `configs/programme-demo.yaml` scales durations to seconds for demos).
`ROLLBENCH_PROGRAMME_FILE` picks another one; without it, a `programme.yaml` in the data
directory (`rollbench up --demo` puts the demo's there) holds for every process that uses
that directory — the API, the workers and a CLI in another shell alike.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, ValidationError, model_validator

from orchestrator.config import get_settings

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = PROJECT_ROOT / "configs" / "programme.yaml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DurationRules(_Strict):
    """Minimum measured duration per level: MLPerf asks 600 s up to concurrency 32, 1200 s above."""

    low_concurrency_max: int = Field(32, ge=1, description="levels up to this use `low_s`")
    low_s: float = Field(600.0, ge=0)
    high_s: float = Field(1200.0, ge=0)

    def minimum_s(self, concurrency: float) -> float:
        return self.low_s if concurrency <= self.low_concurrency_max else self.high_s


class RegionRules(_Strict):
    """MLPerf Endpoints concurrency coverage (rules §5): ultra-low, then three log2 regions."""

    ultra_low_max: int = Field(32, ge=1)
    min_points: int = Field(7, ge=1)
    max_points: int = Field(32, ge=1)
    margin: float = Field(0.10, ge=0, description="points up to ceil((1+margin)·C_max) allowed")
    required: bool = Field(True, description="False: coverage findings are warnings")


class CheckRules(_Strict):
    min_samples: int = Field(1, ge=1, description="completed requests per level, at least")
    max_error_rate: float = Field(0.001, ge=0, le=1)
    min_delivered_concurrency: float = Field(
        0.95, ge=0, le=1, description="below this fraction of the target the harness saturated"
    )
    max_read_delay_p99_ms: float = Field(
        5.0, gt=0, description="client read delay p99 above this means the harness saturated"
    )
    littles_law_tolerance: float = Field(
        0.15, ge=0, description="|mean latency · QPS / concurrency − 1| at most this"
    )
    reproducibility_tolerance: float = Field(0.05, ge=0, description="throughput, same system")
    required_metadata: tuple[str, ...] = Field(
        ("accelerator_model", "accelerator_count", "runtime", "runtime_version", "model"),
        description="system fields a submission must declare",
    )


class CostRules(_Strict):
    delivered_fraction: tuple[float, float] = Field(
        (0.6, 0.9), description="the band of measured throughput a buyer may expect to use"
    )

    @model_validator(mode="after")
    def _ordered(self) -> CostRules:
        lo, hi = self.delivered_fraction
        if not 0 < lo <= hi <= 1:
            raise ValueError("delivered_fraction must satisfy 0 < low <= high <= 1")
        return self


WebhookEvent = Literal["submission.review_requested", "submission.decided", "point.decided"]


class Webhook(_Strict):
    url: HttpUrl
    events: tuple[WebhookEvent, ...] = (
        "submission.review_requested",
        "submission.decided",
    )
    # the signing secret is read from ROLLBENCH_WEBHOOK_SECRET, never from this file


class ProgrammeRules(_Strict):
    name: str = "mlperf-endpoints"
    durations: DurationRules = DurationRules()
    regions: RegionRules = RegionRules()
    checks: CheckRules = CheckRules()
    cost: CostRules = CostRules()
    update_window_days: float = Field(
        90.0,
        ge=0,
        description="days after a frontier's first version during which points may be added; "
        "0 freezes a curve at creation (MLPerf v1.0)",
    )
    default_slo: str = Field("interactive", description="SLO profile used when none is named")
    webhooks: tuple[Webhook, ...] = ()


class ProgrammeError(ValueError):
    pass


def load_programme(path: Path) -> ProgrammeRules:
    """The rules in `path`; ProgrammeError naming the file and field if they are not valid."""
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ProgrammeError(f"{path}: {exc}") from exc
    try:
        return ProgrammeRules.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ProgrammeError(f"{path}: {where}: {first['msg']}") from exc


@lru_cache(maxsize=4)
def _cached(path: Path) -> ProgrammeRules:
    return load_programme(path)


def programme_path() -> Path:
    """Settings' `programme_file`, else DATA_DIR/programme.yaml if there, else the default."""
    settings = get_settings()
    if settings.programme_file is not None:
        return settings.programme_file
    local = settings.data_dir / "programme.yaml"
    return local if local.is_file() else DEFAULT_FILE


def programme() -> ProgrammeRules:
    """The programme this process runs under (see `programme_path`)."""
    return _cached(programme_path().resolve())
