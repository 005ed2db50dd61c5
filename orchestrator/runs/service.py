"""Measuring a submission, one run at a time, safely over days.

The store is the checkpoint. A worker *claims* the next run of a submission with one
conditional UPDATE (planned, or running with an expired lease), measures it while renewing
its lease, and writes the result; then the next run is claimed, by whichever worker gets the
nudge. A worker killed mid-run leaves a lease that runs out: the run is claimed again and
measured from scratch — its partial measurement is never counted. Two deliveries of the
same nudge cannot both claim a run. Cancellation is a flag in the store, read while
measuring, so it works on every broker.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import or_, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import aliased
from sqlmodel import Session, col, select

from orchestrator.audit.service import record
from orchestrator.config import get_settings
from orchestrator.db import session_scope, utcnow
from orchestrator.endpoints.models import ApiFlavour, Endpoint
from orchestrator.endpoints.service import unsealed
from orchestrator.loadgen.pool import HarnessError
from orchestrator.loadgen.spec import DatasetSpec, EndpointSpec, SweepSpec, SyntheticSpec
from orchestrator.loadgen.sweep import LevelResult, run_sweep
from orchestrator.review.entry import enter_review
from orchestrator.runs.metrics import point_metrics
from orchestrator.runs.models import Point, Run, RunKind, RunState
from orchestrator.submissions.models import Submission, SubmissionSource, SubmissionState
from orchestrator.workloads.models import Workload
from orchestrator.workloads.service import PROJECT_ROOT

log = logging.getLogger("rollbench.runs")

MAX_ATTEMPTS = 3  # a run whose worker failed this often fails its submission (retryable)


def lease() -> timedelta:
    return timedelta(seconds=get_settings().run_lease_s)


def claim_next_run(session: Session, *, submission_id: int, owner: str) -> Run | None:
    """Claim the submission's next run for `owner`, or None if nothing is claimable."""
    now = utcnow()
    candidates = session.exec(
        select(Run)
        .where(Run.submission_id == submission_id)
        .where(col(Run.state).in_([RunState.PLANNED, RunState.RUNNING]))
        .order_by(col(Run.position))
    ).all()
    submission = session.get(Submission, submission_id)
    measurable = (SubmissionState.QUEUED, SubmissionState.RUNNING)
    if submission is None or submission.cancel_requested or submission.state not in measurable:
        return None
    # The start window: not before `not_before` (the scheduler nudges again until then);
    # a sweep that has not started by `not_after` fails instead of starting late.
    if submission.not_before is not None and now < _aware(submission.not_before):
        return None
    if (
        submission.not_after is not None
        and now > _aware(submission.not_after)
        and submission.state is SubmissionState.QUEUED
    ):
        _transition(
            session,
            submission,
            SubmissionState.FAILED,
            "the start window closed before a worker was free",
        )
        session.commit()
        return None
    for run in candidates:
        if (
            run.state is RunState.RUNNING
            and run.lease_until is not None
            and (_aware(run.lease_until) > now)
        ):
            return None  # someone is measuring this submission: runs go in order
        # One run at a time per endpoint, whoever's submission it is. PostgreSQL: lock the
        # endpoint row so concurrent claims on it queue up; SQLite serialises writers and
        # the NOT EXISTS below is checked inside the same UPDATE.
        session.exec(
            select(Endpoint).where(Endpoint.id == submission.endpoint_id).with_for_update()
        ).first()
        other = aliased(Run)
        busy = (
            select(other.id)
            .join(Submission, col(Submission.id) == other.submission_id)
            .where(
                col(Submission.endpoint_id) == submission.endpoint_id,
                col(other.state) == RunState.RUNNING,
                col(other.lease_until) > now,
                col(other.id) != run.id,
            )
            .exists()
        )
        claimed = session.execute(
            update(Run)
            .where(col(Run.id) == run.id)
            .where(
                or_(
                    col(Run.state) == RunState.PLANNED,
                    (col(Run.state) == RunState.RUNNING) & (col(Run.lease_until) < now),
                )
            )
            .where(~busy)
            .values(
                state=RunState.RUNNING,
                lease_owner=owner,
                lease_until=now + lease(),
                attempts=Run.attempts + 1,
                started_at=now,
                progress={},
                error=None,
            )
            .execution_options(synchronize_session=False)
        )
        session.commit()
        if claimed.rowcount == 1:  # type: ignore[attr-defined]
            session.refresh(run)
            return run
        return None
    return None


def _aware(ts: Any) -> Any:
    # SQLite returns naive datetimes for timezone-aware columns; they were written in UTC.
    from datetime import UTC

    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


