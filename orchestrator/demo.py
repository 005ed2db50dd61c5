"""`rollbench up --demo`: a simulated endpoint, a demo organisation, and a first sweep.

Everything after the token is done over the REST API, exactly as the README shows a user
doing it with curl.
"""

from __future__ import annotations

import contextlib
from typing import Any
from urllib.parse import urlsplit

import httpx
from sqlmodel import col, select

from orchestrator.auth.models import Organisation, Role
from orchestrator.auth.service import create_token
from orchestrator.db import get_engine, session_scope
from orchestrator.endpoints.models import Endpoint
from orchestrator.simulator import SimulatorConfig, start_in_process

DEMO_ORG = "demo"


def run_demo(api_url: str) -> contextlib.AbstractContextManager[str]:
    """Start the simulator, register it, submit a 3-level sweep; return the simulator's
    context manager (the caller stops it). Run again, it brings the simulator back on the
    port it was registered with, and the unfinished sweep continues."""
    config = SimulatorConfig(mode="batching", output_tokens=64, seed=1)
    with session_scope(get_engine()) as session:
        previous = session.exec(
            select(Endpoint)
            .join(Organisation, col(Organisation.id) == Endpoint.organisation_id)
            .where(Organisation.name == DEMO_ORG)
            .order_by(col(Endpoint.id).desc())
        ).first()
        port = urlsplit(previous.base_url).port if previous is not None else None
    sim = start_in_process(config, port=port or 0)
    sim_url = sim.__enter__()
    if previous is not None:
        print(
            f"demo: simulated endpoint back on {sim_url}; unfinished submissions continue "
            "(GET /v1/submissions with the demo token printed before, or "
            "`rollbench token create --org demo --role submitter`)."
        )
        return sim
    with session_scope(get_engine()) as session:
        _, token = create_token(
            session, organisation=DEMO_ORG, role=Role.SUBMITTER, label="rollbench up --demo"
        )
    headers = {"Authorization": f"Bearer {token}"}

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        r = httpx.post(f"{api_url}{path}", json=body, headers=headers, timeout=30)
        if r.status_code >= 400:
            raise RuntimeError(f"demo: POST {path} answered {r.status_code}: {r.text}")
        return dict(r.json())

    system = post(
        "/v1/systems",
        {
            "name": f"sim-batching-{sim_url.rsplit(':', 1)[1][:-3]}",
            "accelerator_model": "simulated",
            "runtime": "rollbench",
        },
    )
    endpoint = post(
        "/v1/endpoints",
        {"system_id": system["id"], "base_url": sim_url, "served_model": config.served_model},
    )
    submission = post(
        "/v1/submissions",
        {
            "system_id": system["id"],
            "endpoint_id": endpoint["id"],
            "workload": "synthetic-chat",
            "levels": [1, 4, 16],
            "requests": 40,
            "server_config": {"mode": "batching"},
        },
    )
    sid = submission["id"]
    print(f"""
demo: simulated endpoint {sim_url} registered as endpoint {endpoint["id"]} of system \
{system["id"]}; submission {sid} measures concurrency 1, 4, 16 (24 requests each).

  export RB={api_url} TOKEN={token}
  curl -s -H "Authorization: Bearer $TOKEN" $RB/v1/submissions/{sid}       # progress per level
  curl -s -H "Authorization: Bearer $TOKEN" $RB/v1/runs/<run id>/result_summary.json
""")
    return sim
