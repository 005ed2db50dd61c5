"""Build and check the schema with Alembic (never with create_all).

The migrations live in `migrations/` at the top of the project, next to `alembic.ini`;
`rollbench migrate` and the tests call these functions, the `alembic` command works too.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

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
    command.upgrade(alembic_config(url), revision)


def check(url: str) -> None:
    """Raise if the models and the migrated schema differ (alembic check)."""
    command.check(alembic_config(url))
