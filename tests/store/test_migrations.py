"""The schema is built by the migrations and matches the models, on both databases."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlmodel import Session, select

from orchestrator import migrate
from orchestrator.auth.models import ApiToken, Organisation, Role
from orchestrator.db import make_engine

TABLES = {
    "alembic_version",
    "api_token",
    "audit_entry",
    "endpoint",
    "frontier_version",
    "organisation",
    "point",
    "review_entry",
    "run",
    "slo_profile",
    "submission",
    "system",
    "webhook_delivery",
    "workload",
}


def test_upgrade_head_then_check_finds_no_drift(db_url: str) -> None:
    migrate.upgrade(db_url)
    migrate.check(db_url)  # raises if the models and the migrated schema differ
    engine = make_engine(db_url)
    assert set(sa.inspect(engine).get_table_names()) == TABLES
    # constraint names come from the naming convention on both databases
    uniques = {u["name"] for u in sa.inspect(engine).get_unique_constraints("api_token")}
    assert "uq_api_token_token_hash" in uniques
    engine.dispose()


def test_upgrade_is_idempotent_and_downgrade_works(db_url: str) -> None:
    migrate.upgrade(db_url)
    migrate.upgrade(db_url)  # a second run finds nothing to do
    from alembic import command

    command.downgrade(migrate.alembic_config(db_url), "base")
    engine = make_engine(db_url)
    assert set(sa.inspect(engine).get_table_names()) == {"alembic_version"}
    engine.dispose()


def test_enums_are_stored_by_value(db_url: str) -> None:
    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    with Session(engine) as session:
        org = Organisation(name="acme")
        session.add(org)
        session.commit()
        assert org.id is not None
        session.add(
            ApiToken(
                organisation_id=org.id, role=Role.OPERATOR, token_hash="a" * 64, prefix="rb_abc"
            )
        )
        session.commit()
        raw = session.execute(sa.text("SELECT role FROM api_token")).scalar_one()
        assert raw == "operator"
        token = session.exec(select(ApiToken)).one()
        assert token.role is Role.OPERATOR
        # foreign keys hold on SQLite too (PRAGMA foreign_keys=ON)
        session.add(
            ApiToken(organisation_id=9999, role=Role.VIEWER, token_hash="b" * 64, prefix="rb_def")
        )
        with pytest.raises(sa.exc.IntegrityError):
            session.commit()
    engine.dispose()


def _upgrade(url: str) -> None:
    migrate.upgrade(url)


def test_processes_migrating_at_once_all_succeed(db_url: str) -> None:
    """`rollbench up` and a CLI in another shell may both migrate a new store at once: one
    waits for the other (a lock file on SQLite, an advisory lock on PostgreSQL)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_upgrade, args=(db_url,)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    migrate.check(db_url)
