"""What every `rollbench` command that works on the store shares: open it, fail in one line.

Mistakes end in one line on stderr and exit status 2; a store that cannot be opened in one
line and exit status 1. Commands run as the actor `cli` (an operator at the machine).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer
from rich.console import Console
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlmodel import Session

from orchestrator import migrate
from orchestrator.config import get_settings
from orchestrator.db import make_engine, session_scope

EXIT_USAGE = 2
EXIT_STORE = 1
ACTOR = "cli"


def fail(message: str, status: int = EXIT_USAGE) -> NoReturn:
    print(f"rollbench: error: {message}", file=sys.stderr)
    raise typer.Exit(status)


@contextmanager
def store() -> Iterator[Session]:
    """A session on the configured store, migrated to head, committed on success."""
    url = get_settings().resolved_database_url()
    shown = make_url(url).render_as_string(hide_password=True)
    try:
        migrate.upgrade(url)
        engine = make_engine(url)
    except OperationalError as exc:
        fail(f"cannot open the store {shown}: {exc.orig}", EXIT_STORE)
    try:
        with session_scope(engine) as session:
            yield session
    finally:
        engine.dispose()


def console() -> Console:
    """Where tables go: a pipe or a log file gets whole tables, not 80 truncated columns."""
    return Console(width=None if sys.stdout.isatty() else 160)


def num(value: object, digits: int = 1) -> str:
    """A figure for a table cell: thousands separated, "—" when it was not measured."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—"
    return f"{value:,.{digits}f}"
