"""`rollbench review list|show|accept|reject|check`: the operators' review queue at the machine.

The CLI acts as an operator (actor `cli`, `LocalOperator`): it reads every submission and
decides like an operator token would, through the same service, so the same rules hold —
blocking findings, the update window, a comment to reject — and every decision is audited
and written to the submission's thread. Mistakes end in one line on stderr and exit status 2.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, NoReturn

import typer
from rich.table import Table

from orchestrator.cliutil import ACTOR, console, fail, num, store
from orchestrator.db import MAX_ID
from orchestrator.errors import ServiceError
from orchestrator.review.access import LocalOperator
from orchestrator.review.decisions import PointDecision, accept_all, decide, reject_all
from orchestrator.review.entry import recheck
from orchestrator.review.service import ReviewView, get_review, queue
from orchestrator.submissions.schemas import summarise

__all__ = ["review_app"]

review_app = typer.Typer(
    help="The review queue: list, show, accept, reject.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

OPERATOR = LocalOperator(actor=ACTOR)


@review_app.callback()
def _group() -> None:
    """The review queue: list, show, accept, reject."""


def _when(moment: datetime | None) -> str:
    if moment is None:
        return "—"
    if moment.tzinfo is None:  # SQLite keeps no zone; rollbench writes UTC
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%MZ")


def _fail(exc: ServiceError) -> NoReturn:
    fail(f"{exc.field}: {exc.message}" if exc.field else exc.message)


SubmissionId = Annotated[int, typer.Argument(metavar="SUBMISSION_ID", min=1, max=MAX_ID)]
PointIds = Annotated[
    list[int] | None,
    typer.Option("--point", min=1, max=MAX_ID, help="a point to decide (repeatable)"),
]


@review_app.command("list")
def review_list(
    limit: Annotated[int, typer.Option(min=1, max=500, help="at most this many")] = 50,
) -> None:
    """Submissions waiting for a decision, the longest waiting first."""
    try:
        with store() as session:
            items, total = queue(session, principal=OPERATOR, limit=limit)
    except ServiceError as exc:
        _fail(exc)
    table = Table(title=f"review queue: {total} submission(s) waiting", title_justify="left")
    for name in ("submission", "system", "workload", "points", "undecided", "blocking"):
        table.add_column(name, justify="left" if name in ("system", "workload") else "right")
    table.add_column("warnings", justify="right")
    table.add_column("waiting since")
    for item in items:
        table.add_row(
            str(item.submission.id),
            item.system,
            item.workload,
            str(item.points),
            str(item.undecided),
            str(item.blocking),
            str(item.warnings),
            _when(item.waiting_since),
        )
    console().print(table)


def _findings_table(findings: list[dict[str, Any]]) -> Table:
    table = Table(title="automated checks", title_justify="left")
    for name in ("check", "point", "severity", "passed", "message"):
        table.add_column(name, overflow="fold")
    order = sorted(findings, key=lambda f: (f.get("passed") is True, str(f.get("check"))))
    for f in order:
        passed = f.get("passed")
        table.add_row(
            str(f.get("check", "?")),
            "all" if f.get("point_id") is None else str(f.get("point_id")),
            str(f.get("severity", "?")),
            "yes" if passed is True else "NO",
            str(f.get("message", "")),
            style=None if passed else ("red" if f.get("severity") == "error" else "yellow"),
        )
    return table


def _points_table(view: ReviewView) -> Table:
    table = Table(title="points", title_justify="left")
    for name in ("point", "conc.", "QPS", "TPS", "per-user TPS", "TTFT p99 ms", "TPOT p99 ms"):
        table.add_column(name, justify="right")
    table.add_column("err %", justify="right")
    table.add_column("state")
    table.add_column("blocked by", overflow="fold")
    for p in view.points:
        m: Mapping[str, Any] = p.metrics or {}
        err = m.get("error_rate")
        table.add_row(
            str(p.id),
            str(p.concurrency),
            num(m.get("qps"), 2),
            num(m.get("tps"), 0),
            num(m.get("tps_per_user_v1")),
            num(m.get("ttft_p99_ms")),
            num(m.get("tpot_p99_ms"), 2),
            num(100 * err, 2) if isinstance(err, int | float) else "—",
            str(p.state) + (f" ({p.review_comment})" if p.review_comment else ""),
            ", ".join(view.blocking_by_point.get(p.id or 0, [])) or "—",
        )
    return table


@review_app.command("show")
def review_show(submission_id: SubmissionId) -> None:
    """A submission's findings, points (figures and state) and review thread."""
    try:
        with store() as session:
            view = get_review(session, principal=OPERATOR, submission_id=submission_id)
    except ServiceError as exc:
        _fail(exc)
    sub = view.submission
    out = console()
    counts = summarise(view.findings)
    out.print(
        f"[bold]submission {sub.id}[/]: {sub.state}, publication {sub.publication}, "
        f"source {sub.source}; checked {_when(sub.checked_at)}, decided {_when(sub.decided_at)}; "
        f"{counts['blocking']} blocking finding(s), {counts['warnings']} warning(s)"
    )
    if view.findings:
        out.print(_findings_table(view.findings))
    else:
        out.print("no findings stored (the checker has not run)")
    out.print(_points_table(view))
    out.print(
        "times in ms; per-user TPS = 1000 / TPOT p90 (v1.0 rules); a figure shown — was not "
        "measured"
    )
    curve = view.frontier
    out.print(
        f"frontier: version {curve.version}, {len(curve.members)} point(s), "
        f"pareto {', '.join(map(str, curve.pareto)) or '—'}"
        if curve
        else "frontier: none yet (accepting creates version 1)"
    )
    if not view.window_open:
        out.print(f"update window closed: {view.window_message}", style="yellow")
    out.print("[bold]thread[/]" if view.thread else "thread: empty")
    for entry in view.thread:
        about = f" on point {entry.point_id}" if entry.point_id else ""
        out.print(
            f"  {_when(entry.at)}  {entry.actor}  {entry.action}{about}: {entry.comment or '—'}"
        )


