"""/healthz (the process is up) and /readyz (it can reach its store)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
def readyz(request: Request) -> JSONResponse:
    try:
        with request.app.state.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:  # the store is down: not ready, say why
        return JSONResponse(
            {"status": "unavailable", "reason": type(exc).__name__}, status_code=503
        )
    return JSONResponse({"status": "ok"})
