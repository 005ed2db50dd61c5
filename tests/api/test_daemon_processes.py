"""The daemon as separate processes, as an operator starts them by hand, on both stores.

embedded: SQLite + kombu's SQLAlchemy broker (no server); distributed: PostgreSQL + Redis on
127.0.0.1. `rollbench migrate`, `rollbench token create`, `rollbench api`, `rollbench
worker` and `rollbench scheduler` run as subprocesses; everything else goes over HTTP.

The kill test SIGKILLs the worker while it measures the second of three levels, starts a new
one, and checks that every level ends measured exactly once: the interrupted run is claimed
again when its lease runs out and measured from scratch (attempt 2); one point per level;
the half-measured attempt is not what the run points to.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator.simulator import Simulator, SimulatorConfig, start_in_thread

ROOT = Path(__file__).resolve().parents[2]
REDIS_DB = 14  # this test's own Redis database, emptied before use


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Stack:
    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env = env
        self.logs = logs
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def cli(self, *args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "orchestrator.cli", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    def start(self, name: str, *args: str) -> None:
        log = (self.logs / f"{name}.log").open("ab")
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.cli", *args],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs.pop(name)
        os.killpg(proc.pid, sig)  # the worker and the load generator's processes
        proc.wait(20)

    def stop_all(self) -> None:
        for name in list(self.procs):
            proc = self.procs[name]
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGQUIT if name == "worker" else signal.SIGTERM)
        for name in list(self.procs):
            try:
                self.procs[name].wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.procs[name].pid, signal.SIGKILL)
            del self.procs[name]

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError("API not ready:\n" + (self.logs / "api.log").read_text()[-3000:])


@pytest.fixture(params=["embedded", "distributed"])
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stack]:
    env = {
        **os.environ,
        "ROLLBENCH_DATA_DIR": str(tmp_path / "data"),
        "ROLLBENCH_RUN_LEASE_S": "3",
        "ROLLBENCH_RECOVERY_INTERVAL_S": "1",
    }
    env.pop("ROLLBENCH_DATABASE_URL", None)
    env.pop("ROLLBENCH_BROKER_URL", None)
    if request.param == "distributed":
        import redis

        env["ROLLBENCH_DATABASE_URL"] = str(request.getfixturevalue("pg_url"))
        env["ROLLBENCH_BROKER_URL"] = f"redis://127.0.0.1:6379/{REDIS_DB}"
        redis.Redis(host="127.0.0.1", port=6379, db=REDIS_DB).flushdb()
    s = Stack(env, tmp_path)
    s.cli("migrate")
    s.start("api", "api", "--port", str(s.port))
    s.start("worker", "worker")
    s.start("scheduler", "scheduler")
    s.wait_ready()
    try:
        yield s
    finally:
        s.stop_all()


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    with start_in_thread(SimulatorConfig(ttft_ms=10, tpot_ms=2, output_tokens=16)) as s:
        yield s


def submit(
    stack: Stack, sim: Simulator, levels: list[int], requests: int
) -> tuple[dict[str, str], int]:
    token = stack.cli("token", "create", "--org", "acme", "--role", "submitter").strip()
    h = {"Authorization": f"Bearer {token}"}
    api = httpx.Client(base_url=stack.url, headers=h, timeout=30)
    system = api.post("/v1/systems", json={"name": "sim"}).json()
    endpoint = api.post(
        "/v1/endpoints",
        json={"system_id": system["id"], "base_url": sim.url, "served_model": "sim-model"},
    )
    assert endpoint.status_code == 201, endpoint.text
    r = api.post(
        "/v1/submissions",
        json={
            "system_id": system["id"],
            "endpoint_id": endpoint.json()["id"],
            "workload": "synthetic-chat",
            "levels": levels,
            "requests": requests,
            "warmup": 0,
        },
    )
    assert r.status_code == 201, r.text
    return h, int(r.json()["id"])


def get(stack: Stack, h: dict[str, str], path: str) -> Any:
    r = httpx.get(f"{stack.url}{path}", headers=h, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def wait_until(
    stack: Stack, h: dict[str, str], sub_id: int, ok: Any, timeout_s: float = 120
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = get(stack, h, f"/v1/submissions/{sub_id}")
        if ok(body):
            return dict(body)
        time.sleep(0.2)
    logs = "\n".join((stack.logs / f"{n}.log").read_text()[-2000:] for n in ("worker", "api"))
    raise AssertionError(f"timed out; submission: {body}\n{logs}")


def test_flow_over_separate_processes(stack: Stack, sim: Simulator) -> None:
    h, sub_id = submit(stack, sim, [1, 2, 4], 20)
    done = wait_until(stack, h, sub_id, lambda b: b["state"] in ("in_review", "failed"))
    assert done["state"] == "in_review"
    for run in done["runs"]:
        assert run["summary"]["row"]["succeeded"] == 20
        doc = get(stack, h, f"/v1/runs/{run['id']}/result_summary.json")
        assert doc["n_samples_issued"] == 20 and doc["ttft"]["percentiles"]["50.0"] > 0


def test_worker_killed_mid_sweep_then_restarted(stack: Stack, sim: Simulator) -> None:
    # ~45 ms per request: level 1 takes ~2.7 s, level 2 ~1.4 s... long enough to be hit
    h, sub_id = submit(stack, sim, [1, 2, 4], 60)
    wait_until(
        stack,
        h,
        sub_id,
        lambda b: (
            b["runs"][1]["state"] == "running" and b["runs"][1]["progress"].get("completed", 0) > 0
        ),
    )
    stack.kill("worker")  # SIGKILL: no goodbye, its lease stays until it runs out
    killed = get(stack, h, f"/v1/submissions/{sub_id}")
    assert [r["state"] for r in killed["runs"]] == ["finished", "running", "planned"]
    stack.start("worker", "worker")
    done = wait_until(stack, h, sub_id, lambda b: b["state"] in ("in_review", "failed"))
    assert done["state"] == "in_review", done
    runs = done["runs"]
    assert [r["state"] for r in runs] == ["finished"] * 3
    assert [r["attempts"] for r in runs] == [1, 2, 1]  # only the killed one again, once
    for run in runs:
        row = run["summary"]["row"]
        assert row["issued"] == row["succeeded"] == 60  # a whole level, not a remainder
    assert "attempt-2" in runs[1]["summary"]["result_summary_path"]


def test_up_stopped_and_started_again_mid_sweep(tmp_path: Path, sim: Simulator) -> None:
    env = {
        **os.environ,
        "ROLLBENCH_DATA_DIR": str(tmp_path / "data"),
        "ROLLBENCH_RECOVERY_INTERVAL_S": "1",
    }
    env.pop("ROLLBENCH_DATABASE_URL", None)
    env.pop("ROLLBENCH_BROKER_URL", None)
    stack = Stack(env, tmp_path)

    def up() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.cli", "up", "--port", str(stack.port)],
            cwd=ROOT,
            env=env,
            stdout=(tmp_path / "up.log").open("ab"),
            stderr=subprocess.STDOUT,
        )
        stack.wait_ready()
        return proc

    daemon = up()
    h, sub_id = submit(stack, sim, [1, 2, 4], 60)
    wait_until(
        stack,
        h,
        sub_id,
        lambda b: (
            b["runs"][1]["state"] == "running" and b["runs"][1]["progress"].get("completed", 0) > 0
        ),
    )
    daemon.send_signal(signal.SIGTERM)  # as a service manager stops it
    assert daemon.wait(60) == 0
    with pytest.raises(httpx.HTTPError):  # the API is gone with it
        httpx.get(f"{stack.url}/healthz", timeout=2)
    daemon = up()
    try:
        done = wait_until(stack, h, sub_id, lambda b: b["state"] in ("in_review", "failed"))
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(60)
    assert done["state"] == "in_review", done
    assert [r["attempts"] for r in done["runs"]] == [1, 2, 1]
    assert all(r["summary"]["row"]["succeeded"] == 60 for r in done["runs"])
