"""Fixtures of the interop tests (see interop_helpers)."""

from interop.interop_helpers import store

__all__ = ["store"]
