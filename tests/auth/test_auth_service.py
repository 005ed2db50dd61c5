"""Organisations and tokens on a real store: create, authenticate, revoke, and the audit log."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from orchestrator.audit.models import AuditEntry
from orchestrator.auth import service
from orchestrator.auth.models import ApiToken, Organisation, Role
from orchestrator.auth.service import (
    InvalidName,
    Principal,
    TokenNotFound,
    UnknownOrganisation,
    authenticate,
    create_organisation,
    create_token,
    hash_token,
    list_tokens,
    revoke_token,
)
from orchestrator.db import session_scope, utcnow


def audit(engine: Engine) -> list[AuditEntry]:
    with Session(engine) as session:
        return list(session.exec(select(AuditEntry).order_by(sa.column("id"))))


def all_text(engine: Engine) -> str:
    """Every value of every row of every table, as one string."""
    chunks: list[str] = []
    with engine.connect() as conn:
        for table in sa.inspect(engine).get_table_names():
            for row in conn.execute(sa.text(f'SELECT * FROM "{table}"')):
                chunks.extend(repr(value) for value in row)
    return "\n".join(chunks)


def test_create_organisation_is_get_or_create_and_audited_once(engine: Engine) -> None:
    with session_scope(engine) as session:
        first = create_organisation(session, name="acme.labs_1-x")
    with session_scope(engine) as session:
        again = create_organisation(session, name="acme.labs_1-x")
    assert first.id == again.id
    entries = [e for e in audit(engine) if e.object_type == "organisation"]
    assert [(e.action, e.object_id, e.actor) for e in entries] == [("create", first.id, "cli")]


@pytest.mark.parametrize("name", ["", "a" * 101, "has space", "slash/y", "ünï", "semi;colon"])
def test_organisation_names_are_validated(engine: Engine, name: str) -> None:
    with session_scope(engine) as session, pytest.raises(InvalidName, match="1 to 100"):
        create_organisation(session, name=name)
    with Session(engine) as session:
        assert session.exec(select(Organisation)).all() == []


def test_create_organisation_survives_a_concurrent_insert(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row appears between our lookup and our insert: ON CONFLICT keeps theirs."""
    with session_scope(engine) as session:
        theirs = create_organisation(session, name="racer")
    real = service._organisation_by_name
    calls = {"n": 0}

    def blind_first_time(session: Session, name: str) -> Organisation | None:
        calls["n"] += 1
        return None if calls["n"] == 1 else real(session, name)

    monkeypatch.setattr(service, "_organisation_by_name", blind_first_time)
    with session_scope(engine) as session:
        ours = create_organisation(session, name="racer")
    assert ours.id == theirs.id
    assert len([e for e in audit(engine) if e.object_type == "organisation"]) == 1


def test_token_is_shown_once_and_stored_only_as_its_hash(engine: Engine) -> None:
    with session_scope(engine) as session:
        token, clear = create_token(
            session, organisation="acme", role=Role.SUBMITTER, label="ci runner"
        )
    assert re.fullmatch(r"rb_[A-Za-z0-9_-]{43}", clear)
    assert token.prefix == clear[:10]
    with Session(engine) as session:
        row = session.exec(select(ApiToken)).one()
    assert row.token_hash == hash_token(clear)
    assert re.fullmatch(r"[0-9a-f]{64}", row.token_hash)
    dump = all_text(engine)
    assert clear not in dump  # not in api_token, not in the audit log, nowhere
    assert clear[10:] not in dump  # nor the part beyond the shown prefix
    assert row.token_hash in dump
    created = [e for e in audit(engine) if e.object_type == "api_token"]
    assert [(e.action, e.to_state, e.data["prefix"]) for e in created] == [
        ("create", "active", clear[:10])
    ]


def test_tokens_are_distinct(engine: Engine) -> None:
    with session_scope(engine) as session:
        clears = {create_token(session, organisation="acme", role=Role.VIEWER)[1] for _ in range(5)}
    assert len(clears) == 5


def test_authenticate_returns_the_principal(engine: Engine) -> None:
    with session_scope(engine) as session:
        token, clear = create_token(session, organisation="globex", role=Role.OPERATOR)
    with session_scope(engine) as session:
        principal = authenticate(session, token=clear)
    assert principal == Principal(
        token_id=token.id or 0,
        organisation_id=token.organisation_id,
        organisation="globex",
        role=Role.OPERATOR,
    )
    assert principal.actor == f"token:{token.id}"


