"""`rollbench` commands of the frontier domain."""

from __future__ import annotations

import typer

frontier_app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None)
