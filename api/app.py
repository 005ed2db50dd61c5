"""The FastAPI application: routers, error bodies, a request-size limit.

uvicorn api.app:create_app --factory      # or `rollbench api`
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from sqlalchemy.engine import Engine

from api import errors
from api.routers import (
    endpoints,
    frontier,
    health,
    interop,
    points,
    review,
    slo,
    submissions,
    systems,
)
from orchestrator import __version__
from orchestrator.db import get_engine
from orchestrator.dispatch import Dispatcher

MAX_BODY_BYTES = 1024 * 1024


def create_app(engine: Engine | None = None, dispatcher: Dispatcher | None = None) -> FastAPI:
    app = FastAPI(
        title="rollbench",
        version=__version__,
        description="Rolling-submission orchestration for LLM inference endpoints.",
    )
    app.state.engine = engine or get_engine()
    if dispatcher is None:
        from workers.dispatch import CeleryDispatcher

        dispatcher = CeleryDispatcher()
    app.state.dispatcher = dispatcher
    errors.install(app)

    @app.middleware("http")
    async def limit_body(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
            return JSONResponse(
                errors.error_body(413, f"request body over {MAX_BODY_BYTES} bytes"),
                status_code=413,
            )
        return await call_next(request)

    app.include_router(health.router)
    app.include_router(systems.router)
    app.include_router(endpoints.router)
    app.include_router(submissions.router)
    app.include_router(points.router)
    app.include_router(review.router)
    app.include_router(frontier.router)
    app.include_router(slo.router)
    app.include_router(interop.router)
    return app
