"""Errors that services raise and every edge (API, CLI, worker) turns into a clear answer.

A service never returns an HTTP status; it raises one of these with the field it concerns.
The API maps them to 4xx bodies of one shape; the CLI to one line and exit status 2.
"""

from __future__ import annotations


class ServiceError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class Forbidden(ServiceError):
    status = 403
    code = "forbidden"


class Conflict(ServiceError):
    status = 409
    code = "conflict"


class Invalid(ServiceError):
    status = 422
    code = "invalid"
