"""How the core asks for work to be done without knowing who does it (DESIGN §2).

The API and the CLI hand a `Dispatcher` to the services; in both modes it is Celery (see
workers/dispatch.py), in tests that need no broker it can be anything that records calls.
A dispatch is only a nudge: the store says what is left to measure, so a lost or duplicated
nudge is harmless.
"""

from __future__ import annotations

from typing import Protocol


class Dispatcher(Protocol):
    def measure_next(self, submission_id: int) -> None:
        """Ask a measurement worker to measure the submission's next unmeasured run."""
        ...


class NullDispatcher:
    """Dispatches nothing (the scheduler's recovery sweep will pick the work up)."""

    def measure_next(self, submission_id: int) -> None:
        return None
