"""The simulator's settings: timing model, output lengths, streaming shape and faults.

One flat pydantic model, so that a CLI, a YAML file or a test can build it and so that a
typo in a field name is an error (`extra="forbid"`). Units are in the names. Two timing
models share everything else: `fixed` (every request gets the same TTFT and TPOT, plus
optional seeded jitter; the ground truth for tests) and `batching` (one continuous batch
per server, whose step time grows with its size; realistic curves for demos). The fault
rates are probabilities per generation request and are mutually exclusive — one uniform
draw picks at most one fault — so each rate is exactly the share of requests hit by it and
their sum may not exceed 1.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["SimulatorConfig"]


class SimulatorConfig(BaseModel):
    """How the simulated server behaves. Every field has a default; see the descriptions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["fixed", "batching"] = Field(
        default="fixed",
        description="fixed: constant TTFT/TPOT per request; batching: one continuous batch.",
    )

    # fixed mode
    ttft_ms: float = Field(
        default=50.0, ge=0, description="Fixed mode: request fully received → first token."
    )
    tpot_ms: float = Field(default=5.0, ge=0, description="Fixed mode: time between tokens.")
    jitter_ms: float = Field(
        default=0.0,
        ge=0,
        description="Fixed mode: uniform ± jitter added to the TTFT and to every token "
        "interval (an interval never goes below 0); seeded.",
    )

    # output length
    output_tokens: int = Field(
        default=64,
        ge=1,
        description="Content tokens per answer; a request's max_tokens / "
        "max_completion_tokens caps it (finish_reason 'length' when it does).",
    )
    output_tokens_jitter: int = Field(
        default=0, ge=0, description="Uniform ± integer jitter on output_tokens (min 1); seeded."
    )

    # batching mode
    max_batch: int = Field(default=64, ge=1, description="Batching: most sequences per step.")
    prefill_ms_per_input_token: float = Field(
        default=0.05,
        ge=0,
        description="Batching: a step that admits new sequences is longer by this much per "
        "prompt token of the newly admitted sequences.",
    )
    decode_step_ms: float = Field(default=10.0, ge=0, description="Batching: step time at batch 1.")
    decode_step_ms_per_seq: float = Field(
        default=0.2, ge=0, description="Batching: step time added per running sequence."
    )
    queue_limit: int = Field(
        default=1024,
        ge=0,
        description="Batching: most requests waiting for a batch slot; beyond it, HTTP 429.",
    )

    # streaming shape, both modes
    tokens_per_chunk: int = Field(
        default=1,
        ge=1,
        description="Tokens grouped per SSE event, like vLLM's stream_interval; a chunk is "
        "sent when its last token is generated.",
    )
    reasoning_tokens: int = Field(
        default=0,
        ge=0,
        description="Chat only: tokens emitted before the content as delta.reasoning_content; "
        "they count as completion tokens and against max_tokens.",
    )
    stamp: bool = Field(
        default=False,
        description='Add "rb_server_ns": time.monotonic_ns() (taken at write time) to every '
        "streamed JSON chunk; for fidelity benchmarks.",
    )

    # faults (probabilities per generation request, mutually exclusive)
    error_rate: float = Field(default=0.0, ge=0, le=1, description="Answer HTTP 500.")
    stall_rate: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Mid-stream, send nothing for stall_s (the connection stays open), then "
        "resume.",
    )
    stall_s: float = Field(default=30.0, ge=0, description="Length of a stall.")
    malformed_rate: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Insert a `data: {not json` event mid-stream (non-streamed: the body).",
    )
    drop_rate: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Close the TCP connection mid-stream, without a finish_reason.",
    )

    # identity
    api_key: str | None = Field(
        default=None, description="When set, requests need `Authorization: Bearer <api_key>`."
    )
    served_model: str = Field(
        default="sim-model",
        min_length=1,
        description="The only model served; a request naming another gets 404.",
    )
    seed: int | None = Field(
        default=None,
        description="Seeds fault decisions and jitter: the n-th generation request of two "
        "servers with the same seed gets the same draws.",
    )

    @model_validator(mode="after")
    def _fault_rates_fit(self) -> Self:
        total = self.error_rate + self.stall_rate + self.malformed_rate + self.drop_rate
        if total > 1.0 + 1e-9:
            raise ValueError(
                "error_rate + stall_rate + malformed_rate + drop_rate must not exceed 1 "
                f"(faults are mutually exclusive), got {total:g}"
            )
        return self