@pytest.mark.parametrize(
    "presented",
    [
        "",
        "rb_",
        "Bearer x",
        "rb_" + "A" * 43,  # well-formed, unknown
        "rb_" + "A" * 44,
        "xx_" + "A" * 43,
        "rb_" + "A" * 42 + "=",
        "rb_" + "A" * 10_000,
    ],
)
def test_authenticate_refuses_unknown_and_malformed(engine: Engine, presented: str) -> None:
    with session_scope(engine) as session:
        create_token(session, organisation="acme", role=Role.SUBMITTER)
    with session_scope(engine) as session:
        assert authenticate(session, token=presented) is None


def test_a_near_miss_does_not_authenticate(engine: Engine) -> None:
    with session_scope(engine) as session:
        _, clear = create_token(session, organisation="acme", role=Role.SUBMITTER)
    flipped = clear[:-1] + ("A" if clear[-1] != "A" else "B")
    with session_scope(engine) as session:
        assert authenticate(session, token=flipped) is None
        assert authenticate(session, token=hash_token(clear)) is None  # the stored form


def test_last_used_at_is_written_at_most_once_a_minute(engine: Engine) -> None:
    with session_scope(engine) as session:
        token, clear = create_token(session, organisation="acme", role=Role.VIEWER)

    def last_used() -> Any:
        with Session(engine) as session:
            row = session.get(ApiToken, token.id)
            assert row is not None
            return row.last_used_at

    assert last_used() is None
    with session_scope(engine) as session:
        assert authenticate(session, token=clear) is not None
    first = last_used()
    assert first is not None
    with session_scope(engine) as session:
        assert authenticate(session, token=clear) is not None
    assert last_used() == first  # within the minute: no write
    with session_scope(engine) as session:
        row = session.get(ApiToken, token.id)
        assert row is not None
        row.last_used_at = utcnow() - timedelta(minutes=5)
        session.add(row)
    with session_scope(engine) as session:
        assert authenticate(session, token=clear) is not None
    assert last_used().replace(tzinfo=None) > first.replace(tzinfo=None)


def test_revoked_tokens_are_refused_and_revocation_is_audited(engine: Engine) -> None:
    with session_scope(engine) as session:
        token, clear = create_token(session, organisation="acme", role=Role.SUBMITTER)
        _, kept = create_token(session, organisation="acme", role=Role.SUBMITTER)
    assert token.id is not None
    with session_scope(engine) as session:
        revoked = revoke_token(session, token_id=token.id, actor="token:99")
        assert revoked.revoked_at is not None
    with session_scope(engine) as session:
        assert authenticate(session, token=clear) is None
        assert authenticate(session, token=kept) is not None
    with session_scope(engine) as session:  # again: no change, no second entry
        revoke_token(session, token_id=token.id)
    revokes = [e for e in audit(engine) if e.action == "revoke"]
    assert [(e.object_id, e.actor, e.from_state, e.to_state) for e in revokes] == [
        (token.id, "token:99", "active", "revoked")
    ]
    with session_scope(engine) as session, pytest.raises(TokenNotFound):
        revoke_token(session, token_id=123456)


def test_list_tokens_by_organisation(engine: Engine) -> None:
    with session_scope(engine) as session:
        create_token(session, organisation="acme", role=Role.SUBMITTER)
        create_token(session, organisation="globex", role=Role.VIEWER)
        create_token(session, organisation="acme", role=Role.OPERATOR)
    with Session(engine) as session:
        assert [org.name for _, org in list_tokens(session)] == ["acme", "globex", "acme"]
        acme = list_tokens(session, organisation="acme")
        assert [t.role for t, _ in acme] == [Role.SUBMITTER, Role.OPERATOR]
        with pytest.raises(UnknownOrganisation):
            list_tokens(session, organisation="initech")


def test_a_failed_transaction_leaves_neither_token_nor_audit(engine: Engine) -> None:
    with pytest.raises(RuntimeError), session_scope(engine) as session:
        create_token(session, organisation="acme", role=Role.SUBMITTER)
        raise RuntimeError("boom")
    assert all_text(engine).count("acme") == 0
    assert audit(engine) == []
