"""`rollbench import ...` and `rollbench export ...`: MLPerf Endpoints files in and out.

Each command opens the configured store, calls orchestrator/interop in one transaction and
prints a table. A malformed file ends in one line naming the file and the field, exit 2,
with nothing imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.table import Table
from sqlmodel import Session, select

from orchestrator.audit.service import record
from orchestrator.auth.models import Organisation
from orchestrator.auth.service import AuthError, create_organisation
from orchestrator.cliutil import ACTOR, console, fail, num, store
from orchestrator.errors import NotFound, ServiceError
from orchestrator.interop.export import write_frontier_v1, write_point_v1
from orchestrator.interop.export_v07 import write_point_v07
from orchestrator.interop.importer import import_mlperf
from orchestrator.runs.models import Point
from orchestrator.systems.models import System
from orchestrator.systems.schemas import SystemCreate
from orchestrator.workloads.models import Workload
from orchestrator.workloads.service import resolve, sync_workloads

__all__ = ["export_app", "import_app"]

import_app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Import results measured elsewhere (MLPerf) as baseline points.",
)
export_app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Export points and frontiers in MLPerf Endpoints formats.",
)


@import_app.callback()
def _import_group() -> None:
    """Import results measured elsewhere (MLPerf) as baseline points."""


@export_app.callback()
def _export_group() -> None:
    """Export points and frontiers in MLPerf Endpoints formats."""


def _workload(session: Session, name: str) -> Workload:
    try:
        return resolve(session, name=name)
    except NotFound:
        sync_workloads(session)  # a fresh store: load configs/workloads first
        return resolve(session, name=name)


def _organisation(session: Session, name: str, *, create: bool) -> Organisation | None:
    org = session.exec(select(Organisation).where(Organisation.name == name)).first()
    if org is None and create:
        org = create_organisation(session, name=name, actor=ACTOR)
    return org


def _system(session: Session, name: str, org_name: str | None, *, create: bool) -> System:
    query = select(System).where(System.name == name)
    if org_name is not None:
        org = _organisation(session, org_name, create=create)
        if org is None:
            fail(f"no organisation {org_name!r}")
        query = query.where(System.organisation_id == org.id)
    else:
        org = None
    rows = list(session.exec(query).all())
    if len(rows) > 1:
        fail(f"several organisations have a system {name!r}: give --org")
    if rows:
        return rows[0]
    if org is None or not create:
        hint = "; give --org ORG to create it" if create else ""
        fail(f"no system {name!r}" + (f" in organisation {org_name!r}" if org_name else "") + hint)
    try:
        data = SystemCreate(name=name)
    except ValidationError as exc:
        fail(f"--system: {exc.errors()[0]['msg']}")
    system = System.model_validate(
        data.model_dump(exclude={"organisation"}), update={"organisation_id": org.id}
    )
    session.add(system)
    session.flush()
    assert system.id is not None
    record(
        session,
        actor=ACTOR,
        organisation_id=system.organisation_id,
        object_type="system",
        object_id=system.id,
        action="create",
        reason="created by rollbench import mlperf",
    )
    return system


@import_app.command("mlperf")
def import_mlperf_command(
    path: Annotated[
        Path, typer.Argument(help="run folder, folder of run folders, or a run_metadata.json")
    ],
    system: Annotated[
        str,
        typer.Option("--system", help="system name (existing, or with --org created if missing)"),
    ],
    workload: Annotated[str, typer.Option("--workload", help="workload name (configs/workloads)")],
    org: Annotated[str | None, typer.Option("--org", help="organisation of the system")] = None,
) -> None:
    """Import MLCommons reference-client run folders or v0.7 run_metadata.json files."""
    with store() as session:
        try:
            wl = _workload(session, workload)
            sys_row = _system(session, system, org, create=True)
            result = import_mlperf(session, path=path, system=sys_row, workload=wl, actor=ACTOR)
        except (ServiceError, AuthError) as exc:
            fail(exc.message if isinstance(exc, ServiceError) else str(exc))
        rows = [(p.id, p.concurrency, dict(p.metrics)) for p in result.points]
        sub_id = result.submission.id
        version = result.frontier.version if result.frontier is not None else None
        pareto = set(result.frontier.pareto) if result.frontier is not None else set()
        names = (sys_row.name, f"{wl.name} v{wl.version}")
    table = Table(title=f"imported into {names[0]} · {names[1]} (submission {sub_id})")
    for column in (
        "point",
        "concurrency",
        "QPS",
        "TPS",
        "TTFT p99 ms",
        "TPOT p90 ms",
        "error rate",
        "pareto",
    ):
        table.add_column(column, justify="right")
    for point_id, concurrency, m in rows:
        error_rate = m.get("error_rate")
        table.add_row(
            str(point_id),
            str(concurrency),
            num(m.get("qps"), 2),
            num(m.get("tps")),
            num(m.get("ttft_p99_ms"), 2),
            num(m.get("tpot_p90_ms"), 3),
            "not measured" if error_rate is None else f"{error_rate:.2%}",
            "yes" if point_id in pareto else "",
        )
    out = console()
    out.print(table)
    out.print(f"frontier version {version}" if version is not None else "frontier unchanged")


@export_app.command("point")
def export_point(
    point_id: Annotated[int, typer.Argument(min=1, help="point id")],
    out: Annotated[Path, typer.Option("--out", help="directory to write into")],
    format: Annotated[
        str, typer.Option("--format", help="v1 (bundle) or v07 (run_metadata.json)")
    ] = "v1",
) -> None:
    """Export one point: a v1.0 bundle, or a v0.7 run_metadata.json."""
    if format not in ("v1", "v07"):
        fail(f"--format: {format!r} is not v1 or v07")
    with store() as session:
        point = session.get(Point, point_id)
        if point is None:
            fail(f"no point {point_id}")
        try:
            if format == "v07":
                where = write_point_v07(session, point=point, out=out)
            else:
                where = write_point_v1(session, point=point, out=out)
        except ServiceError as exc:
            fail(exc.message)
        except OSError as exc:
            fail(f"{out}: cannot write: {exc}")
    print(where)
    if format == "v1":
        print(f"check it with: endpoints-submission-cli check-submission {where}")


@export_app.command("frontier")
def export_frontier(
    system: Annotated[str, typer.Argument(help="system name")],
    workload: Annotated[str, typer.Argument(help="workload name")],
    out: Annotated[Path, typer.Option("--out", help="directory to write into")],
    version: Annotated[
        int | None, typer.Option("--version", min=1, help="frontier version")
    ] = None,
    org: Annotated[str | None, typer.Option("--org", help="organisation of the system")] = None,
) -> None:
    """Export every point of a frontier version as one v1.0 bundle."""
    with store() as session:
        try:
            wl = _workload(session, workload)
            sys_row = _system(session, system, org, create=False)
            where, written = write_frontier_v1(
                session, system=sys_row, workload=wl, out=out, version=version
            )
        except ServiceError as exc:
            fail(exc.message)
        except OSError as exc:
            fail(f"{out}: cannot write: {exc}")
    print(f"frontier version {written}: {where}")
    print(f"check it with: endpoints-submission-cli check-submission {where}")
