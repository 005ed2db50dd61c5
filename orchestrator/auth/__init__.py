"""Organisations, API tokens and roles."""
