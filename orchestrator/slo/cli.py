"""`rollbench slo ...` and `rollbench rank`: SLO profiles, a point's verdict, and rankings.

Each command opens the configured store (orchestrator.cliutil.store), calls a service and
prints a rich table. Every table that depends on quality says what it knows about it
("quality: not measured ..."): a ranking without a quality gate must not read as one with.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from orchestrator.auth.models import Role
from orchestrator.auth.service import Principal
from orchestrator.cliutil import console, fail, store
from orchestrator.cost.bands import CostBand
from orchestrator.cost.service import PointCost, cost_of
from orchestrator.errors import ServiceError
from orchestrator.slo.admissibility import limit_label
from orchestrator.slo.ranking import rank as rank_systems
from orchestrator.slo.schemas import LATENCY_LIMITS, SloLimits, ranking_public
from orchestrator.slo.service import get_profile, limits_of, list_profiles, point_admissibility

slo_app = typer.Typer(
    help="SLO profiles: list, show, admissibility of points.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# The CLI is an operator at the machine: it reads every point.
_CLI_PRINCIPAL = Principal(token_id=0, organisation_id=0, organisation="cli", role=Role.OPERATOR)


def _limit_cells(limits: SloLimits) -> list[str]:
    cells = []
    for name in LATENCY_LIMITS:
        bound = getattr(limits, name)
        cells.append("—" if bound is None else f"{limit_label(name, bound)} ≤ {bound.max:g} ms")
    cells.append("—" if limits.error_rate is None else f"≤ {limits.error_rate * 100:g} %")
    return cells


def _limits_text(limits: SloLimits) -> str:
    parts = [c for c in _limit_cells(limits)[:-1] if c != "—"]
    if limits.error_rate is not None:
        parts.append(f"error rate ≤ {limits.error_rate * 100:g} %")
    return ", ".join(parts)


def _money(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.4g}" if value < 1 else f"{value:,.2f}"


def _band(band: CostBand, low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "—"
    if band.collapsed:
        return f"{_money(low)} {band.currency}"
    return f"{_money(low)}–{_money(high)} {band.currency}"


def _per_k(value: float | None) -> float | None:
    return None if value is None else value * 1000


def _cost_cells(cost: PointCost | None) -> tuple[str, str]:
    """Cost per thousand requests (per-request figures are too small to read) and per Mtok."""
    if cost is None or not cost.bands:
        return "—", "—"
    band = cost.bands[0]
    return (
        _band(band, _per_k(band.per_request_low), _per_k(band.per_request_high)),
        _band(band, band.per_mtok_output_low, band.per_mtok_output_high),
    )


@slo_app.command("list")
def slo_list() -> None:
    """List the SLO profiles (the configs/slo files and those added over the API)."""
    try:
        with store() as session:
            rows = [(p, limits_of(p)) for p in list_profiles(session)]
    except ServiceError as exc:
        fail(exc.message)
    table = Table(title="SLO profiles", title_justify="left")
    for name in ("name", "TTFT", "TPOT", "latency", "error rate", "source", "description"):
        table.add_column(name, no_wrap=name != "description")
    for profile, limits in rows:
        table.add_row(profile.name, *_limit_cells(limits), profile.source, profile.description)
    console().print(table)


@slo_app.command("show")
def slo_show(name: Annotated[str, typer.Argument(help="profile name, e.g. interactive")]) -> None:
    """Show one SLO profile: each limit with its percentile."""
    try:
        with store() as session:
            profile = get_profile(session, name=name)
            limits = limits_of(profile)
    except ServiceError as exc:
        fail(f"{exc.message}; `rollbench slo list` shows the profiles")
    table = Table(title=f"SLO {profile.name}", title_justify="left")
    table.add_column("limit")
    table.add_column("at most", justify="right")
    for limit in LATENCY_LIMITS:
        bound = getattr(limits, limit)
        if bound is not None:
            table.add_row(limit_label(limit, bound), f"{bound.max:g} ms")
    if limits.error_rate is not None:
        table.add_row("error rate", f"{limits.error_rate * 100:g} %")
    out = console()
    if profile.description:
        out.print(profile.description)
    out.print(table)
    out.print(f"source: {profile.source}; a point passes a limit when measured ≤ limit")


@slo_app.command("check")
def slo_check(
    point_id: Annotated[int, typer.Argument(help="point id", min=1, max=2**31 - 1)],
    slo: Annotated[str | None, typer.Option("--slo", help="profile (default: programme's)")] = None,
) -> None:
    """Is a point admissible under an SLO? Each limit with the measured figure, and its cost."""
    try:
        with store() as session:
            point, profile, verdict, note = point_admissibility(
                session, principal=_CLI_PRINCIPAL, point_id=point_id, slo_name=slo
            )
            cost = cost_of(session, point=point, slo=profile.name, verdict=verdict)
    except ServiceError as exc:
        fail(exc.message)
    word = "ADMISSIBLE" if verdict.admissible else "NOT admissible"
    table = Table(
        title=f"point {point_id} (concurrency {point.concurrency}) under {profile.name}: {word}",
        title_justify="left",
    )
    table.add_column("limit")
    table.add_column("verdict")
    table.add_column("reason")
    for r in verdict.reasons:
        shown = {True: "pass", False: "FAIL", None: "not measured"}[r.passed]
        if r.limit == "quality" and r.passed is None:
            shown = "no gate"
        table.add_row(r.limit, shown, r.message)
    out = console()
    out.print(table)
    out.print(note)
    for band in cost.bands:
        out.print(
            f"cost ({band.basis}): {_band(band, band.per_request_low, band.per_request_high)} "
            f"per request, {_band(band, band.per_mtok_output_low, band.per_mtok_output_high)} "
            f"per million output tokens — {band.note}"
        )
    if cost.reason:
        out.print(cost.reason)


def rank(
    workload: Annotated[str, typer.Argument(help="workload name, e.g. synthetic-chat")],
    slo: Annotated[
        str | None, typer.Option("--slo", help="SLO profile (default: the programme's)")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print the ranking as JSON (the API's shape)")
    ] = False,
) -> None:
    """Rank systems on WORKLOAD by admissible throughput: the most QPS within the SLO."""
    try:
        with store() as session:
            ranking = rank_systems(session, workload_name=workload, slo_name=slo)
    except ServiceError as exc:
        fail(exc.message)
    if as_json:
        print(ranking_public(ranking).model_dump_json(indent=2))
        return
    table = Table(
        title=(
            f"{ranking.workload} v{ranking.workload_version} at SLO {ranking.slo} "
            f"({_limits_text(ranking.limits)})"
        ),
        title_justify="left",
    )
    for name in (
        "#",
        "system",
        "admissible QPS",
        "at conc.",
        "admissible TPS",
        "at conc.",
        "points ok/all",
        "cost / 1k req",
        "cost / M out tok",
        "point",
    ):
        table.add_column(name, justify="left" if name in ("system", "#") else "right")
    place = 0
    for row in ranking.rows:
        if row.admissible_points:
            place += 1
            per_request, per_mtok = _cost_cells(row.cost)
            table.add_row(
                str(place),
                row.system,
                f"{row.best_qps:,.2f}" if row.best_qps is not None else "—",
                str(row.best_qps_concurrency or "—"),
                f"{row.best_tps:,.0f}" if row.best_tps is not None else "—",
                str(row.best_tps_concurrency or "—"),
                f"{row.admissible_points}/{row.points}",
                per_request,
                per_mtok,
                str(row.best_qps_point_id or "—"),
            )
        else:
            # the reason is printed in full under the table
            table.add_row("—", row.system, "none", "", "", "", f"0/{row.points}", "", "", "—")
    out = console()
    if not ranking.rows:
        out.print(
            f"no accepted points on {ranking.workload} v{ranking.workload_version} yet: "
            "nothing to rank"
        )
    else:
        out.print(table)
        for row in ranking.rows:
            if not row.admissible_points:
                out.print(f"{row.system}: no admissible point — {row.reason}")
            elif row.cost is not None and row.cost.reason:
                out.print(f"{row.system}: {row.cost.reason}")
        fractions = {b.delivered_fraction for r in ranking.rows if r.cost for b in r.cost.bands}
        if fractions:
            low, high = sorted(fractions)[0]
            out.print(
                f"cost at the best-QPS point, per thousand successful requests with retries, over "
                f"{low:g}–{high:g} of measured throughput"
            )
    out.print(ranking.quality_note)
