"""One error body for every 4xx and 5xx: {"error": {"code", "message", "fields": [...]}}.

Validation errors name each field with its location (`body.base_url`, `query.limit`); service
errors carry the field they concern. An unexpected exception is logged with its traceback
and answered 500 without one: bad input never reaches that path.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from orchestrator.errors import ServiceError

log = logging.getLogger("rollbench.api")

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported",
    422: "invalid",
    429: "too_many_requests",
}


def error_body(
    status: int,
    message: str,
    *,
    code: str | None = None,
    fields: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    return {
        "error": {
            "code": code or _CODES.get(status, "error"),
            "message": message,
            "fields": fields or [],
        }
    }


def install(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service(_: Request, exc: ServiceError) -> JSONResponse:
        fields = [{"field": exc.field, "message": exc.message}] if exc.field else []
        return JSONResponse(
            error_body(exc.status, exc.message, code=exc.code, fields=fields),
            status_code=exc.status,
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        fields = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err.get("loc", ()))
            fields.append({"field": loc, "message": str(err.get("msg", "invalid"))})
        summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
        return JSONResponse(
            error_body(422, summary or "invalid request", fields=fields), status_code=422
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(
            error_body(exc.status_code, str(exc.detail)),
            status_code=exc.status_code,
            headers=exc.headers,
        )

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse(
            error_body(500, "internal error", code="internal_error"), status_code=500
        )
