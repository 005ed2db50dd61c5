"""Tasks: ids in, a session opened by the service, the service called. Nothing else."""

from __future__ import annotations

import logging
import os
import socket

from celery.signals import worker_ready, worker_shutting_down

from orchestrator.db import get_engine, session_scope
from orchestrator.review import webhooks
from orchestrator.runs import service
from orchestrator.runs.models import RunState
from workers.app import app

log = logging.getLogger("rollbench.workers")
OWNER = f"{socket.gethostname()}:{os.getpid()}"


@app.task(name="rollbench.measure_next")
def measure_next(submission_id: int) -> str:
    """Measure the next unmeasured run of a submission, then nudge for the one after."""
    engine = get_engine()
    with session_scope(engine) as session:
        run = service.claim_next_run(session, submission_id=submission_id, owner=OWNER)
        run_id = None if run is None else run.id
    if run_id is None:
        return str(service.finish_if_done(engine, submission_id=submission_id))
    state = service.measure(engine, run_id=run_id, owner=OWNER)
    if state in (RunState.FINISHED, RunState.CANCELLED, RunState.PLANNED):
        measure_next.delay(submission_id)
    else:
        service.finish_if_done(engine, submission_id=submission_id)
    return str(state)


@app.task(name="rollbench.recover")
def recover() -> int:
    """Nudge every submission that has work left and no live lease (after a crash)."""
    ids = service.stranded(get_engine())
    for submission_id in ids:
        measure_next.delay(submission_id)
    return len(ids)


@app.task(name="rollbench.deliver_webhooks")
def deliver_webhooks() -> int:
    """POST the webhook deliveries that are due (the outbox); return how many were sent."""
    report = webhooks.deliver_due(get_engine())
    return report.delivered


@worker_ready.connect
def _on_ready(**_: object) -> None:
    recover.delay()


@worker_shutting_down.connect
def _on_shutdown(**_: object) -> None:
    released = service.release_leases(get_engine(), owner=OWNER)
    if released:
        log.warning("released %d run(s) on shutdown; they will be measured again", released)
