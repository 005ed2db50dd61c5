"""Endpoint credentials sealed at rest with Fernet, under a keyring of rotatable keys.

A keyring is an ordered list of named keys; the first is active and seals, every key
unseals. Each sealed row stores the id of the key that sealed it (`Endpoint.secrets_key_id`),
so unsealing never has to try keys in turn, and `rotate` knows which rows still depend on
which key. Keys come from `ROLLBENCH_SECRET_KEYS` (`id:key,id:key`, first active: the way to
run several hosts) or, when that is unset, from `DATA_DIR/secret-keys.json` (mode 0600),
created with one generated key on first use (embedded mode). The keyring is read afresh on
every call, so a rotation by one process is seen by the others at once. `redact` masks
credential-like headers for logs and exports. Nothing here logs a key or a secret.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken
from sqlalchemy import func
from sqlmodel import Session, col, select

from orchestrator.audit.service import record
from orchestrator.config import Settings, get_settings
from orchestrator.db import utcnow
from orchestrator.endpoints.models import Endpoint

__all__ = [
    "ENV_VAR",
    "KEY_FILE_NAME",
    "MASK",
    "Keyring",
    "RotationRefused",
    "SecretsError",
    "UnknownKeyId",
    "generate_key_pair",
    "key_file_path",
    "key_usage",
    "load_keyring",
    "redact",
    "rotate",
    "seal",
    "unseal",
]

_log = logging.getLogger("orchestrator.secrets")

KEY_FILE_NAME = "secret-keys.json"
ENV_VAR = "ROLLBENCH_SECRET_KEYS"
_KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,32}")  # fits Endpoint.secrets_key_id (32)


class SecretsError(RuntimeError):
    """A key configuration or sealed-data problem; the message never holds key or secret."""


class UnknownKeyId(SecretsError):
    pass


class RotationRefused(SecretsError):
    pass


class Keyring:
    """Named Fernet keys, the first one active.

    >>> ring = Keyring([("k2", Fernet.generate_key()), ("k1", older_key)])
    >>> ring.unseal(*ring.seal({"api_key": "sk-..."}))
    """

    __slots__ = ("_fernets", "source")

    def __init__(self, keys: Sequence[tuple[str, str | bytes]], *, source: str = "memory"):
        if not keys:
            raise SecretsError(f"{source}: no keys")
        self.source = source
        self._fernets: dict[str, Fernet] = {}
        for key_id, key in keys:
            if not _KEY_ID.fullmatch(key_id):
                raise SecretsError(
                    f"{source}: key id {key_id[:40]!r} must be 1 to 32 of A-Z a-z 0-9 . _ -"
                )
            if key_id in self._fernets:
                raise SecretsError(f"{source}: key id {key_id!r} appears twice")
            try:
                self._fernets[key_id] = Fernet(key)
            except (ValueError, TypeError):
                raise SecretsError(
                    f"{source}: key {key_id!r} is not a Fernet key "
                    "(32 bytes, URL-safe base64; make one with `rollbench keys generate`)"
                ) from None

    @classmethod
    def parse(cls, text: str, *, source: str = ENV_VAR) -> Keyring:
        """A keyring from `id:key,id:key` (first active), the form of ROLLBENCH_SECRET_KEYS."""
        pairs: list[tuple[str, str]] = []
        for n, item in enumerate(text.split(","), start=1):
            key_id, sep, key = item.strip().partition(":")
            if not sep or not key_id or not key:
                raise SecretsError(f"{source}: item {n} is not `id:key`")
            pairs.append((key_id, key))
        return cls(pairs, source=source)

    @property
    def active_id(self) -> str:
        return next(iter(self._fernets))

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(self._fernets)

    def seal(self, data: Mapping[str, object]) -> tuple[bytes, str]:
        """(Fernet token of `data` as JSON, id of the key that sealed it).

        `data` must be JSON-serialisable (TypeError otherwise); it comes back as parsed JSON.
        """
        plain = json.dumps(data, separators=(",", ":"), sort_keys=True).encode("utf-8")
        return self._fernets[self.active_id].encrypt(plain), self.active_id

    def unseal(self, blob: bytes, key_id: str | None) -> dict[str, object]:
        fernet = self._fernets.get(key_id or "")
        if fernet is None:
            raise UnknownKeyId(
                f"sealed with key {key_id!r}, which {self.source} does not hold "
                f"(it holds {', '.join(self.key_ids)}); add that key back after the active one"
            )
        try:
            value = json.loads(fernet.decrypt(bytes(blob)))
        except InvalidToken:
            raise SecretsError(
                f"sealed data does not open with key {key_id!r}: wrong key or damaged data"
            ) from None
        if not isinstance(value, dict):
            raise SecretsError("sealed data is not a JSON object")
        return value

    def __repr__(self) -> str:  # ids only: a keyring must never print its keys
        return f"Keyring(active={self.active_id!r}, ids={self.key_ids!r}, source={self.source!r})"


def key_file_path(settings: Settings | None = None) -> Path:
    return (settings or get_settings()).data_dir / KEY_FILE_NAME


def load_keyring(settings: Settings | None = None) -> Keyring:
    """The keyring in force: ROLLBENCH_SECRET_KEYS if set, else the key file (made if absent)."""
    settings = settings or get_settings()
    if settings.secret_keys is not None:
        text = settings.secret_keys.get_secret_value()
        if not text.strip():
            raise SecretsError(f"{ENV_VAR} is set but empty; unset it to use the key file")
        return Keyring.parse(text)
    path = key_file_path(settings)
    try:
        return _read_key_file(path)
    except FileNotFoundError:
        _create_key_file(path)
        return _read_key_file(path)


def seal(data: Mapping[str, object]) -> tuple[bytes, str]:
    """Seal `data` with the active key: (blob for `secrets_sealed`, id for `secrets_key_id`)."""
    return load_keyring().seal(data)


def unseal(blob: bytes, key_id: str) -> dict[str, object]:
    """Open a blob sealed by `seal`, with the key it names; raises SecretsError if it can't."""
    return load_keyring().unseal(blob, key_id)


