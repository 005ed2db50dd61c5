"""`rollbench frontier show|history`: a system's curve on a workload, and its versions.

`show` prints the version's points (with, under `--slo`, whether each is admissible and
why not) and below them the step function as a terminal plot — only measured corners and
horizontal/vertical steps. Frontiers are published results: the CLI reads every one.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from orchestrator.cliutil import console, fail, num, store
from orchestrator.errors import ServiceError
from orchestrator.frontier import pareto, plot, service
from orchestrator.frontier.curves import figures
from orchestrator.frontier.service import FrontierView, MemberStatus
from orchestrator.slo.admissibility import Admissibility

__all__ = ["frontier_app"]

frontier_app = typer.Typer(
    help="Frontiers: show a curve and its versions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

_AXES_HELP = "one of: " + ", ".join(sorted(pareto.AXES))


@frontier_app.callback()
def _group() -> None:
    """Frontiers: show a curve and its versions."""


def _status(m: MemberStatus) -> str:
    if not m.measured:
        return "not placed (figure missing)"
    if m.on_frontier:
        return "on frontier"
    return "dominated by " + ", ".join(f"#{i}" for i in m.dominated_by)


def _verdict(a: Admissibility) -> str:
    if a.admissible:
        return "yes"
    return "no: " + "; ".join(r.message for r in a.failures)


def _table(view: FrontierView, verdicts: dict[int, Admissibility] | None) -> Table:
    row = view.version
    title = (
        f"{view.system.name} on {view.workload.name} v{view.workload.version} — frontier "
        f"version {row.version} ({row.created_at:%Y-%m-%d %H:%M} UTC, by {row.actor or '—'})"
    )
    table = Table(title=title)
    for name in ("point", "conc.", "TPS", "per-user TPS", "QPS", "TTFT p99 ms", "TPOT p90 ms"):
        table.add_column(name, justify="right")
    table.add_column("errors", justify="right")
    table.add_column(f"on {view.x.name} × {view.y.name}")
    table.add_column("state")
    if verdicts is not None:
        table.add_column("admissible")
    for m in view.members:
        figs = figures(m.point)
        assert m.point.id is not None
        error_rate = figs.get("error_rate")
        state = m.point.state.value + (" (baseline)" if m.point.id in view.baseline else "")
        cells = [
            f"#{m.point.id}",
            str(m.point.concurrency),
            num(figs.get("tps")),
            num(figs.get("tps_per_user_v1"), 2),
            num(figs.get("qps"), 2),
            num(figs.get("ttft_p99_ms")),
            num(figs.get("tpot_p90_ms"), 2),
            "—" if not isinstance(error_rate, int | float) else f"{error_rate * 100:.2f} %",
            _status(m),
            state,
        ]
        if verdicts is not None:
            cells.append(_verdict(verdicts[m.point.id]))
        table.add_row(*cells)
    return table


@frontier_app.command("show")
def show(
    system: Annotated[str, typer.Argument(help="system name, organisation/name, or id")],
    workload: Annotated[str, typer.Argument(help="workload name")],
    slo: Annotated[str | None, typer.Option(help="annotate admissibility under this SLO")] = None,
    version: Annotated[int | None, typer.Option(min=1, help="frontier version")] = None,
    x: Annotated[str, typer.Option(help=_AXES_HELP)] = pareto.DEFAULT_X,
    y: Annotated[str, typer.Option(help=_AXES_HELP)] = pareto.DEFAULT_Y,
    workload_version: Annotated[
        int | None, typer.Option(min=1, help="default: the newest with a frontier")
    ] = None,
) -> None:
    """The points of a frontier version and its step function as a terminal plot."""
    out = console()
    try:
        with store() as session:
            found = service.find_system(session, ref=system)
            assert found.id is not None
            view = service.view(
                session,
                system_id=found.id,
                workload_name=workload,
                workload_version=workload_version,
                version=version,
                x=x,
                y=y,
            )
            verdicts, note, profile = None, "", ""
            if slo is not None:
                profile, note, verdicts = service.admissibility(session, view=view, slo_name=slo)
    except ServiceError as exc:
        fail(exc.message if exc.field is None else f"{exc.field}: {exc.message}")
    except pareto.UnknownAxis as exc:
        fail(f"--{exc.field}: {exc}")
    out.print(_table(view, verdicts))
    if slo is not None:
        out.print(f"SLO {profile}; {note}")
    if view.not_measured:
        shown = ", ".join(f"#{i}" for i in view.not_measured)
        out.print(f"not placed on {view.x.name} × {view.y.name} (figure missing): {shown}")
    kind = "measured curve" if pareto.is_step_view(view.x, view.y) else "Pareto frontier"
    out.print(f"\n{kind}: {view.y.label} against {view.x.label}", highlight=False)
    out.print(plot.render(view.steps), highlight=False, markup=False)


@frontier_app.command("history")
def history(
    system: Annotated[str, typer.Argument(help="system name, organisation/name, or id")],
    workload: Annotated[str, typer.Argument(help="workload name")],
    workload_version: Annotated[
        int | None, typer.Option(min=1, help="default: the newest with a frontier")
    ] = None,
) -> None:
    """Every version of a frontier: what each change added, superseded and dominated."""
    out = console()
    try:
        with store() as session:
            found = service.find_system(session, ref=system)
            assert found.id is not None
            sys_row, w, rows = service.versions(
                session,
                system_id=found.id,
                workload_name=workload,
                workload_version=workload_version,
            )
    except ServiceError as exc:
        fail(exc.message if exc.field is None else f"{exc.field}: {exc.message}")
    if not rows:
        fail(f"system {sys_row.name} has no frontier on workload {w.name} v{w.version} yet")
    table = Table(title=f"{sys_row.name} on {w.name} v{w.version} — frontier versions")
    for name in ("version", "created (UTC)", "actor", "submission"):
        table.add_column(name)
    for name in ("added", "superseded", "dominated", "members", "on frontier"):
        table.add_column(name)

    def ids(values: list[int]) -> str:
        return ", ".join(f"#{i}" for i in values) or "—"

    for r in rows:
        table.add_row(
            str(r.version),
            f"{r.created_at:%Y-%m-%d %H:%M:%S}",
            r.actor or "—",
            "—" if r.submission_id is None else f"#{r.submission_id}",
            ids(r.added),
            ids(r.superseded),
            ids(r.dominated),
            str(len(r.members)),
            ids(r.pareto),
        )
    out.print(table)
