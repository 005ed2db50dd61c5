"""The Celery implementation of orchestrator.dispatch.Dispatcher."""

from __future__ import annotations


class CeleryDispatcher:
    def measure_next(self, submission_id: int) -> None:
        from workers.tasks import measure_next

        measure_next.delay(submission_id)
