"""The scheduler process: it only enqueues (APScheduler), never measures.

Today it has one job: every 15 s, nudge submissions whose work was stranded by a worker
that died (its lease ran out). Campaigns (availability probes, nightly soaks) will add their
cron jobs here.
"""

from __future__ import annotations

import contextlib
import logging

from apscheduler.schedulers.blocking import BlockingScheduler

log = logging.getLogger("rollbench.scheduler")
RECOVERY_INTERVAL_S = 15


def main() -> None:
    from workers.tasks import recover

    scheduler = BlockingScheduler(timezone="UTC")
    scheduler.add_job(
        recover.delay,
        "interval",
        seconds=RECOVERY_INTERVAL_S,
        id="recover",
        max_instances=1,
        coalesce=True,
    )
    log.info("scheduler started")
    with contextlib.suppress(KeyboardInterrupt, SystemExit):
        scheduler.start()
