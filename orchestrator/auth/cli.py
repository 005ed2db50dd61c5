"""`rollbench token ...` and `rollbench keys ...`: API tokens and the credential keyring.

Each command opens the store named by the settings, brings its schema to head (a no-op when
it is there), calls a service in one transaction and prints. A clear token is printed once,
on stdout alone so that `TOKEN=$(rollbench token create ...)` works, and only after the
transaction that stores its hash has committed. Mistakes end in one line on stderr and exit
status 2; a store that cannot be opened in one line and exit status 1.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Annotated

import typer

from orchestrator.auth.models import Role
from orchestrator.auth.service import AuthError, create_token, list_tokens, revoke_token
from orchestrator.cliutil import ACTOR
from orchestrator.cliutil import fail as _fail
from orchestrator.cliutil import store as _store
from orchestrator.secrets import (
    ENV_VAR,
    SecretsError,
    generate_key_pair,
    key_usage,
    load_keyring,
    rotate,
)

__all__ = ["keys_app", "token_app"]


def _group(help_text: str) -> typer.Typer:
    return typer.Typer(
        help=help_text,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )


token_app = _group("API tokens: create (shown once), list, revoke.")
keys_app = _group("The keys that seal endpoint credentials at rest.")


@token_app.callback()
def _token_group() -> None:
    """API tokens: create (shown once), list, revoke."""


@keys_app.callback()
def _keys_group() -> None:
    """The keys that seal endpoint credentials at rest."""


@token_app.command("create")
def token_create(
    org: Annotated[str, typer.Option("--org", help="organisation (created if new)")],
    role: Annotated[str, typer.Option("--role", help="submitter, operator or viewer")],
    label: Annotated[str, typer.Option("--label", help="what the token is for")] = "",
) -> None:
    """Create a token and print it, once: only its hash is kept."""
    try:
        parsed_role = Role(role)
    except ValueError:
        _fail(f"--role: {role!r} is not one of {', '.join(r.value for r in Role)}")
    try:
        with _store() as session:
            token, clear = create_token(session, organisation=org, role=parsed_role, label=label)
    except AuthError as exc:
        _fail(f"--org/--label: {exc}")
    print(clear)
    print(
        f"rollbench: token {token.id} ({token.prefix}…, {parsed_role.value} of {org}) "
        "is shown only this once: store it now",
        file=sys.stderr,
    )


@token_app.command("list")
def token_list(
    org: Annotated[str | None, typer.Option("--org", help="only this organisation")] = None,
) -> None:
    """List tokens: id, organisation, role, prefix, label, dates, state. Never the secret."""
    try:
        with _store() as session:
            rows = list_tokens(session, organisation=org)
    except AuthError as exc:
        _fail(f"--org: {exc}")
    table = [["ID", "ORGANISATION", "ROLE", "PREFIX", "STATE", "CREATED", "LAST USED", "LABEL"]]
    for token, organisation in rows:
        table.append(
            [
                str(token.id),
                organisation.name,
                token.role.value,
                token.prefix,
                "revoked" if token.revoked_at else "active",
                _minute(token.created_at),
                _minute(token.last_used_at),
                token.label,
            ]
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[str, typer.Argument(metavar="ID", help="the token's id (see list)")],
) -> None:
    """Revoke a token for good; requests bearing it are refused from now on."""
    if not token_id.isdigit():
        _fail(f"ID: {token_id!r} is not a token id (a positive integer)")
    try:
        with _store() as session:
            token = revoke_token(session, token_id=int(token_id), actor=ACTOR)
            was_revoked_at = token.revoked_at
    except AuthError as exc:
        _fail(f"ID: {exc}")
    print(f"token {token_id} ({token.prefix}…) revoked at {_minute(was_revoked_at)}")


@keys_app.command("rotate")
def keys_rotate() -> None:
    """Make a new active key and re-seal every endpoint's credentials with it."""
    try:
        with _store() as session:
            resealed = rotate(session, actor=ACTOR)
        active = load_keyring().active_id
    except SecretsError as exc:
        _fail(str(exc))
    print(f"active key {active}; re-sealed {resealed} endpoint(s)")


@keys_app.command("generate")
def keys_generate() -> None:
    """Print a new `id:key` pair for ROLLBENCH_SECRET_KEYS (stores nothing)."""
    print(generate_key_pair())
    print(
        f"rollbench: put it first in {ENV_VAR}, keep the current keys after it, restart every "
        "process, then run `rollbench keys rotate`",
        file=sys.stderr,
    )


@keys_app.command("status")
def keys_status() -> None:
    """Where the keys come from, which is active, and how many endpoints each one seals."""
    try:
        keyring = load_keyring()
        with _store() as session:
            usage = key_usage(session)
    except SecretsError as exc:
        _fail(str(exc))
    print(f"source: {keyring.source}")
    for key_id in keyring.key_ids:
        note = " (active)" if key_id == keyring.active_id else ""
        print(f"{key_id}{note}: {usage.pop(key_id, 0)} endpoint(s)")
    for key_id, count in sorted(usage.items()):  # rows under keys this keyring lacks
        print(f"{key_id or '?'} (MISSING): {count} endpoint(s) cannot be opened")


def _minute(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    if moment.tzinfo is None:  # SQLite keeps no zone; rollbench writes UTC
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%MZ")
