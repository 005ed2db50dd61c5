"""Organisations, API tokens and the principal a bearer token stands for.

A token is `rb_` + 43 URL-safe characters (256 random bits). Only its sha256 is stored, with
the first characters as a recognisable `prefix`; the clear token is returned once, by
`create_token`, and never again. `authenticate` turns a presented token into a `Principal`
(which organisation, which role) or None, and the principal answers the two questions every
route asks: may it read, may it write, objects of a given organisation. Changes write an
audit entry in the caller's transaction; the caller commits.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Insert, Table, insert
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import SelectOfScalar

from orchestrator.audit.service import record
from orchestrator.auth.models import ApiToken, Organisation, Role
from orchestrator.db import T, utcnow

__all__ = [
    "TOKEN_PREFIX",
    "AuthError",
    "InvalidName",
    "Principal",
    "TokenNotFound",
    "UnknownOrganisation",
    "authenticate",
    "create_organisation",
    "create_token",
    "hash_token",
    "list_tokens",
    "revoke_token",
]

TOKEN_PREFIX = "rb_"
TOKEN_RANDOM_CHARS = 43  # secrets.token_urlsafe(32): 32 bytes -> 43 base64url chars, no padding
TOKEN_SHOWN_CHARS = 10  # stored as `prefix`: "rb_" + 7 random chars, enough to tell tokens apart
# Writing last_used_at on every request would turn each read into a write (and a lock on
# SQLite); to the minute is all anyone needs to see whether a token is still in use.
LAST_USED_RESOLUTION = timedelta(seconds=60)

_ORG_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")
_TOKEN_SHAPE = re.compile(re.escape(TOKEN_PREFIX) + f"[A-Za-z0-9_-]{{{TOKEN_RANDOM_CHARS}}}")


class AuthError(ValueError):
    """A caller's mistake: the message says which input and why, and holds no secret."""


class InvalidName(AuthError):
    pass


class UnknownOrganisation(AuthError, LookupError):
    pass


class TokenNotFound(AuthError, LookupError):
    pass


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: one token of one organisation with one role.

    Ownership rules only; what counts as *published* (readable by any principal) is decided
    by the domain that publishes it.
    """

    token_id: int
    organisation_id: int
    organisation: str
    role: Role

    @property
    def actor(self) -> str:
        """The `actor` of the audit entries this principal causes."""
        return f"token:{self.token_id}"

    @property
    def is_operator(self) -> bool:
        return self.role is Role.OPERATOR

    @property
    def reads_everything(self) -> bool:
        """True when `can_read` holds for every organisation (no per-organisation filter)."""
        return self.role is not Role.SUBMITTER

    def scope(self, query: SelectOfScalar[T], organisation_id: Any) -> SelectOfScalar[T]:
        """`query` narrowed to what this principal may read (`organisation_id`: the column)."""
        if self.reads_everything:
            return query
        return query.where(organisation_id == self.organisation_id)

    def can_read(self, organisation_id: int) -> bool:
        """Operators and viewers read every organisation's objects; submitters their own."""
        if self.role is Role.SUBMITTER:
            return organisation_id == self.organisation_id
        return True

    def can_write(self, organisation_id: int) -> bool:
        """Operators write everywhere, submitters in their own organisation, viewers nowhere."""
        if self.role is Role.OPERATOR:
            return True
        if self.role is Role.SUBMITTER:
            return organisation_id == self.organisation_id
        return False


