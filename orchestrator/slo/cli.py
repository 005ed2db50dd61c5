"""`rollbench slo ...` and `rollbench rank`."""

from __future__ import annotations

import typer

slo_app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None)


def rank(workload: str) -> None:
    """Placeholder until the ranking lands."""
    raise typer.Exit(2)
