"""interop routes (see orchestrator/interop)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/v1", tags=["interop"])
