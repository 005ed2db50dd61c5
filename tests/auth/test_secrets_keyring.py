"""Sealing without a store: keyrings, the key file, ROLLBENCH_SECRET_KEYS, redaction."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from orchestrator import secrets
from orchestrator.config import get_settings
from orchestrator.secrets import Keyring, SecretsError, UnknownKeyId, redact

CREDS = {"api_key": "sk-live-0123456789", "headers": {"X-Org": "acme", "X-Key": "hush"}}


def test_seal_unseal_round_trip_in_memory() -> None:
    ring = Keyring([("new", Fernet.generate_key()), ("old", Fernet.generate_key())])
    blob, key_id = ring.seal(CREDS)
    assert key_id == "new" == ring.active_id
    assert b"sk-live" not in blob and b"hush" not in blob
    assert ring.unseal(blob, key_id) == CREDS
    assert "sk-live" not in repr(ring) and "new" in repr(ring)


def test_older_keys_still_open_what_they_sealed() -> None:
    old_key = Fernet.generate_key()
    blob, key_id = Keyring([("old", old_key)]).seal(CREDS)
    ring = Keyring([("new", Fernet.generate_key()), ("old", old_key)])
    assert ring.unseal(blob, key_id) == CREDS
    with pytest.raises(UnknownKeyId, match="'gone'"):
        ring.unseal(blob, "gone")


def test_wrong_key_or_damaged_blob_is_a_clear_error() -> None:
    ring = Keyring([("a", Fernet.generate_key())])
    blob, _ = ring.seal(CREDS)
    other = Keyring([("a", Fernet.generate_key())])
    with pytest.raises(SecretsError, match="wrong key or damaged"):
        other.unseal(blob, "a")
    with pytest.raises(SecretsError, match="wrong key or damaged"):
        ring.unseal(blob[:-3] + b"xyz", "a")


def test_key_file_is_made_on_first_use_with_mode_0600(data_dir: Path) -> None:
    path = data_dir / "secret-keys.json"
    assert not path.exists()
    blob, key_id = secrets.seal(CREDS)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    doc = json.loads(path.read_text())
    assert [k["id"] for k in doc["keys"]] == [key_id]
    assert secrets.unseal(blob, key_id) == CREDS
    # a later call, or a second process racing to create it, keeps the same key
    secrets._create_key_file(path)
    assert secrets.load_keyring().key_ids == (key_id,)
    assert json.loads(path.read_text()) == doc
    assert [p.name for p in data_dir.iterdir()] == ["secret-keys.json"]  # no temp files left


def test_a_loose_key_file_is_warned_about(data_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    secrets.load_keyring()
    path = data_dir / "secret-keys.json"
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="orchestrator.secrets"):
        secrets.load_keyring()
    assert "chmod 600" in caplog.text
    key = json.loads(path.read_text())["keys"][0]["key"]
    assert key not in caplog.text


def test_env_keys_come_first_and_the_key_file_is_not_made(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    k1, k2 = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    monkeypatch.setenv("ROLLBENCH_SECRET_KEYS", f"prod-2:{k2}, prod-1:{k1}")
    get_settings.cache_clear()
    assert "prod-2" not in repr(get_settings())  # SecretStr hides the value
    ring = secrets.load_keyring()
    assert ring.key_ids == ("prod-2", "prod-1") and ring.source == "ROLLBENCH_SECRET_KEYS"
    blob, key_id = secrets.seal(CREDS)
    assert key_id == "prod-2"
    assert Keyring([("prod-2", k2)]).unseal(blob, key_id) == CREDS
    assert not (data_dir / "secret-keys.json").exists()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "set but empty"),
        ("nocolon", "item 1 is not `id:key`"),
        ("a:KEY,:KEY", "item 2 is not `id:key`"),
        ("a:not-a-fernet-key", "not a Fernet key"),
        ("bad id!:KEY", "key id"),
        ("a:KEY,a:KEY", "appears twice"),
        ("x" * 33 + ":KEY", "1 to 32"),
    ],
)
def test_bad_env_keys_say_what_is_wrong_without_the_key(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    key = Fernet.generate_key().decode()
    monkeypatch.setenv("ROLLBENCH_SECRET_KEYS", value.replace("KEY", key))
    get_settings.cache_clear()
    with pytest.raises(SecretsError, match=message) as info:
        secrets.load_keyring()
    assert key not in str(info.value)
    assert "not-a-fernet-key" not in str(info.value)


def test_generated_pairs_parse() -> None:
    ring = Keyring.parse(secrets.generate_key_pair())
    assert ring.active_id.startswith("k")
    assert ring.unseal(*ring.seal(CREDS)) == CREDS


def test_sealed_data_must_be_json() -> None:
    ring = Keyring([("a", Fernet.generate_key())])
    with pytest.raises(TypeError):
        ring.seal({"when": object()})


def test_redact_masks_credentials_and_keeps_the_rest() -> None:
    headers = {
        "Authorization": "Bearer sk-abc123",
        "proxy-authorization": "Basic dXNlcjpwYXNz",
        "X-Api-Key": "k-1",
        "api-key": "azure-key",
        "x_goog_api_key": "g",
        "Ocp-Apim-Subscription-Key": "ms",
        "X-Amz-Security-Token": "aws",
        "Cookie": "session=abc",
        "X-Client-Secret": "s",
        "X-Password": "p",
        "Authorization-Raw": "sk-no-scheme with spaces",
        "Accept": "text/event-stream",
        "X-Request-Id": "42",
        "OpenAI-Organization": "org-1",
        "X-Empty-Token": "",
    }
    out = redact(headers)
    assert list(out) == list(headers)  # names and order kept
    assert out["Authorization"] == "Bearer ***"
    assert out["proxy-authorization"] == "Basic ***"
    for name in [
        "X-Api-Key",
        "api-key",
        "x_goog_api_key",
        "Ocp-Apim-Subscription-Key",
        "X-Amz-Security-Token",
        "Cookie",
        "X-Client-Secret",
        "X-Password",
        "Authorization-Raw",
    ]:
        assert out[name] == "***", name
    assert out["Accept"] == "text/event-stream"
    assert out["X-Request-Id"] == "42"
    assert out["OpenAI-Organization"] == "org-1"
    assert out["X-Empty-Token"] == ""
    text = json.dumps(out)
    for secret in ["sk-abc123", "dXNlcjpwYXNz", "azure-key", "aws", "abc", "sk-no-scheme"]:
        assert secret not in text
    assert headers["Authorization"] == "Bearer sk-abc123"  # the input is left alone