def hash_token(token: str) -> str:
    """The stored form of a token: sha256, hex.

    A fast hash is enough here, unlike for passwords: the secret is 256 random bits, not
    something a person chose, so there is no dictionary to try and a brute force over 2**256
    is out of reach however fast each guess is. A slow KDF would only slow every request.
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def validate_organisation_name(name: str) -> str:
    if not _ORG_NAME.fullmatch(name):
        raise InvalidName(
            f"organisation name {name[:120]!r}: 1 to 100 characters from A-Z a-z 0-9 . _ -"
        )
    return name


def create_organisation(session: Session, *, name: str, actor: str = "cli") -> Organisation:
    """The organisation called `name`, created (and audited) if it does not exist yet.

    Safe against a concurrent creation of the same name: the insert is INSERT ... ON
    CONFLICT DO NOTHING, so two callers get the same row instead of one IntegrityError.
    """
    validate_organisation_name(name)
    existing = _organisation_by_name(session, name)
    if existing is not None:
        return existing
    table = _organisation_table()
    dialect = session.get_bind().dialect.name
    values = {"name": name, "created_at": utcnow()}
    stmt: Insert
    if dialect == "postgresql":
        stmt = postgresql.insert(table).values(**values).on_conflict_do_nothing()
    elif dialect == "sqlite":
        stmt = sqlite.insert(table).values(**values).on_conflict_do_nothing()
    else:  # no upsert syntax assumed: a race ends in IntegrityError, which is still correct
        stmt = insert(table).values(**values)
    new_id = session.execute(stmt.returning(table.c.id)).scalar_one_or_none()
    org = _organisation_by_name(session, name)
    assert org is not None and org.id is not None
    if new_id is not None:
        record(
            session,
            actor=actor,
            organisation_id=org.id,
            object_type="organisation",
            object_id=org.id,
            action="create",
            data={"name": name},
        )
    return org


def create_token(
    session: Session, *, organisation: str, role: Role, label: str = "", actor: str = "cli"
) -> tuple[ApiToken, str]:
    """A new token for `organisation` (created if new) and its clear text, shown only now.

    >>> row, clear = create_token(session, organisation="acme", role=Role.SUBMITTER)
    >>> clear.startswith("rb_") and row.token_hash == hash_token(clear)
    """
    role = Role(role)
    if len(label) > 200:
        raise AuthError("label: at most 200 characters")
    org = create_organisation(session, name=organisation, actor=actor)
    assert org.id is not None
    clear = TOKEN_PREFIX + secrets.token_urlsafe(32)
    assert _TOKEN_SHAPE.fullmatch(clear)
    token = ApiToken(
        organisation_id=org.id,
        role=role,
        token_hash=hash_token(clear),
        prefix=clear[:TOKEN_SHOWN_CHARS],
        label=label,
    )
    session.add(token)
    session.flush()
    assert token.id is not None
    record(
        session,
        actor=actor,
        organisation_id=org.id,
        object_type="api_token",
        object_id=token.id,
        action="create",
        to_state="active",
        data={"role": role.value, "prefix": token.prefix, "label": label},
    )
    return token, clear


def authenticate(session: Session, *, token: str) -> Principal | None:
    """The principal of a presented token, or None if it is malformed, unknown or revoked.

    The lookup is by the token's sha256, so the database's (not constant-time) index
    comparison can only leak how much of a *digest* matched, which helps no one guess a
    token; the final comparison is hmac.compare_digest all the same. Records the use in
    `last_used_at`, at most once a minute; the caller's transaction commits it.
    """
    if not _TOKEN_SHAPE.fullmatch(token):  # the shape is public; garbage costs no query
        return None
    digest = hash_token(token)
    row = session.exec(
        select(ApiToken, Organisation.name)
        .join(Organisation, col(Organisation.id) == col(ApiToken.organisation_id))
        .where(col(ApiToken.token_hash) == digest)
    ).first()
    if row is None:
        return None
    api_token, organisation_name = row
    if not hmac.compare_digest(api_token.token_hash, digest) or api_token.revoked_at is not None:
        return None
    now = utcnow()
    last = _aware(api_token.last_used_at)
    if last is None or now - last >= LAST_USED_RESOLUTION:
        api_token.last_used_at = now
        session.add(api_token)
    assert api_token.id is not None
    return Principal(
        token_id=api_token.id,
        organisation_id=api_token.organisation_id,
        organisation=organisation_name,
        role=api_token.role,
    )


def revoke_token(session: Session, *, token_id: int, actor: str = "cli") -> ApiToken:
    """Revoke a token for good; revoking a revoked token changes nothing and is not audited."""
    token = session.get(ApiToken, token_id)
    if token is None:
        raise TokenNotFound(f"no token with id {token_id}")
    if token.revoked_at is None:
        token.revoked_at = utcnow()
        session.add(token)
        record(
            session,
            actor=actor,
            organisation_id=token.organisation_id,
            object_type="api_token",
            object_id=token_id,
            action="revoke",
            from_state="active",
            to_state="revoked",
        )
    return token


def list_tokens(
    session: Session, *, organisation: str | None = None
) -> list[tuple[ApiToken, Organisation]]:
    """Tokens (no secrets in them) with their organisation, oldest first."""
    query = select(ApiToken, Organisation).join(
        Organisation, col(Organisation.id) == col(ApiToken.organisation_id)
    )
    if organisation is not None:
        if _organisation_by_name(session, organisation) is None:
            raise UnknownOrganisation(f"no organisation named {organisation[:120]!r}")
        query = query.where(col(Organisation.name) == organisation)
    return [(token, org) for token, org in session.exec(query.order_by(col(ApiToken.id)))]


def _organisation_by_name(session: Session, name: str) -> Organisation | None:
    return session.exec(select(Organisation).where(col(Organisation.name) == name)).first()


def _organisation_table() -> Table:
    table = getattr(Organisation, "__table__")  # noqa: B009  (set by SQLModel at runtime)
    assert isinstance(table, Table)
    return table


def _aware(moment: datetime | None) -> datetime | None:
    # SQLite keeps no zone: what it returns was written as UTC, so say so.
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)