@dataclass
class _Keeper:
    """Reporter for the sweep: renews the lease, writes progress, watches for cancel."""

    engine: Engine
    run_id: int
    submission_id: int
    owner: str
    last_write: float = 0.0
    cancelled: bool = False
    lost_lease: bool = False

    def level_started(self, index: int, total: int, label: str) -> None:
        self._write({"issued": 0, "completed": 0, "failed": 0, "level": label})

    def progress(self, issued: int, completed: int, failed: int) -> None:
        if time.monotonic() - self.last_write >= 1.0:
            self._write({"issued": issued, "completed": completed, "failed": failed})

    def level_finished(self, result: LevelResult) -> None:
        row = result.row()
        self._write(
            {
                "issued": row["issued"],
                "completed": row["issued"],
                "failed": row["failed"],
                "level": result.label,
            }
        )

    def stop_requested(self) -> bool:
        return self.cancelled or self.lost_lease

    def _write(self, progress: dict[str, Any]) -> None:
        self.last_write = time.monotonic()
        with session_scope(self.engine) as session:
            now = utcnow()
            renewed = session.execute(
                update(Run)
                .where(col(Run.id) == self.run_id, col(Run.lease_owner) == self.owner)
                .values(lease_until=now + lease(), progress=progress)
                .execution_options(synchronize_session=False)
            )
            if renewed.rowcount != 1:  # type: ignore[attr-defined]
                self.lost_lease = True
            sub = session.get(Submission, self.submission_id)
            self.cancelled = sub is None or sub.cancel_requested


def spec_for(
    submission: Submission, endpoint: Endpoint, workload: Workload, level: float
) -> SweepSpec:
    definition = workload.definition
    dataset = definition["dataset"]
    gen = definition.get("generation", {})
    creds = unsealed(endpoint)
    headers = creds.get("headers") or {}
    assert isinstance(headers, dict)
    return SweepSpec(
        endpoint=EndpointSpec(
            url=endpoint.base_url,
            model=endpoint.served_model,
            api="chat" if endpoint.api is ApiFlavour.OPENAI_CHAT else "completions",
            api_key=creds.get("api_key"),
            headers={str(k): str(v) for k, v in headers.items()},
            verify_tls=endpoint.verify_tls,
        ),
        dataset=DatasetSpec(
            synthetic=SyntheticSpec(**dataset["synthetic"]) if dataset.get("synthetic") else None,
            path=(PROJECT_ROOT / dataset["path"]) if dataset.get("path") else None,
            max_tokens=gen.get("max_tokens"),
            temperature=gen.get("temperature"),
            seed=gen.get("seed"),
            system=gen.get("system"),
        ),
        pattern=submission.pattern,
        levels=[level],
        requests=submission.requests,
        min_duration_s=submission.min_duration_s,
        warmup=submission.warmup,
    )


def measure(engine: Engine, *, run_id: int, owner: str) -> RunState:
    """Measure a claimed run; record the outcome; return the run's new state."""
    with session_scope(engine) as session:
        run = session.get(Run, run_id)
        assert run is not None
        submission = session.get(Submission, run.submission_id)
        assert submission is not None and submission.id is not None
        endpoint = session.get(Endpoint, submission.endpoint_id)
        workload = session.get(Workload, submission.workload_id)
        assert endpoint is not None and workload is not None
        if submission.state is SubmissionState.QUEUED:
            _transition(session, submission, SubmissionState.RUNNING, "measuring")
        spec = spec_for(submission, endpoint, workload, run.level)
        attempt, level, submission_id = run.attempts, run.level, submission.id
    out = (
        get_settings().resolved_artifacts_dir()
        / f"submission-{submission_id}"
        / (f"run-{run_id}-attempt-{attempt}")
    )
    keeper = _Keeper(engine, run_id, submission_id, owner)
    try:
        result = run_sweep(spec, out, reporter=keeper, stop_requested=keeper.stop_requested)
    except (HarnessError, OSError, ValueError) as exc:
        return _failed(engine, run_id, owner, f"{type(exc).__name__}: {exc}")
    if keeper.lost_lease:
        return RunState.RUNNING  # another worker owns it now; nothing of ours counts
    with session_scope(engine) as session:
        run = session.get(Run, run_id)
        assert run is not None
        if keeper.cancelled or not result.levels or result.interrupted:
            run.state = RunState.CANCELLED
            run.finished_at = utcnow()
            run.lease_owner = run.lease_until = None
            session.add(run)
            shutil.rmtree(out, ignore_errors=True)  # a partial level is not a result
            return RunState.CANCELLED
        level_result = result.levels[0]
        records = level_result.folder / "records.npz"
        run.summary = {
            "row": level_result.row(),
            "result_summary_path": str(level_result.folder / "performance" / "result_summary.json"),
        }
        run.artifact_path = str(records)
        run.artifact_sha256 = hashlib.sha256(records.read_bytes()).hexdigest()
        run.state = RunState.FINISHED
        run.finished_at = utcnow()
        run.lease_owner = run.lease_until = None
        session.add(run)
        sub = session.get(Submission, run.submission_id)
        assert sub is not None and sub.id is not None and run.id is not None
        if run.kind is RunKind.PERFORMANCE and sub.pattern == "concurrency":
            row = level_result.row()
            summary_doc = json.loads(
                (level_result.folder / "performance" / "result_summary.json").read_text()
            )
            metrics = point_metrics(summary_doc, level)
            metrics.update(valid=row["valid"], invalid_reasons=row["invalid_reasons"])
            session.add(
                Point(
                    submission_id=sub.id,
                    run_id=run.id,
                    system_id=sub.system_id,
                    workload_id=sub.workload_id,
                    concurrency=int(level),
                    metrics=metrics,
                )
            )
        record(
            session,
            actor=owner,
            organisation_id=sub.organisation_id,
            object_type="run",
            object_id=run.id,
            action="measured",
            to_state=RunState.FINISHED,
            data={"level": level, "attempt": attempt},
        )
    return RunState.FINISHED


