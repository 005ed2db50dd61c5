"""frontier routes (see orchestrator/frontier)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/v1/frontiers", tags=["frontiers"])
