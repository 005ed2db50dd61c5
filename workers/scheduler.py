"""The scheduler process: it only enqueues (APScheduler), never measures.

Jobs: every `recovery_interval_s` (15 s), nudge submissions whose work was stranded by a
worker that died (its lease ran out); every `WEBHOOK_INTERVAL_S` (10 s), ask a worker to
deliver the webhooks that are due (the outbox of orchestrator/review/webhooks.py). Campaigns
(availability probes, nightly soaks) will add their cron jobs here.
"""

from __future__ import annotations

import contextlib
import logging

from apscheduler.schedulers.blocking import BlockingScheduler

log = logging.getLogger("rollbench.scheduler")

WEBHOOK_INTERVAL_S = 10.0


def main() -> None:
    from orchestrator.config import get_settings
    from workers.tasks import deliver_webhooks, recover

    scheduler = BlockingScheduler(timezone="UTC")
    scheduler.add_job(
        recover.delay,
        "interval",
        seconds=get_settings().recovery_interval_s,
        id="recover",
        max_instances=1,
        coalesce=True,
    )

    def nudge_webhooks() -> None:
        # A worker busy measuring (solo pool) takes these late: an expired nudge is dropped
        # instead of piling up, since the next one does the same work.
        deliver_webhooks.apply_async(expires=3 * WEBHOOK_INTERVAL_S)

    scheduler.add_job(
        nudge_webhooks,
        "interval",
        seconds=WEBHOOK_INTERVAL_S,
        id="deliver_webhooks",
        max_instances=1,
        coalesce=True,
    )
    log.info("scheduler started")
    with contextlib.suppress(KeyboardInterrupt, SystemExit):
        scheduler.start()
