"""Key rotation on a real store: rows re-sealed, old keys good until then, audit written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from orchestrator import secrets
from orchestrator.audit.models import AuditEntry
from orchestrator.auth.service import create_organisation
from orchestrator.config import get_settings
from orchestrator.db import session_scope
from orchestrator.endpoints.models import ApiFlavour, Endpoint
from orchestrator.secrets import Keyring, RotationRefused, UnknownKeyId, key_usage, rotate
from orchestrator.systems.models import System


def add_endpoints(engine: Engine, creds: list[dict[str, object] | None]) -> list[int]:
    """One endpoint per item, sealed with the keyring in force (None: no secrets)."""
    ids = []
    with session_scope(engine) as session:
        org = create_organisation(session, name="acme")
        assert org.id is not None
        system = System(organisation_id=org.id, name="h100")
        session.add(system)
        session.flush()
        assert system.id is not None
        for n, item in enumerate(creds):
            sealed, key_id = secrets.seal(item) if item is not None else (None, None)
            endpoint = Endpoint(
                organisation_id=org.id,
                system_id=system.id,
                base_url=f"http://127.0.0.1:{8000 + n}/v1",
                api=ApiFlavour.OPENAI_CHAT,
                served_model="m",
                secrets_sealed=sealed,
                secrets_key_id=key_id,
            )
            session.add(endpoint)
            session.flush()
            assert endpoint.id is not None
            ids.append(endpoint.id)
    return ids


def rows(engine: Engine) -> dict[int, Endpoint]:
    with Session(engine) as session:
        return {e.id or 0: e for e in session.exec(select(Endpoint))}


def opened(engine: Engine) -> dict[int, dict[str, object] | None]:
    return {
        i: secrets.unseal(e.secrets_sealed, e.secrets_key_id or "") if e.secrets_sealed else None
        for i, e in rows(engine).items()
    }


CREDS: list[dict[str, object] | None] = [
    {"api_key": "sk-one", "headers": {}},
    {"api_key": "sk-two", "headers": {"X-Api-Key": "two"}},
    None,
]


def test_rotate_reseals_every_row_under_a_new_key(engine: Engine, data_dir: Path) -> None:
    ids = add_endpoints(engine, CREDS)
    first = secrets.load_keyring().active_id
    before = rows(engine)
    with session_scope(engine) as session:
        assert rotate(session) == 2
    ring = secrets.load_keyring()
    assert ring.active_id != first and ring.key_ids == (ring.active_id, first)
    after = rows(engine)
    for i, creds in zip(ids, CREDS, strict=True):
        if creds is None:
            assert after[i].secrets_sealed is None and after[i].secrets_key_id is None
        else:
            assert after[i].secrets_key_id == ring.active_id
            assert after[i].secrets_sealed != before[i].secrets_sealed
    assert opened(engine) == dict(zip(ids, CREDS, strict=True))
    with Session(engine) as session:
        assert key_usage(session) == {ring.active_id: 2}
        entries = session.exec(select(AuditEntry).order_by(col(AuditEntry.id))).all()
    reseals = [e for e in entries if e.action == "reseal_secrets"]
    assert [(e.object_type, e.object_id) for e in reseals] == [("endpoint", i) for i in ids[:2]]
    assert reseals[0].data == {"from_key_id": first, "to_key_id": ring.active_id}
    assert entries[-1].object_type == "keyring" and entries[-1].data["resealed"] == 2
    # no secret in the audit log
    assert "sk-one" not in json.dumps([e.data for e in entries])


def test_rows_under_an_old_key_open_until_rotated(engine: Engine, data_dir: Path) -> None:
    """A row sealed before a rotation that did not reach it (e.g. written concurrently)."""
    (old_id,) = add_endpoints(engine, [{"api_key": "sk-old"}])
    old_key_id = rows(engine)[old_id].secrets_key_id
    with session_scope(engine) as session:
        rotate(session)
    # simulate a row still under the old key: seal with the old key only
    path = data_dir / "secret-keys.json"
    keys = {k["id"]: k["key"] for k in json.loads(path.read_text())["keys"]}
    assert old_key_id is not None
    blob, _ = Keyring([(old_key_id, keys[old_key_id])]).seal({"api_key": "sk-straggler"})
    with session_scope(engine) as session:
        endpoint = session.get(Endpoint, old_id)
        assert endpoint is not None
        endpoint.secrets_sealed, endpoint.secrets_key_id = blob, old_key_id
        session.add(endpoint)
    assert opened(engine) == {old_id: {"api_key": "sk-straggler"}}  # the old key still opens
    with session_scope(engine) as session:
        assert rotate(session) == 1
    newest = secrets.load_keyring()
    assert len(newest.key_ids) == 3  # every older key kept in the file
    assert rows(engine)[old_id].secrets_key_id == newest.active_id
    assert opened(engine) == {old_id: {"api_key": "sk-straggler"}}


def test_a_row_under_a_missing_key_stops_rotation_with_nothing_changed(
    engine: Engine, data_dir: Path
) -> None:
    (eid,) = add_endpoints(engine, [{"api_key": "sk"}])
    blob, _ = Keyring([("lost", Fernet.generate_key())]).seal({"api_key": "sk-lost"})
    with session_scope(engine) as session:
        endpoint = session.get(Endpoint, eid)
        assert endpoint is not None
        endpoint.secrets_sealed, endpoint.secrets_key_id = blob, "lost"
        session.add(endpoint)
    before = secrets.load_keyring().key_ids
    missing = f"endpoint {eid}: .*'lost'.*nothing was rotated"
    with pytest.raises(UnknownKeyId, match=missing), session_scope(engine) as session:
        rotate(session)
    assert secrets.load_keyring().key_ids == before
    assert rows(engine)[eid].secrets_key_id == "lost"


def test_with_env_keys_rotate_refuses_until_a_new_key_is_added(
    engine: Engine, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    k1, k2 = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    monkeypatch.setenv("ROLLBENCH_SECRET_KEYS", f"one:{k1}")
    get_settings.cache_clear()
    ids = add_endpoints(engine, CREDS)
    refused = "put it first in ROLLBENCH_SECRET_KEYS"
    with pytest.raises(RotationRefused, match=refused), session_scope(engine) as session:
        rotate(session)
    # the operator adds a new key in front and keeps the old one
    monkeypatch.setenv("ROLLBENCH_SECRET_KEYS", f"two:{k2},one:{k1}")
    get_settings.cache_clear()
    assert opened(engine) == dict(zip(ids, CREDS, strict=True))  # old rows still open
    with session_scope(engine) as session:
        assert rotate(session) == 2
    assert {e.secrets_key_id for e in rows(engine).values() if e.secrets_sealed} == {"two"}
    # now the old key can go
    monkeypatch.setenv("ROLLBENCH_SECRET_KEYS", f"two:{k2}")
    get_settings.cache_clear()
    assert opened(engine) == dict(zip(ids, CREDS, strict=True))
    assert not (data_dir / "secret-keys.json").exists()
