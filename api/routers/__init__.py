"""Routers, one per domain."""
