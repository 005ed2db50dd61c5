"""The numbers of one level, computed from its per-request records as DESIGN §5 defines them.

`summarize_level` takes the *tracked* records of a level — the measured requests only, warm-up
excluded, drained so that each ended as a success or a classified failure — and derives every
reported quantity: counts, duration, QPS/TPS, the TTFT/TPOT/latency/sequence-length
distributions, per-user TPS in both published conventions, the error rate with its Wilson
interval, failure and finish-reason counts, inter-chunk gaps and the harness-health numbers
(issue lag, delivered concurrency). `LevelSummary.to_result_summary` writes them in the layout
of the MLCommons reference client's `result_summary.json`; everything the reference client does
not report goes inside one `"rollbench"` object so that a reader of the reference layout sees
nothing unexpected.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from orchestrator.loadgen.records import Failure, FinishReason, RequestRecords
from orchestrator.stats.intervals import wilson_interval
from orchestrator.stats.jsontypes import JsonObject, JsonValue
from orchestrator.stats.percentiles import Distribution, distribution, percentile_key

# The reference client (mlcommons/endpoints at ea33275) writes this layout version.
RESULT_SUMMARY_VERSION: Final = "0.1.0"
ERROR_RATE_CONFIDENCE: Final = 0.95
FAILURE_CLASSES: Final[tuple[str, ...]] = tuple(f.label for f in Failure if f is not Failure.NONE)
FINISH_REASONS: Final[tuple[str, ...]] = tuple(
    r.label for r in FinishReason if r is not FinishReason.NONE
)
TPS_PER_USER_V1_DEFINITION: Final = "1000 / tpot_p90_ms (MLPerf Endpoints rules v1.0)"
TPS_PER_USER_V07_DEFINITION: Final = "tps / concurrency (MLPerf Endpoints v0.7 run metadata)"

_NS_PER_S: Final = 1_000_000_000
_NS_PER_MS: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class LevelSummary:
    """Everything reported for one level. Rates are per second; `None` means undefined.

    Distributions in `*_ns` fields are in nanoseconds (`tpot_ns` is fractional), sequence
    lengths in tokens. `error_rate_lower/upper` bound `error_rate` at `ERROR_RATE_CONFIDENCE`.
    """

    issued: int
    succeeded: int
    failed: int
    completed: int
    duration_ns: int
    concurrency: int | None
    target_qps: float | None
    qps: float | None
    success_qps: float | None
    tps: float | None
    ttft_ns: Distribution | None
    tpot_ns: Distribution | None
    latency_ns: Distribution | None
    latency_success_ns: Distribution | None
    output_sequence_lengths: Distribution | None
    input_sequence_lengths: Distribution | None
    tps_per_user_v1: float | None
    tps_per_user_v07: float | None
    error_rate: float | None
    error_rate_lower: float
    error_rate_upper: float
    failure_counts: dict[str, int]
    finish_reason_counts: dict[str, int]
    max_gap_ns: Distribution | None
    p99_gap_ns: Distribution | None
    delivered_concurrency: float | None
    issue_lag_ns: Distribution | None
    read_delay_ns: Distribution | None = None

    @property
    def duration_s(self) -> float:
        return self.duration_ns / _NS_PER_S

    def to_result_summary(
        self, run_config: Mapping[str, object], *, version: str = RESULT_SUMMARY_VERSION
    ) -> JsonObject:
        """This level as the reference client's `result_summary.json`, plus `"rollbench"`.

        `run_config` (JSON-like: mappings, lists, numbers, strings, None) is copied in as given.
        Key order follows the reference file. Its `test_started_at`, `early_stopping_percentiles`
        and `histogram` are not produced.
        """
        return {
            "version": version,
            "git_sha": None,
            "n_samples_issued": self.issued,
            "n_samples_completed": self.completed,
            "n_samples_failed": self.failed,
            "duration_ns": self.duration_ns,
            "state": "complete",
            "complete": True,
            "ttft": _dist_json(self.ttft_ns),
            "tpot": _dist_json(self.tpot_ns),
            "latency": _dist_json(self.latency_ns),
            "output_sequence_lengths": _dist_json(self.output_sequence_lengths),
            "input_sequence_lengths": _dist_json(self.input_sequence_lengths),
            "legacy_loadgen_window_duration_ns": None,
            "qps": self.qps,
            "tps": self.tps,
            "finish_reason_counts": dict(self.finish_reason_counts),
            "run_config": _plain(run_config),
            "rollbench": self._rollbench_json(),
        }

    def _rollbench_json(self) -> JsonObject:
        series = {
            "ttft": self.ttft_ns,
            "tpot": self.tpot_ns,
            "latency": self.latency_ns,
            "latency_success_ns": self.latency_success_ns,
            "output_sequence_lengths": self.output_sequence_lengths,
            "input_sequence_lengths": self.input_sequence_lengths,
            "max_gap_ns": self.max_gap_ns,
            "p99_gap_ns": self.p99_gap_ns,
            "issue_lag_ns": self.issue_lag_ns,
            "read_delay_ns": self.read_delay_ns,
        }
        samples: JsonObject = {name: 0 if d is None else d.n for name, d in series.items()}
        return {
            "n_samples_succeeded": self.succeeded,
            "success_qps": self.success_qps,
            "concurrency": self.concurrency,
            "target_qps": self.target_qps,
            "error_rate": {
                "value": self.error_rate,
                "confidence": ERROR_RATE_CONFIDENCE,
                "wilson_lower": self.error_rate_lower,
                "wilson_upper": self.error_rate_upper,
            },
            "failure_counts": dict(self.failure_counts),
            "tps_per_user": {
                "v1": {"value": self.tps_per_user_v1, "definition": TPS_PER_USER_V1_DEFINITION},
                "v07": {
                    "value": self.tps_per_user_v07,
                    "definition": TPS_PER_USER_V07_DEFINITION,
                },
            },
            "latency_success_ns": _dist_json(self.latency_success_ns),
            "max_gap_ns": _dist_json(self.max_gap_ns),
            "p99_gap_ns": _dist_json(self.p99_gap_ns),
            "delivered_concurrency": self.delivered_concurrency,
            "issue_lag_ns": _dist_json(self.issue_lag_ns),
            # first useful chunk read by us − the server's own stamp of its write (only with a
            # stamping server on this host): the client's share of TTFT error
            "read_delay_ns": _dist_json(self.read_delay_ns),
            "samples": samples,
            "percentile_method": "lower",
        }


def summarize_level(
    records: RequestRecords,
    *,
    measurement_start_ns: int,
    concurrency: int | None,
    target_qps: float | None = None,
) -> LevelSummary:
    """Summarize the tracked (measured, drained) requests of one level.

    `measurement_start_ns` is when tracking began (same clock as the records); the level's
    duration runs from it to the last tracked completion. `concurrency` is the level asked
    for (None for open-loop patterns); `target_qps` the offered rate, if any.
    Raises ValueError on records that cannot come from a drained level (an end before its
    issue or before the measurement start, an unknown failure or finish-reason code).
    """
    _check_arguments(records, measurement_start_ns, concurrency, target_qps)
    issued = len(records)
    ok = records.succeeded
    succeeded = int(np.count_nonzero(ok))
    failed = issued - succeeded
    # Every tracked request ends as a success or a classified failure (the caller drains),
    # so all issued requests completed; like the reference client, completed counts failures.
    completed = issued
    duration_ns = int(records.end_ns.max()) - measurement_start_ns if issued else 0

    latency = distribution(records.end_ns - records.issue_ns)
    output_lengths = distribution(records.output_tokens[ok & (records.output_tokens >= 0)])
    tps = _tps(output_lengths, succeeded, duration_ns)
    tpot = distribution(_tpot_ns(records, ok))
    error_lower, error_upper = wilson_interval(failed, issued, ERROR_RATE_CONFIDENCE)

    return LevelSummary(
        issued=issued,
        succeeded=succeeded,
        failed=failed,
        completed=completed,
        duration_ns=duration_ns,
        concurrency=concurrency,
        target_qps=target_qps,
        qps=_rate(completed, duration_ns),
        success_qps=_rate(succeeded, duration_ns),
        tps=tps,
        ttft_ns=distribution(_ttft_ns(records, ok)),
        tpot_ns=tpot,
        latency_ns=latency,
        latency_success_ns=distribution(records.end_ns[ok] - records.issue_ns[ok]),
        output_sequence_lengths=output_lengths,
        # Over every request whose input length is known, as the reference client counts ISL
        # at issue time (its run_flaky folder: ISL n=200, TTFT n=160).
        input_sequence_lengths=distribution(records.input_tokens[records.input_tokens >= 0]),
        tps_per_user_v1=_tps_per_user_v1(tpot),
        tps_per_user_v07=None if tps is None or concurrency is None else tps / concurrency,
        error_rate=failed / issued if issued else None,
        error_rate_lower=error_lower,
        error_rate_upper=error_upper,
        failure_counts=_counts(records.failure, Failure, "failure"),
        finish_reason_counts=_counts(records.finish_reason, FinishReason, "finish_reason"),
        max_gap_ns=distribution(records.max_gap_ns[records.max_gap_ns >= 0]),
        p99_gap_ns=distribution(records.p99_gap_ns[records.p99_gap_ns >= 0]),
        # Little's law: mean in flight = QPS × mean latency = Σ latency / duration.
        delivered_concurrency=(
            None if latency is None or duration_ns == 0 else latency.total / duration_ns
        ),
        issue_lag_ns=distribution(
            (records.issue_ns - records.scheduled_ns)[records.scheduled_ns >= 0]
        ),
        read_delay_ns=distribution(
            (records.first_ns - records.first_server_ns)[
                (records.first_server_ns >= 0) & (records.first_ns >= 0)
            ]
        ),
    )


def _check_arguments(
    records: RequestRecords,
    measurement_start_ns: int,
    concurrency: int | None,
    target_qps: float | None,
) -> None:
    if concurrency is not None and concurrency < 1:
        raise ValueError(f"concurrency must be >= 1 or None, got {concurrency}")
    if target_qps is not None and not (np.isfinite(target_qps) and target_qps > 0):
        raise ValueError(f"target_qps must be a positive number or None, got {target_qps}")
    backwards = int(np.count_nonzero(records.end_ns < records.issue_ns))
    if backwards:
        raise ValueError(f"{backwards} records end before they were issued (end_ns < issue_ns)")
    early = int(np.count_nonzero(records.end_ns < measurement_start_ns))
    if early:
        raise ValueError(f"{early} records end before measurement_start_ns={measurement_start_ns}")


def _rate(count: float, duration_ns: int) -> float | None:
    """Events (or tokens) per second; undefined over a zero-length window."""
    if duration_ns <= 0:
        return None
    return count / (duration_ns / _NS_PER_S)


def _tps(output_lengths: Distribution | None, succeeded: int, duration_ns: int) -> float | None:
    """Output tokens per second over the successful requests, as the reference client.

    No successes is a known zero; successes none of which has a token count is unknown.
    """
    if output_lengths is None and succeeded > 0:
        return None
    tokens = 0 if output_lengths is None else output_lengths.total
    return _rate(tokens, duration_ns)


def _ttft_ns(records: RequestRecords, ok: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    mask = ok & (records.first_ns >= 0)
    return records.first_ns[mask] - records.issue_ns[mask]


def _tpot_ns(records: RequestRecords, ok: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
    mask = ok & (records.first_ns >= 0) & (records.tokens_after_first > 0)
    streamed_ns = (records.end_ns[mask] - records.first_ns[mask]).astype(np.float64)
    result: npt.NDArray[np.float64] = streamed_ns / records.tokens_after_first[mask]
    return result


def _tps_per_user_v1(tpot: Distribution | None) -> float | None:
    """`1000 / tpot_p90_ms`; undefined without TPOT or when its p90 is 0."""
    if tpot is None:
        return None
    tpot_p90_ms = tpot.percentiles[percentile_key(90.0)] / _NS_PER_MS
    return 1000.0 / tpot_p90_ms if tpot_p90_ms > 0 else None


def _counts(
    codes: npt.NDArray[np.int8], enum_type: type[Failure] | type[FinishReason], column: str
) -> dict[str, int]:
    """Count per label, every class present (zeros too), the NONE member left out.

    For finish reasons this counts every record that carries one, failed or not: a server
    that finished an answer we then classified as a failure (say empty_response) still
    reported why it stopped.
    """
    size = max(enum_type) + 1
    as_int = codes.astype(np.int64)
    if as_int.size and (int(as_int.min()) < 0 or int(as_int.max()) >= size):
        raise ValueError(f"records hold unknown {column} codes (expected 0..{size - 1})")
    counts = np.bincount(as_int, minlength=size)
    return {m.label: int(counts[m.value]) for m in enum_type if m.value != 0}


def _dist_json(dist: Distribution | None) -> JsonValue:
    return None if dist is None else dist.to_json()


def _plain(value: object) -> JsonValue:
    """A deep copy of JSON-like `value` made of dicts and lists only (`json.dumps`-able).

    Numpy scalars become Python numbers; anything else that JSON cannot hold is a TypeError.
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    raise TypeError(f"run_config holds a {type(value).__name__}, which JSON cannot represent")
