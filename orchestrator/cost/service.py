"""The cost of a point under an SLO: only admissible points get one, and the reason if not.

A point is priced by its system's hourly price, by its endpoint's token prices, or by both
(two bands, each in its own currency). The figures it needs come from the point's metrics;
a point without them (an older or imported point) gets no cost and says which figure is
missing. The formulas are in orchestrator.cost.bands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from orchestrator.auth.service import Principal
from orchestrator.cost.bands import CostBand, hourly_band, token_band
from orchestrator.endpoints.models import Endpoint
from orchestrator.programme import ProgrammeRules, programme
from orchestrator.runs.models import Point
from orchestrator.slo.admissibility import Admissibility, figure, measured_error_rate
from orchestrator.slo.service import point_admissibility
from orchestrator.submissions.models import Submission
from orchestrator.systems.models import System


@dataclass(frozen=True)
class Pricing:
    """What a point's system and endpoint charge; None where nothing is declared."""

    price_per_hour: float | None = None
    hourly_currency: str = "USD"
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    token_currency: str = "USD"

    @property
    def priced(self) -> bool:
        return self.price_per_hour is not None or self.has_token_prices

    @property
    def has_token_prices(self) -> bool:
        return self.input_price_per_mtok is not None or self.output_price_per_mtok is not None


@dataclass(frozen=True)
class PointCost:
    point_id: int
    slo: str
    admissible: bool
    bands: tuple[CostBand, ...]
    reason: str  # why there is no cost (or why a band is missing); "" when fully costed


def bands_for(
    metrics: Mapping[str, Any], *, pricing: Pricing, delivered_fraction: tuple[float, float]
) -> tuple[tuple[CostBand, ...], str]:
    """The cost bands of one point's figures under `pricing`, and why any is missing."""
    if not pricing.priced:
        return (), "not priced: the system has no price_per_hour and the endpoint no token prices"
    error_rate = measured_error_rate(metrics)
    if error_rate is None:
        return (), "no cost: the error rate is not measured"
    if error_rate >= 1:
        return (), "no cost: no request succeeded"
    completed = figure(metrics, "completed")
    out_tokens, in_tokens = figure(metrics, "output_tokens"), figure(metrics, "input_tokens")
    mean_out = out_tokens / completed if out_tokens is not None and completed else None
    mean_in = in_tokens / completed if in_tokens is not None and completed else None
    bands: list[CostBand] = []
    missing: list[str] = []
    if pricing.price_per_hour is not None:
        success_qps = figure(metrics, "success_qps")
        if success_qps is None:
            qps = figure(metrics, "qps")
            success_qps = qps * (1 - error_rate) if qps is not None else None
        if success_qps is None or success_qps <= 0:
            missing.append("hourly price: no successful requests per second measured")
        else:
            bands.append(
                hourly_band(
                    price_per_hour=pricing.price_per_hour,
                    success_qps=success_qps,
                    mean_output_tokens=mean_out,
                    error_rate=error_rate,
                    delivered_fraction=delivered_fraction,
                    currency=pricing.hourly_currency,
                )
            )
    if pricing.has_token_prices:
        if mean_out is None or (mean_in is None and pricing.input_price_per_mtok):
            missing.append("token prices: the point has no token counts")
        else:
            bands.append(
                token_band(
                    input_price_per_mtok=pricing.input_price_per_mtok or 0.0,
                    output_price_per_mtok=pricing.output_price_per_mtok or 0.0,
                    mean_input_tokens=mean_in or 0.0,
                    mean_output_tokens=mean_out,
                    error_rate=error_rate,
                    delivered_fraction=delivered_fraction,
                    currency=pricing.token_currency,
                )
            )
    return tuple(bands), "; ".join(missing)


def pricing_of(session: Session, *, point: Point) -> Pricing:
    system = session.get(System, point.system_id)
    submission = session.get(Submission, point.submission_id)
    endpoint = None
    if submission is not None and submission.endpoint_id is not None:
        endpoint = session.get(Endpoint, submission.endpoint_id)
    return pricing_from(system, endpoint)


def pricing_from(system: System | None, endpoint: Endpoint | None) -> Pricing:
    """What a point run on `system` through `endpoint` (None: no endpoint) charges."""
    return Pricing(
        price_per_hour=system.price_per_hour if system is not None else None,
        hourly_currency=system.currency if system is not None else "USD",
        input_price_per_mtok=endpoint.input_price_per_mtok if endpoint is not None else None,
        output_price_per_mtok=endpoint.output_price_per_mtok if endpoint is not None else None,
        token_currency=endpoint.currency if endpoint is not None else "USD",
    )


def cost_of(
    session: Session,
    *,
    point: Point,
    slo: str,
    verdict: Admissibility,
    rules: ProgrammeRules | None = None,
    pricing: Pricing | None = None,
) -> PointCost:
    """The cost of `point` given its verdict under the SLO `slo`: none if inadmissible.

    `pricing`: what the point's system and endpoint charge, when the caller loaded them
    already (default: read from the store).
    """
    assert point.id is not None
    if not verdict.admissible:
        why = "; ".join(r.message for r in verdict.failures)
        return PointCost(point.id, slo, False, (), f"no cost: outside the SLO {slo}: {why}")
    fraction = (rules or programme()).cost.delivered_fraction
    if pricing is None:
        pricing = pricing_of(session, point=point)
    bands, reason = bands_for(point.metrics, pricing=pricing, delivered_fraction=fraction)
    return PointCost(point.id, slo, True, bands, reason)


def point_cost(
    session: Session, *, principal: Principal, point_id: int, slo_name: str | None = None
) -> tuple[PointCost, str]:
    """The cost of a point `principal` may read, and the quality note to print beside it."""
    point, profile, verdict, note = point_admissibility(
        session, principal=principal, point_id=point_id, slo_name=slo_name
    )
    return cost_of(session, point=point, slo=profile.name, verdict=verdict), note
