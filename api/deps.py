"""Dependencies of every route: a database session and the caller's principal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Header, HTTPException, Path, Query, Request
from sqlmodel import Session

from orchestrator.auth.service import Principal, authenticate
from orchestrator.db import MAX_ID


def get_session(request: Request) -> Iterator[Session]:
    with Session(request.app.state.engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


SessionDep = Annotated[Session, Depends(get_session)]


def get_principal(
    session: SessionDep, authorization: Annotated[str | None, Header()] = None
) -> Principal:
    if not authorization or not authorization.lower().startswith("bearer "):
        raise HTTPException(401, "missing bearer token", headers={"WWW-Authenticate": "Bearer"})
    principal = authenticate(session, token=authorization[7:].strip())
    if principal is None:
        raise HTTPException(401, "invalid or revoked token", headers={"WWW-Authenticate": "Bearer"})
    return principal


PrincipalDep = Annotated[Principal, Depends(get_principal)]


class Page:
    def __init__(
        self,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    ) -> None:
        self.limit = limit
        self.offset = offset


PageDep = Annotated[Page, Depends()]

# An object's id in a path: a number the store's id columns can hold, else 422, never a 500.
IdPath = Annotated[int, Path(ge=1, le=MAX_ID)]
