"""What a sweep measures: endpoint, dataset, load pattern, levels, limits.

Pydantic models so that the CLI, the API (later) and stored run configs share one
validated shape, and a bad value is reported with the field that holds it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from orchestrator.loadgen.engine import Pattern


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EndpointSpec(_Model):
    url: str = Field(description="Base URL of the OpenAI-compatible API, e.g. http://host:8000/v1")
    model: str = Field(min_length=1, description="Served model name sent in every request")
    api: Literal["chat", "completions"] = "chat"
    api_key: SecretStr | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    verify_tls: bool = True
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="Merged into every request body (e.g. cache_prompt)"
    )

    @field_validator("url")
    @classmethod
    def _check_url(cls, v: str) -> str:
        parts = urlsplit(v)
        if parts.scheme not in ("http", "https"):
            raise ValueError("must start with http:// or https://")
        if not parts.hostname:
            raise ValueError("has no host")
        try:
            _ = parts.port
        except ValueError as exc:
            raise ValueError(f"has an invalid port: {exc}") from None
        return v.rstrip("/")


class SyntheticSpec(_Model):
    isl: int = Field(128, ge=1, le=1_000_000, description="Input length, in words (≈ tokens)")
    osl: int = Field(64, ge=1, le=1_000_000, description="Requested output tokens (max_tokens)")
    prompts: int = Field(1024, ge=1, le=1_000_000, description="Distinct prompts generated")
    seed: int = 0


class DatasetSpec(_Model):
    path: Path | None = Field(None, description="JSONL file: prompt or messages per line")
    synthetic: SyntheticSpec | None = None
    max_tokens: int | None = Field(None, ge=1, description="Overrides per-line max_tokens")
    system: str | None = Field(None, description="System message added to chat prompts")
    temperature: float | None = Field(None, ge=0)
    seed: int | None = None

    @model_validator(mode="after")
    def _one_source(self) -> DatasetSpec:
        if (self.path is None) == (self.synthetic is None):
            raise ValueError("give exactly one of path or synthetic")
        return self


class TimeoutSpec(_Model):
    connect_s: float = Field(10.0, gt=0)
    stall_s: float = Field(60.0, gt=0, description="No byte for this long fails as `stall`")
    total_s: float = Field(600.0, gt=0)
    drain_s: float = Field(60.0, ge=0, description="Wait for in-flight requests after issuing")


class HarnessLimits(_Model):
    """Beyond these the client, not the endpoint, is what was measured: the level is invalid."""

    max_cpu_util: float = Field(0.90, gt=0, le=1.0)
    max_loop_lag_p99_ms: float = Field(5.0, gt=0)
    max_issue_lag_p99_ms: float = Field(10.0, gt=0)
    min_delivered_concurrency_ratio: float = Field(0.90, ge=0, le=1.0)


class SweepSpec(_Model):
    endpoint: EndpointSpec
    dataset: DatasetSpec
    pattern: Pattern = "concurrency"
    levels: list[float] = Field(
        min_length=1,
        description="concurrency: requests in flight; poisson: target QPS; "
        "offline: requests issued at once",
    )
    requests: int | None = Field(None, ge=1, description="Measured requests per level")
    min_duration_s: float | None = Field(None, gt=0)
    max_duration_s: float | None = Field(None, gt=0)
    warmup: int = Field(0, ge=0, description="Uncounted requests before each level")
    seed: int = 42
    workers: int | None = Field(None, ge=1, le=256, description="Client processes (None: auto)")
    stream: bool = True
    include_usage: bool = True
    tokenizer: Path | None = Field(None, description="Hugging Face tokenizer.json for counting")
    transport: Literal["native", "aiohttp"] = "native"
    max_event_bytes: int = Field(4 * 1024 * 1024, ge=1024)
    connect_parallelism: int = Field(64, ge=1, le=4096)
    max_idle_s: float = Field(4.0, gt=0)
    give_up_after: int | None = Field(
        100,
        ge=1,
        description="Stop a level early when its first N requests all failed (None: never)",
    )
    timeouts: TimeoutSpec = Field(default_factory=TimeoutSpec)
    limits: HarnessLimits = Field(default_factory=HarnessLimits)

    @model_validator(mode="after")
    def _check(self) -> SweepSpec:
        for level in self.levels:
            if level <= 0:
                raise ValueError(f"levels must be > 0, got {level:g}")
            if self.pattern != "poisson" and level != int(level):
                raise ValueError(f"{self.pattern} levels must be whole numbers, got {level:g}")
        if self.pattern != "offline" and self.requests is None and self.min_duration_s is None:
            raise ValueError("give requests and/or min_duration_s: a level must know when to stop")
        if self.tokenizer is not None and not self.tokenizer.is_file():
            raise ValueError(f"tokenizer file not found: {self.tokenizer}")
        return self

    def auto_workers(self) -> int:
        if self.workers is not None:
            return self.workers
        # One process holds ~512 streams with a few ms of loop lag at most on a modest core
        # (bench/README.md). For Poisson the streams in flight are unknown before measuring:
        # guess one per 20 QPS (requests of ~20 s at most on average).
        biggest = max(self.levels) if self.pattern != "poisson" else max(self.levels) / 20
        return max(1, min(os.cpu_count() or 1, -(-int(biggest) // 512)))
