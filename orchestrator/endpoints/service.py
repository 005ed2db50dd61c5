"""Endpoints: register (URL checked, credentials sealed, the endpoint asked), read, update.

Credentials and extra headers are sealed with the active key before they touch the store
and are only unsealed to build the requests of a run; no read path returns them.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
from sqlmodel import Session, col, select

from orchestrator import secrets
from orchestrator.audit.service import record
from orchestrator.auth.service import Principal
from orchestrator.config import get_settings
from orchestrator.db import paginate
from orchestrator.endpoints.models import Endpoint
from orchestrator.endpoints.schemas import EndpointCreate, EndpointPublic, EndpointUpdate
from orchestrator.endpoints.urls import check_url
from orchestrator.errors import Forbidden, Invalid, NotFound
from orchestrator.systems.service import get_system

PROBE_TIMEOUT_S = 5.0
# RFC 9110 field names (tokens) and values that every client sends as they are: visible ASCII,
# spaces and tabs; no CR/LF (a second header smuggled in), no bytes httpx cannot encode.
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")


def create_endpoint(session: Session, *, principal: Principal, data: EndpointCreate) -> Endpoint:
    system = get_system(session, principal=principal, system_id=data.system_id)
    if not principal.can_write(system.organisation_id):
        raise Forbidden("this token may not register endpoints for that system")
    url = check_url(data.base_url, allow_private=get_settings().allow_private_endpoints)
    for name, value in data.headers.items():
        if not _HEADER_NAME.fullmatch(name) or name.lower() == "host":
            raise Invalid(f"header name {name[:120]!r} is not allowed", field="headers")
        if not _HEADER_VALUE.fullmatch(value):
            raise Invalid(
                f"header {name!r}: the value must be printable ASCII on one line", field="headers"
            )
    api_key = data.api_key.get_secret_value() if data.api_key else None
    if data.check:
        probe(
            url,
            api_key=api_key,
            headers=data.headers,
            served_model=data.served_model,
            verify_tls=data.verify_tls,
        )
    sealed, key_id = (None, None)
    if api_key is not None or data.headers:
        sealed, key_id = secrets.seal({"api_key": api_key, "headers": data.headers})
    endpoint = Endpoint(
        organisation_id=system.organisation_id,
        system_id=data.system_id,
        base_url=url,
        api=data.api,
        served_model=data.served_model,
        secrets_sealed=sealed,
        secrets_key_id=key_id,
        verify_tls=data.verify_tls,
        region=data.region,
        input_price_per_mtok=data.input_price_per_mtok,
        output_price_per_mtok=data.output_price_per_mtok,
        currency=data.currency,
    )
    session.add(endpoint)
    session.flush()
    assert endpoint.id is not None
    record(
        session,
        actor=principal.actor,
        organisation_id=endpoint.organisation_id,
        object_type="endpoint",
        object_id=endpoint.id,
        action="create",
    )
    return endpoint


def probe(
    url: str, *, api_key: str | None, headers: dict[str, str], served_model: str, verify_tls: bool
) -> None:
    """Ask GET {url}/models; raise `Invalid` saying why the endpoint cannot be used."""
    h = dict(headers)
    if api_key:
        h["Authorization"] = f"Bearer {api_key}"
    try:
        response = httpx.get(
            f"{url}/models",
            headers=h,
            timeout=PROBE_TIMEOUT_S,
            verify=verify_tls,
            follow_redirects=False,
        )
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise Invalid(
            f"the endpoint did not answer GET {url}/models: {exc}", field="base_url"
        ) from None
    if response.status_code in (401, 403):
        raise Invalid(
            f"the endpoint refused the credentials (HTTP {response.status_code})", field="api_key"
        )
    if response.status_code >= 500:
        raise Invalid(
            f"the endpoint answered HTTP {response.status_code} to GET /models", field="base_url"
        )
    try:
        ids = [m["id"] for m in response.json()["data"]]
    except (ValueError, KeyError, TypeError):
        return  # not every server lists its models; it answered, which is what we ask
    if ids and served_model not in ids:
        raise Invalid(f"the endpoint serves {ids[:5]}, not {served_model!r}", field="served_model")


def get_endpoint(session: Session, *, principal: Principal, endpoint_id: int) -> Endpoint:
    endpoint = session.get(Endpoint, endpoint_id)
    if endpoint is None or not principal.can_read(endpoint.organisation_id):
        raise NotFound(f"no endpoint {endpoint_id}")
    return endpoint


def list_endpoints(
    session: Session,
    *,
    principal: Principal,
    limit: int,
    offset: int,
    system_id: int | None = None,
    state: str | None = None,
) -> tuple[list[Endpoint], int]:
    query = principal.scope(select(Endpoint), Endpoint.organisation_id)
    if system_id is not None:
        query = query.where(Endpoint.system_id == system_id)
    if state is not None:
        query = query.where(Endpoint.state == state)
    return paginate(session, query, order_by=col(Endpoint.id), limit=limit, offset=offset)


def update_endpoint(
    session: Session, *, principal: Principal, endpoint_id: int, data: EndpointUpdate
) -> Endpoint:
    endpoint = get_endpoint(session, principal=principal, endpoint_id=endpoint_id)
    if not principal.can_write(endpoint.organisation_id):
        raise Forbidden("this token may not change that endpoint")
    before = endpoint.state
    if data.state is not None:
        endpoint.state = data.state
    if data.verify_tls is not None:
        endpoint.verify_tls = data.verify_tls
    if data.region is not None:
        endpoint.region = data.region
    if data.currency is not None:
        endpoint.currency = data.currency
    for price in ("input_price_per_mtok", "output_price_per_mtok"):
        if price in data.model_fields_set:
            setattr(endpoint, price, getattr(data, price))
    if data.api_key is not None:
        current = unsealed(endpoint)
        current["api_key"] = data.api_key.get_secret_value()
        endpoint.secrets_sealed, endpoint.secrets_key_id = secrets.seal(current)
    session.add(endpoint)
    assert endpoint.id is not None
    record(
        session,
        actor=principal.actor,
        organisation_id=endpoint.organisation_id,
        object_type="endpoint",
        object_id=endpoint.id,
        action="update",
        from_state=str(before),
        to_state=str(endpoint.state),
        data={"fields": sorted(data.model_fields_set)},
    )
    return endpoint


def unsealed(endpoint: Endpoint) -> dict[str, Any]:
    """The endpoint's credentials, for building requests. Never return this over the API."""
    if endpoint.secrets_sealed is None or endpoint.secrets_key_id is None:
        return {"api_key": None, "headers": {}}
    return secrets.unseal(endpoint.secrets_sealed, endpoint.secrets_key_id)


def to_public(endpoint: Endpoint) -> EndpointPublic:
    creds = unsealed(endpoint)
    headers = creds.get("headers") or {}
    assert isinstance(headers, dict)
    own = set(EndpointPublic.model_fields) - {"has_api_key", "header_names"}
    return EndpointPublic.model_validate(
        {
            **endpoint.model_dump(include=own),
            "has_api_key": bool(creds.get("api_key")),
            "header_names": sorted(headers),
        }
    )
