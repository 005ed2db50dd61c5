"""Build and check the schema with Alembic (never with create_all).

The migrations live in `migrations/` at the top of the project, next to `alembic.ini`;
`rollbench migrate` and the tests call these functions, the `alembic` command works too.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import make_url

PROJECT_ROOT = Path(__file__).resolve().parents[1]


class MigrationsNotFound(RuntimeError):
    pass


def alembic_config(url: str) -> Config:
    ini = PROJECT_ROOT / "alembic.ini"
    if not (PROJECT_ROOT / "migrations" / "env.py").is_file():
        raise MigrationsNotFound(
            f"no migrations/ beside {PROJECT_ROOT}: install rollbench from its source tree "
            "(pip install -e .)"
        )
    config = Config(str(ini))
    config.set_main_option("script_location", str(PROJECT_ROOT / "migrations"))
    config.attributes["url"] = url
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the schema to `revision`; safe when several processes start at once.

    `rollbench up` migrates while a `rollbench token create` in another shell may do the
    same: on PostgreSQL the migration holds an advisory lock (migrations/env.py), on an
    SQLite file a lock file beside it, so the second waits and then finds nothing to do.
    """
    with _sqlite_file_lock(url):
        command.upgrade(alembic_config(url), revision)


@contextmanager
def _sqlite_file_lock(url: str) -> Iterator[None]:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        yield
        return
    lock_path = Path(str(parsed.database)).with_name(Path(str(parsed.database)).name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def check(url: str) -> None:
    """Raise if the models and the migrated schema differ (alembic check)."""
    command.check(alembic_config(url))