def _decide(submission_id: int, verdict: str, points: list[int] | None, comment: str) -> None:
    try:
        with store() as session:
            if points:
                decisions = [PointDecision(p, verdict, "") for p in points]
                sub = decide(
                    session,
                    principal=OPERATOR,
                    submission_id=submission_id,
                    decisions=decisions,
                    comment=comment,
                )
            elif verdict == "accept":
                sub = accept_all(
                    session, principal=OPERATOR, submission_id=submission_id, comment=comment
                )
            else:
                sub = reject_all(
                    session, principal=OPERATOR, submission_id=submission_id, comment=comment
                )
            state = sub.state
    except ServiceError as exc:
        _fail(exc)
    which = ", ".join(map(str, points)) if points else "every candidate point"
    print(f"submission {submission_id}: {verdict}ed {which}; the submission is {state}")


@review_app.command("accept")
def review_accept(
    submission_id: SubmissionId,
    point: PointIds = None,
    comment: Annotated[str, typer.Option("--comment", help="why (kept in the thread)")] = "",
) -> None:
    """Accept points (no --point: every candidate); blocked points refuse the whole call."""
    _decide(submission_id, "accept", point, comment)


@review_app.command("reject")
def review_reject(
    submission_id: SubmissionId,
    comment: Annotated[str, typer.Option("--comment", help="why (required)")],
    point: PointIds = None,
) -> None:
    """Reject points (no --point: every candidate), saying why."""
    _decide(submission_id, "reject", point, comment)


@review_app.command("check")
def review_check(submission_id: SubmissionId) -> None:
    """Run the automated checks again (after the programme's rules changed, say)."""
    try:
        with store() as session:
            sub = recheck(session, principal=OPERATOR, submission_id=submission_id)
            counts = summarise(sub.findings or [])
    except ServiceError as exc:
        _fail(exc)
    print(
        f"submission {submission_id}: checked again; {counts['blocking']} blocking finding(s), "
        f"{counts['warnings']} warning(s); `rollbench review show {submission_id}` lists them"
    )