def generate_key_pair() -> str:
    """A fresh `id:key` item for ROLLBENCH_SECRET_KEYS."""
    return f"{_new_key_id(())}:{Fernet.generate_key().decode('ascii')}"


def rotate(session: Session, *, actor: str = "cli", settings: Settings | None = None) -> int:
    """Re-seal every endpoint's secrets under a new active key; how many rows were re-sealed.

    Key file: a new key is generated and put first in the file (older keys stay, so rows
    sealed by them still open until re-sealed, and a failed re-seal loses nothing). With
    ROLLBENCH_SECRET_KEYS rollbench cannot add a key: the operator puts a new one first in
    the variable on every process, then this re-seals the rows still under older keys, and
    refuses if there are none. Every row is opened before any key is added, so a row under a
    missing key stops the rotation with nothing changed. Rows are locked (FOR UPDATE) until
    the caller commits.
    """
    settings = settings or get_settings()
    keyring = load_keyring(settings)
    rows = session.exec(
        select(Endpoint)
        .where(col(Endpoint.secrets_sealed).is_not(None))
        .order_by(col(Endpoint.id))
        .with_for_update()
    ).all()
    opened: dict[int, dict[str, object]] = {}
    for row in rows:
        assert row.id is not None and row.secrets_sealed is not None
        try:
            opened[row.id] = keyring.unseal(row.secrets_sealed, row.secrets_key_id)
        except SecretsError as exc:
            raise type(exc)(f"endpoint {row.id}: {exc}; nothing was rotated") from None

    if settings.secret_keys is not None:
        if all(row.secrets_key_id == keyring.active_id for row in rows):
            raise RotationRefused(
                f"{ENV_VAR} is set, so rollbench cannot add a key itself, and every sealed "
                f"endpoint already uses its active key {keyring.active_id!r}. Make a key with "
                f"`rollbench keys generate`, put it first in {ENV_VAR} (keep the current keys "
                "after it), restart every process, then run `rollbench keys rotate` again"
            )
        new_ring = keyring
    else:
        new_ring = _add_key_to_file(key_file_path(settings))

    resealed = 0
    for row in rows:
        assert row.id is not None
        if row.secrets_key_id == new_ring.active_id:
            continue
        old_key_id = row.secrets_key_id
        row.secrets_sealed, row.secrets_key_id = new_ring.seal(opened[row.id])
        session.add(row)
        record(
            session,
            actor=actor,
            organisation_id=row.organisation_id,
            object_type="endpoint",
            object_id=row.id,
            action="reseal_secrets",
            data={"from_key_id": old_key_id, "to_key_id": new_ring.active_id},
        )
        resealed += 1
    # the keyring has no row of its own; object_id 0 stands for "the keyring"
    record(
        session,
        actor=actor,
        organisation_id=None,
        object_type="keyring",
        object_id=0,
        action="rotate",
        data={"active_key_id": new_ring.active_id, "resealed": resealed},
    )
    _log.info("rotated to key %s, re-sealed %d endpoint(s)", new_ring.active_id, resealed)
    return resealed