def _failed(engine: Engine, run_id: int, owner: str, error: str) -> RunState:
    log.warning("run %s failed: %s", run_id, error)
    with session_scope(engine) as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.error = error[:4000]
        run.lease_owner = run.lease_until = None
        run.state = RunState.PLANNED if run.attempts < MAX_ATTEMPTS else RunState.FAILED
        session.add(run)
        if run.state is RunState.FAILED:
            sub = session.get(Submission, run.submission_id)
            assert sub is not None
            _transition(session, sub, SubmissionState.FAILED, error[:500])
        return run.state


def finish_if_done(engine: Engine, *, submission_id: int) -> SubmissionState:
    """Move the submission on when nothing is left to measure; return its state.

    A measured submission goes on to review at once: checked, IN_REVIEW, the operators
    notified (orchestrator.review.entry.enter_review).
    """
    with session_scope(engine) as session:
        sub = session.get(Submission, submission_id)
        assert sub is not None
        runs = session.exec(select(Run).where(Run.submission_id == submission_id)).all()
        states = {r.state for r in runs}
        if sub.cancel_requested and sub.state not in (
            SubmissionState.WITHDRAWN,
            SubmissionState.CANCELLED,
        ):
            if not states & {RunState.RUNNING}:
                for r in runs:
                    if r.state is RunState.PLANNED:
                        r.state = RunState.CANCELLED
                        session.add(r)
                _transition(session, sub, SubmissionState.CANCELLED, "cancel requested")
        elif states <= {RunState.FINISHED} and sub.state in (
            SubmissionState.QUEUED,
            SubmissionState.RUNNING,
        ):
            _transition(session, sub, SubmissionState.MEASURED, "every run measured")
            if sub.source is SubmissionSource.MEASURED:
                # In the same transaction: checked, queued for review, webhook in the outbox.
                enter_review(session, submission=sub, actor="worker")
        return sub.state


def release_leases(engine: Engine, *, owner: str) -> int:
    """A worker going down gives up its runs at once, so a restart need not wait for the
    lease to run out. The run is measured again from scratch."""
    with session_scope(engine) as session:
        released = session.execute(
            update(Run)
            .where(col(Run.lease_owner) == owner, col(Run.state) == RunState.RUNNING)
            .values(lease_owner=None, lease_until=utcnow())
            .execution_options(synchronize_session=False)
        )
        return int(released.rowcount)  # type: ignore[attr-defined]


def stranded(engine: Engine) -> list[int]:
    """Submissions with work left and nobody holding a live lease on it (recovery)."""
    now = utcnow()
    with session_scope(engine) as session:
        subs = session.exec(
            select(Submission).where(
                col(Submission.state).in_([SubmissionState.QUEUED, SubmissionState.RUNNING])
            )
        ).all()
        out = []
        for sub in subs:
            runs = session.exec(select(Run).where(Run.submission_id == sub.id)).all()
            live = any(
                r.state is RunState.RUNNING
                and r.lease_until is not None
                and _aware(r.lease_until) > now
                for r in runs
            )
            if not live and sub.id is not None:
                out.append(sub.id)
        return out


def _transition(session: Session, sub: Submission, to: SubmissionState, why: str) -> None:
    before = sub.state
    if before is to:
        return
    sub.state = to
    sub.updated_at = utcnow()
    session.add(sub)
    assert sub.id is not None
    record(
        session,
        actor="worker",
        organisation_id=sub.organisation_id,
        object_type="submission",
        object_id=sub.id,
        action="transition",
        from_state=before,
        to_state=to,
        reason=why,
    )


def remove_artifacts(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
