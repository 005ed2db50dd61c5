"""The role matrix: who may read and write which organisation's objects."""

from __future__ import annotations

import dataclasses

import pytest

from orchestrator.auth.models import Role
from orchestrator.auth.service import Principal

OWN, OTHER = 7, 8

# role -> (read own, read other, write own, write other)
MATRIX = {
    Role.SUBMITTER: (True, False, True, False),
    Role.OPERATOR: (True, True, True, True),
    Role.VIEWER: (True, True, False, False),
}


@pytest.mark.parametrize("role", list(Role))
def test_role_matrix(role: Role) -> None:
    p = Principal(token_id=3, organisation_id=OWN, organisation="acme", role=role)
    got = (p.can_read(OWN), p.can_read(OTHER), p.can_write(OWN), p.can_write(OTHER))
    assert got == MATRIX[role]
    assert p.reads_everything is (role is not Role.SUBMITTER)
    assert p.is_operator is (role is Role.OPERATOR)
    assert p.actor == "token:3"


def test_every_role_is_in_the_matrix() -> None:
    assert set(MATRIX) == set(Role)


def test_principal_is_frozen() -> None:
    p = Principal(token_id=1, organisation_id=OWN, organisation="acme", role=Role.VIEWER)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.role = Role.OPERATOR  # type: ignore[misc]
