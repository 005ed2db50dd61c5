"""`rollbench import ...` and `rollbench export ...`."""

from __future__ import annotations

import typer

import_app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None)
export_app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None)
