"""`rollbench up --demo`: two simulated systems, a demo organisation, and a sweep of each.

The two systems are built to trade latency against throughput, as real deployments do:
`sim-small` runs small batches with fast steps (quick tokens, a low ceiling), `sim-large`
runs big batches with slower steps (more requests per second, slower tokens). Which one
"wins" therefore depends on the SLO it is ranked under — the point of admissible throughput.

Everything after the token is done over the REST API, exactly as the README shows a user
doing it with curl. Run again, each simulator comes back on the port it was registered
with, and unfinished sweeps continue.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from sqlmodel import col, select

from orchestrator.auth.models import Organisation, Role
from orchestrator.auth.service import create_token
from orchestrator.db import get_engine, session_scope
from orchestrator.endpoints.models import Endpoint
from orchestrator.simulator import SimulatorConfig, start_in_process
from orchestrator.systems.models import System

DEMO_ORG = "demo"
DEMO_LEVELS = [1, 2, 4, 8, 16, 32, 64]
DEMO_LEVEL_S = 4.0

SYSTEMS: dict[str, tuple[SimulatorConfig, dict[str, Any]]] = {
    "sim-small": (
        SimulatorConfig(
            mode="batching", max_batch=8, decode_step_ms=4.0, decode_step_ms_per_seq=0.5, seed=1
        ),
        {"accelerator_model": "simulated-s", "accelerator_count": 1, "price_per_hour": 2.0},
    ),
    "sim-large": (
        SimulatorConfig(
            mode="batching", max_batch=64, decode_step_ms=20.0, decode_step_ms_per_seq=0.3, seed=2
        ),
        {"accelerator_model": "simulated-l", "accelerator_count": 4, "price_per_hour": 6.0},
    ),
}


@dataclass
class DemoSimulators:
    """The running simulators (`stack` stops them) and whether they were registered before."""

    stack: contextlib.ExitStack
    urls: dict[str, str]
    registered: bool


def start_simulators() -> DemoSimulators:
    """Start the demo's simulators, each on the port it was registered with if it was.

    Called before the daemon starts, so that a worker resuming an unfinished sweep never
    finds its endpoint still down (it would measure every request failing, honestly).
    """
    with session_scope(get_engine()) as session:
        rows = session.exec(
            select(System.name, Endpoint.base_url)
            .join(Endpoint, col(Endpoint.system_id) == System.id)
            .join(Organisation, col(Organisation.id) == System.organisation_id)
            .where(Organisation.name == DEMO_ORG)
        ).all()
    ports = {name: urlsplit(url).port for name, url in rows}
    stack = contextlib.ExitStack()
    urls: dict[str, str] = {}
    try:
        for name, (config, _) in SYSTEMS.items():
            urls[name] = stack.enter_context(start_in_process(config, port=ports.get(name) or 0))
    except BaseException:
        stack.close()
        raise
    return DemoSimulators(stack, urls, registered=bool(ports))


def run_demo(api_url: str, sims: DemoSimulators) -> None:
    """Register the simulators and submit a sweep of each (the first time only)."""
    urls = sims.urls
    if sims.registered:
        print(
            "demo: simulated endpoints back on "
            + ", ".join(f"{n} {u}" for n, u in urls.items())
            + "; unfinished submissions continue."
        )
        return
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

    lines = []
    for name, (config, declared) in SYSTEMS.items():
        system = post(
            "/v1/systems",
            {
                "name": name,
                "accelerator_model": declared["accelerator_model"],
                "accelerator_count": declared["accelerator_count"],
                "runtime": "rollbench-simulator",
                "runtime_version": "1",
                "model": "sim-model",
                "max_concurrency": DEMO_LEVELS[-1],
                "price_per_hour": declared["price_per_hour"],
                "topology": {"tensor_parallel": declared["accelerator_count"]},
            },
        )
        endpoint = post(
            "/v1/endpoints",
            {
                "system_id": system["id"],
                "base_url": urls[name],
                "served_model": config.served_model,
            },
        )
        submission = post(
            "/v1/submissions",
            {
                "system_id": system["id"],
                "endpoint_id": endpoint["id"],
                "workload": "synthetic-chat",
                "levels": DEMO_LEVELS,
                "requests": 4,
                "min_duration_s": DEMO_LEVEL_S,
                "server_config": {
                    "mode": config.mode,
                    "max_batch": config.max_batch,
                    "tensor_parallel": declared["accelerator_count"],
                },
            },
        )
        lines.append(
            f"  {name:10} {urls[name]}  system {system['id']}, submission {submission['id']}"
        )
    print(
        "\ndemo: two simulated systems, each swept at concurrency "
        + ", ".join(map(str, DEMO_LEVELS))
        + f" ({DEMO_LEVEL_S:g} s per level, about a minute and a half in all):\n"
        + "\n".join(lines)
        + f"""

  export RB={api_url} TOKEN={token}
  curl -s -H "Authorization: Bearer $TOKEN" $RB/v1/submissions       # progress
  rollbench review list                          # (operator, another shell) once measured
"""
    )
