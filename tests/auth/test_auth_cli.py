"""`rollbench token ...` and `rollbench keys ...` as typer apps, on both stores.

The store comes from the settings (ROLLBENCH_DATABASE_URL), exactly as for a user; the
commands migrate it themselves.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlmodel import Session, select
from typer.testing import CliRunner, Result

from orchestrator import secrets
from orchestrator.auth.cli import keys_app, token_app
from orchestrator.auth.models import ApiToken
from orchestrator.auth.service import authenticate, hash_token
from orchestrator.config import get_settings
from orchestrator.db import make_engine, session_scope
from orchestrator.endpoints.models import ApiFlavour, Endpoint
from orchestrator.systems.models import System

TOKEN = re.compile(r"rb_[A-Za-z0-9_-]{43}")


@pytest.fixture
def store(db_url: str, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("ROLLBENCH_DATABASE_URL", db_url)
    get_settings.cache_clear()
    yield db_url
    get_settings.cache_clear()


def run(app: object, *args: str) -> Result:
    return CliRunner().invoke(app, list(args))  # type: ignore[arg-type]


def usage_error(result: Result) -> str:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rollbench: error: "), result.stderr
    assert result.stdout == ""
    return lines[0]


def test_create_prints_the_token_once_on_stdout(store: str) -> None:
    result = run(token_app, "create", "--org", "acme", "--role", "submitter", "--label", "ci")
    assert result.exit_code == 0, result.stderr
    clear = result.stdout.strip()
    assert TOKEN.fullmatch(clear)
    note = result.stderr.strip().splitlines()
    assert len(note) == 1 and "only this once" in note[0] and clear not in note[0]
    engine = make_engine(store)
    with Session(engine) as session:
        row = session.exec(select(ApiToken)).one()
        assert row.token_hash == hash_token(clear) and row.label == "ci"
    with session_scope(engine) as session:
        principal = authenticate(session, token=clear)
        assert principal is not None and principal.organisation == "acme"
    engine.dispose()


def test_list_shows_prefixes_never_tokens(store: str) -> None:
    a = run(token_app, "create", "--org", "acme", "--role", "operator").stdout.strip()
    b = run(token_app, "create", "--org", "globex", "--role", "viewer").stdout.strip()
    result = run(token_app, "list")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:5] == ["ID", "ORGANISATION", "ROLE", "PREFIX", "STATE"]
    assert len(lines) == 3
    assert a[:10] in result.stdout and b[:10] in result.stdout
    assert a not in result.stdout and b not in result.stdout
    assert a[10:20] not in result.stdout
    only = run(token_app, "list", "--org", "globex")
    assert only.exit_code == 0 and len(only.stdout.splitlines()) == 2
    assert "globex" in only.stdout and "acme" not in only.stdout


def test_revoke_then_the_token_is_refused(store: str) -> None:
    clear = run(token_app, "create", "--org", "acme", "--role", "submitter").stdout.strip()
    result = run(token_app, "revoke", "1")
    assert result.exit_code == 0, result.stderr
    assert "revoked" in result.stdout
    assert "revoked" in run(token_app, "list").stdout
    engine = make_engine(store)
    with session_scope(engine) as session:
        assert authenticate(session, token=clear) is None
    engine.dispose()
    assert run(token_app, "revoke", "1").exit_code == 0  # idempotent


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["create", "--org", "acme", "--role", "admin"], "--role: 'admin' is not one of"),
        (["create", "--org", "bad name", "--role", "viewer"], "organisation name"),
        (["create", "--org", "acme", "--role", "viewer", "--label", "x" * 201], "label"),
        (["list", "--org", "nobody"], "--org: no organisation named 'nobody'"),
        (["revoke", "999"], "ID: no token with id 999"),
        (["revoke", "abc"], "ID: 'abc' is not a token id"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(store: str, args: list[str], message: str) -> None:
    assert message in usage_error(run(token_app, *args))


def add_sealed_endpoint(url: str) -> int:
    from orchestrator.auth.service import create_organisation

    engine = make_engine(url)
    with session_scope(engine) as session:
        org = create_organisation(session, name="acme")
        assert org.id is not None
        system = System(organisation_id=org.id, name="s")
        session.add(system)
        session.flush()
        assert system.id is not None
        sealed, key_id = secrets.seal({"api_key": "sk-cli"})
        endpoint = Endpoint(
            organisation_id=org.id,
            system_id=system.id,
            base_url="http://127.0.0.1:9/v1",
            api=ApiFlavour.OPENAI_CHAT,
            served_model="m",
            secrets_sealed=sealed,
            secrets_key_id=key_id,
        )
        session.add(endpoint)
        session.flush()
        assert endpoint.id is not None
        endpoint_id = endpoint.id
    engine.dispose()
    return endpoint_id


def test_keys_rotate_and_status(store: str, data_dir: Path) -> None:
    run(token_app, "list")  # migrates the store
    endpoint_id = add_sealed_endpoint(store)
    first = secrets.load_keyring().active_id
    status = run(keys_app, "status")
    assert status.exit_code == 0, status.stderr
    assert f"{first} (active): 1 endpoint(s)" in status.stdout
    assert str(data_dir / "secret-keys.json") in status.stdout
    result = run(keys_app, "rotate")
    assert result.exit_code == 0, result.stderr
    active = secrets.load_keyring().active_id
    assert active != first
    assert result.stdout.strip() == f"active key {active}; re-sealed 1 endpoint(s)"
    status = run(keys_app, "status").stdout
    assert f"{active} (active): 1 endpoint(s)" in status and f"{first}: 0 endpoint(s)" in status
    engine = make_engine(store)
    with Session(engine) as session:
        endpoint = session.get(Endpoint, endpoint_id)
        assert endpoint is not None and endpoint.secrets_sealed is not None
        assert secrets.unseal(endpoint.secrets_sealed, active) == {"api_key": "sk-cli"}
    engine.dispose()
    key = secrets._read_pairs(data_dir / "secret-keys.json")[0][1]
    assert key not in result.stdout + result.stderr + status


def test_keys_rotate_with_env_keys_explains_what_to_do(
    store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROLLBENCH_SECRET_KEYS", f"one:{Fernet.generate_key().decode()}")
    get_settings.cache_clear()
    message = usage_error(run(keys_app, "rotate"))
    assert "rollbench keys generate" in message and "ROLLBENCH_SECRET_KEYS" in message


def test_keys_generate_prints_a_usable_pair(data_dir: Path) -> None:
    result = run(keys_app, "generate")
    assert result.exit_code == 0
    ring = secrets.Keyring.parse(result.stdout.strip())
    assert ring.unseal(*ring.seal({"a": 1})) == {"a": 1}
    assert "ROLLBENCH_SECRET_KEYS" in result.stderr
    assert not (data_dir / "secret-keys.json").exists()


def test_groups_show_help_without_a_command(data_dir: Path) -> None:
    for app, command in [(token_app, "create"), (keys_app, "rotate")]:
        result = run(app)
        assert command in result.stdout + result.stderr