def key_usage(session: Session) -> dict[str, int]:
    """How many endpoints are sealed under each key id: an older key may go once at 0."""
    counts = session.exec(
        select(Endpoint.secrets_key_id, func.count())
        .where(col(Endpoint.secrets_sealed).is_not(None))
        .group_by(col(Endpoint.secrets_key_id))
    ).all()
    return {key_id or "": int(n) for key_id, n in counts}


# Header names whose values are credentials, after lower-casing and `_` -> `-`.
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
_SECRET_WORDS = ("key", "token", "secret", "auth", "passw", "credential", "session", "signature")
_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "apikey"})
MASK = "***"


def redact(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers fit for a log or an export: credential values masked, names kept.

    >>> redact({"Authorization": "Bearer sk-123", "X-Api-Key": "k", "Accept": "*/*"})
    {'Authorization': 'Bearer ***', 'X-Api-Key': '***', 'Accept': '*/*'}
    """
    out: dict[str, str] = {}
    for name, value in headers.items():
        norm = name.strip().lower().replace("_", "-")
        if norm in _SECRET_HEADERS or any(word in norm for word in _SECRET_WORDS):
            scheme, sep, _rest = value.strip().partition(" ")
            keep_scheme = sep and scheme.lower() in _AUTH_SCHEMES
            out[name] = f"{scheme} {MASK}" if keep_scheme else (MASK if value else "")
        else:
            out[name] = value
    return out


# --- the key file --------------------------------------------------------------------------


def _read_key_file(path: Path) -> Keyring:
    return Keyring(_read_pairs(path), source=str(path))


def _read_pairs(path: Path) -> list[tuple[str, str]]:
    text = path.read_text(encoding="utf-8")
    mode = path.stat().st_mode & 0o777
    if mode & 0o077 and path not in _warned:
        _warned.add(path)
        _log.warning("%s is readable by others (mode %o): chmod 600 it", path, mode)
    try:
        doc = json.loads(text)
        return [(str(item["id"]), str(item["key"])) for item in doc["keys"]]
    except (ValueError, KeyError, TypeError):
        raise SecretsError(f"{path}: not a rollbench key file") from None


_warned: set[Path] = set()


def _create_key_file(path: Path) -> None:
    """Make the key file with one key; if another process wins the race, keep theirs.

    The file is written whole under a temporary name and then hard-linked into place, which
    fails rather than overwrites: two processes starting together never end up sealing with
    two different keys.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    key_id = _new_key_id(())
    tmp = _write_private(path, [(key_id, Fernet.generate_key().decode("ascii"))])
    try:
        os.link(tmp, path)
    except FileExistsError:
        return
    finally:
        tmp.unlink()
    _fsync_dir(path.parent)
    _log.info("created %s with key %s", path, key_id)


def _add_key_to_file(path: Path) -> Keyring:
    """Put a new key first in the key file, keeping every older one; the new keyring."""
    with _locked(path):
        pairs = _read_pairs(path)
        key_id = _new_key_id([key_id for key_id, _ in pairs])
        pairs.insert(0, (key_id, Fernet.generate_key().decode("ascii")))
        tmp = _write_private(path, pairs)
        try:
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        _fsync_dir(path.parent)
    _log.info("added key %s to %s, now active", key_id, path)
    return _read_key_file(path)


def _write_private(path: Path, pairs: list[tuple[str, str]]) -> Path:
    """Write a key file beside `path` under a temporary name, mode 0600, synced; its path."""
    doc = {
        "format": 1,
        "note": "rollbench endpoint-credential keys; the first is active. Keep every key "
        "that `rollbench keys status` still counts rows for.",
        "keys": [{"id": key_id, "key": key} for key_id, key in pairs],
    }
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(doc, out, indent=2)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    return Path(name)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock beside the key file, so two rotations cannot lose a key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # Windows: rotations are an operator's deliberate, one-at-a-time act
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a directory
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _new_key_id(taken: Sequence[str]) -> str:
    """`k` + UTC time to the second, so an id says when its key was made."""
    base = f"k{utcnow():%Y%m%d%H%M%S}"
    key_id, n = base, 1
    while key_id in taken:
        n += 1
        key_id = f"{base}-{n}"
    return key_id
