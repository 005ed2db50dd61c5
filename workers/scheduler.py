"""The scheduler process: it only enqueues (APScheduler), never measures.

Today it has one job: every `recovery_interval_s` (15 s), nudge submissions whose work was
stranded by a worker that died (its lease ran out). Campaigns (availability probes,
nightly soaks) will add their cron jobs here.
"""

from __future__ import annotations

import contextlib
import logging

from apscheduler.schedulers.blocking import BlockingScheduler

log = logging.getLogger("rollbench.scheduler")


def main() -> None:
    from orchestrator.config import get_settings
    from workers.tasks import recover

    scheduler = BlockingScheduler(timezone="UTC")
    scheduler.add_job(
        recover.delay,
        "interval",
        seconds=get_settings().recovery_interval_s,
        id="recover",
        max_instances=1,
        coalesce=True,
    )
    log.info("scheduler started")
    with contextlib.suppress(KeyboardInterrupt, SystemExit):
        scheduler.start()
