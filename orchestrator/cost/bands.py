"""Cost bands of an operating point: pure arithmetic, numbers in, numbers out.

Notation, for one point: e = error rate (failed / issued), qps_s = successful requests per
second as measured (success_qps = qps · (1 − e)), tok_in / tok_out = mean input / output
tokens per completed request (the reference client totals tokens over completed requests;
a successful request is taken to carry the mean), f = the delivered-throughput fraction:
the share of its benchmark throughput a buyer can actually run a service at (a production
service cannot run at 100 % of what a closed-loop benchmark measured). The programme sets
the band of f (programme().cost.delivered_fraction, default 0.6–0.9).

Retries. A buyer retries failed requests, so each success costs 1 / (1 − e) attempts.

Hourly price P (a system's price_per_hour): the system costs P per hour whatever it does,
and failed attempts took capacity that successes did not get — which `success_qps` already
accounts for, since it counts successes only:

    cost per request          = P / (3600 · qps_s · f)
    cost per 1e6 output tok   = P / (3600 · qps_s · tok_out · f) · 1e6

The cheap end of the band is at the high f, the dear end at the low f.

Token prices p_in, p_out per million tokens (an endpoint's prices): every attempt is billed,
failed ones included, so

    cost per request          = (tok_in · p_in + tok_out · p_out) / 1e6 · 1 / (1 − e)
    cost per 1e6 output tok   = cost per request / tok_out · 1e6

which does not depend on f: the band collapses to one figure (a buyer paying per token pays
the same however hard the endpoint is driven).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TOKENS_PER_MTOK = 1e6
SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class CostBand:
    """Cost of one successful request (and of a million output tokens), low to high."""

    basis: str  # "hourly" (a system's price per hour) or "tokens" (an endpoint's prices)
    currency: str
    per_request_low: float
    per_request_high: float
    per_mtok_output_low: float | None  # None: the point has no output token count
    per_mtok_output_high: float | None
    delivered_fraction: tuple[float, float]
    expected_attempts: float  # attempts per success, 1 / (1 − e)
    collapsed: bool  # True when the band does not depend on the delivered fraction
    note: str


def _nonnegative(name: str, value: float) -> float:
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, not {value!r}")
    return float(value)


def expected_attempts(error_rate: float) -> float:
    """Attempts per successful request when every failure is retried: 1 / (1 − e)."""
    if not math.isfinite(error_rate) or not 0 <= error_rate < 1:
        raise ValueError(f"error rate must be in [0, 1), not {error_rate!r}")
    return 1.0 / (1.0 - error_rate)


def _fractions(delivered_fraction: tuple[float, float]) -> tuple[float, float]:
    low, high = delivered_fraction
    if not 0 < low <= high <= 1:
        raise ValueError(f"delivered fraction must satisfy 0 < low <= high <= 1, not {low}, {high}")
    return float(low), float(high)


def hourly_band(
    *,
    price_per_hour: float,
    success_qps: float,
    mean_output_tokens: float | None,
    error_rate: float,
    delivered_fraction: tuple[float, float],
    currency: str,
) -> CostBand:
    """Cost of a successful request on a system paid by the hour (see the module formulas)."""
    price = _nonnegative("price_per_hour", price_per_hour)
    if not math.isfinite(success_qps) or success_qps <= 0:
        raise ValueError(f"success_qps must be > 0, not {success_qps!r}")
    low_f, high_f = _fractions(delivered_fraction)
    attempts = expected_attempts(error_rate)
    per_request_low = price / (SECONDS_PER_HOUR * success_qps * high_f)
    per_request_high = price / (SECONDS_PER_HOUR * success_qps * low_f)
    mtok_low = mtok_high = None
    if mean_output_tokens is not None and mean_output_tokens > 0:
        mtok_low = per_request_low / mean_output_tokens * TOKENS_PER_MTOK
        mtok_high = per_request_high / mean_output_tokens * TOKENS_PER_MTOK
    return CostBand(
        basis="hourly",
        currency=currency,
        per_request_low=per_request_low,
        per_request_high=per_request_high,
        per_mtok_output_low=mtok_low,
        per_mtok_output_high=mtok_high,
        delivered_fraction=(low_f, high_f),
        expected_attempts=attempts,
        collapsed=False,
        note=(
            f"{price:g} {currency}/h at {low_f:g}–{high_f:g} of the measured "
            f"{success_qps:.3g} successful requests/s; failed attempts already take capacity"
        ),
    )


def token_band(
    *,
    input_price_per_mtok: float,
    output_price_per_mtok: float,
    mean_input_tokens: float,
    mean_output_tokens: float,
    error_rate: float,
    delivered_fraction: tuple[float, float],
    currency: str,
) -> CostBand:
    """Cost of a successful request on an endpoint paid per token; the band collapses."""
    p_in = _nonnegative("input_price_per_mtok", input_price_per_mtok)
    p_out = _nonnegative("output_price_per_mtok", output_price_per_mtok)
    tok_in = _nonnegative("mean_input_tokens", mean_input_tokens)
    tok_out = _nonnegative("mean_output_tokens", mean_output_tokens)
    low_f, high_f = _fractions(delivered_fraction)
    attempts = expected_attempts(error_rate)
    per_request = (tok_in * p_in + tok_out * p_out) / TOKENS_PER_MTOK * attempts
    per_mtok = per_request / tok_out * TOKENS_PER_MTOK if tok_out > 0 else None
    return CostBand(
        basis="tokens",
        currency=currency,
        per_request_low=per_request,
        per_request_high=per_request,
        per_mtok_output_low=per_mtok,
        per_mtok_output_high=per_mtok,
        delivered_fraction=(low_f, high_f),
        expected_attempts=attempts,
        collapsed=True,
        note=(
            f"token prices {p_in:g}/{p_out:g} {currency} per million in/out tokens, "
            f"{attempts:.4g} attempts per success; the cost per request does not depend on "
            "the delivered fraction, so the band collapses to one figure"
        ),
    )
