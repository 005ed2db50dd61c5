"""The Celery application, configured from rollbench's settings.

Queues: `measure` (measurement runs: one at a time per worker, started with the solo pool
— each run starts its own load-generator processes with subprocess, which a prefork child
could do too, but one run per worker must also mean one Python process that can be killed
and replaced without orphaning a second run) and `default` (housekeeping).

Long runs: tasks are acknowledged late and rejected if their worker dies, so the broker
redelivers them; the visibility timeout (Redis) is longer than any single run; but the
store, not the broker, decides what is left to measure — a redelivered or duplicated task
finds a run already claimed or finished and does nothing.
"""

from __future__ import annotations

from celery import Celery

from orchestrator.config import get_settings

MEASURE_QUEUE = "measure"
DEFAULT_QUEUE = "default"
VISIBILITY_TIMEOUT_S = 6 * 3600


def make_app() -> Celery:
    settings = get_settings()
    app = Celery("rollbench", broker=settings.resolved_broker_url(), include=["workers.tasks"])
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_default_queue=DEFAULT_QUEUE,
        task_routes={"rollbench.measure_next": {"queue": MEASURE_QUEUE}},
        broker_transport_options=_transport_options(settings.resolved_broker_url()),
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        task_always_eager=False,
    )
    return app


def _transport_options(broker_url: str) -> dict[str, object]:
    # Redis redelivers an unacknowledged task after the visibility timeout: longer than any
    # run. kombu's SQLAlchemy transport hands its options to create_engine: give it none.
    if broker_url.startswith(("redis://", "rediss://")):
        return {"visibility_timeout": VISIBILITY_TIMEOUT_S}
    return {}


app = make_app()


def reconfigure() -> None:
    """Re-read the broker from settings (tests and `rollbench up` change DATA_DIR)."""
    url = get_settings().resolved_broker_url()
    app.conf.broker_url = url
    app.conf.broker_transport_options = _transport_options(url)
