"""The rolling-submission walkthrough of the README, as a new user runs it, end to end.

`rollbench up --demo` starts the daemon and two simulated systems that trade latency for
throughput (`sim-small`: small batches, fast tokens; `sim-large`: big batches, slow tokens)
and submits a 7-level sweep of each. It is stopped mid-sweep and started again, which must
lose nothing and measure nothing against a simulator that is not back yet. The worker
measures the sweeps and the checker puts them in the review queue; an operator accepts them
with `rollbench review accept`; `rollbench rank` then has to name a different winner at a
tight SLO (`realtime`: TPOT p90 <= 20 ms, which only the small batches meet) than at a loose
one (`batch`: the most requests/s wins); the frontier shows; and an exported bundle passes
MLCommons' own submission checker's metric consistency rules. Everything runs on 127.0.0.1
and stops by itself.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

LEVELS = 7
DEADLINE_S = 420


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_cli(env: dict[str, str], cwd: Path, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, f"rollbench {' '.join(args)}: {out.stderr}\n{out.stdout}"
    return out.stdout


def test_demo_review_rank_frontier_export(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLBENCH_")}
    env["ROLLBENCH_DATA_DIR"] = str(tmp_path / "rollbench-data")
    env["COLUMNS"] = "200"
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    up = _start_up(env, tmp_path, port)
    try:
        token = run_cli(env, tmp_path, "token", "create", "--org", "mlc", "--role", "operator")
        headers = {"Authorization": f"Bearer {token.strip()}"}
        _wait_for_a_measured_level(api, headers, tmp_path / "up.log")
        _stop(up)  # mid-sweep, as Ctrl-C would
        up = _start_up(env, tmp_path, port)
        _walk_through(env, tmp_path, api, headers)
    finally:
        _stop(up)


def _start_up(env: dict[str, str], cwd: Path, port: int) -> subprocess.Popen[bytes]:
    log = (cwd / "up.log").open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "up", "--demo", "--port", str(port)],
        cwd=cwd,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _stop(up: subprocess.Popen[bytes]) -> None:
    if up.poll() is None:
        os.killpg(up.pid, signal.SIGTERM)
    try:
        up.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(up.pid, signal.SIGKILL)
        up.wait(10)


def _wait_for_a_measured_level(api: str, headers: dict[str, str], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            r = httpx.get(f"{api}/v1/points", headers=headers, timeout=5)
            if r.status_code == 200 and r.json()["total"] > 0:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError("no level measured in 120 s:\n" + log.read_text()[-3000:])


def _walk_through(env: dict[str, str], cwd: Path, api: str, headers: dict[str, str]) -> None:
    queue = _wait_for_queue(api, headers, cwd / "up.log")
    assert {item["system"] for item in queue} == {"sim-small", "sim-large"}
    assert all(item["points"] == LEVELS and item["blocking"] == 0 for item in queue), queue

    # the operator reviews and accepts each submission
    for item in queue:
        sid = str(item["submission_id"])
        shown = run_cli(env, cwd, "review", "show", sid)
        assert "littles_law" in shown and "regions.coverage" in shown
        accepted = run_cli(env, cwd, "review", "accept", sid, "--comment", "checked")
        assert "the submission is accepted" in accepted

    # who serves most requests/s depends on the SLO
    tight = json.loads(run_cli(env, cwd, "rank", "synthetic-chat", "--slo", "realtime", "--json"))
    loose = json.loads(run_cli(env, cwd, "rank", "synthetic-chat", "--slo", "batch", "--json"))
    assert _winner(tight) == "demo/sim-small", tight["rows"]
    assert _winner(loose) == "demo/sim-large", loose["rows"]
    large_tight = next(r for r in tight["rows"] if r["system"] == "demo/sim-large")
    assert large_tight["admissible_points"] == 0 and "TPOT" in large_tight["reason"]
    assert tight["quality"] == "not measured"
    small_loose = next(r for r in loose["rows"] if r["system"] == "demo/sim-small")
    assert loose["rows"][0]["best_qps"] > small_loose["best_qps"] * 1.2
    table = run_cli(env, cwd, "rank", "synthetic-chat", "--slo", "realtime")
    assert "sim-small" in table and "quality: not measured" in table

    frontier = run_cli(
        env, cwd, "frontier", "show", "sim-small", "synthetic-chat", "--slo", "realtime"
    )
    assert "frontier version 1" in frontier and "on frontier" in frontier
    assert "TTFT p90" in frontier  # an inadmissible point says why

    # an exported frontier passes the official checker's metric consistency rules
    out = cwd / "bundle"
    run_cli(env, cwd, "export", "frontier", "sim-large", "synthetic-chat", "--out", str(out))
    (submission,) = [p for p in (out / "demo").iterdir() if p.is_dir()]
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "endpoints_submission_cli",
            "check-submission",
            str(submission),
            "-j",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(checked.stdout)
    metric = [
        r for r in report["results"] if str(r.get("rule", "")).startswith("metric-consistency")
    ]
    assert len(metric) == 6 * LEVELS, [r.get("rule") for r in metric]
    assert all(r["passed"] is True for r in metric), [r for r in metric if not r["passed"]]


def _winner(ranking: dict[str, Any]) -> str:
    first = ranking["rows"][0]
    assert first["admissible_points"] > 0, ranking["rows"]
    return str(first["system"])


def _wait_for_queue(api: str, headers: dict[str, str], log: Path) -> list[dict[str, Any]]:
    deadline = time.monotonic() + DEADLINE_S
    items: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            r = httpx.get(f"{api}/v1/review/queue", headers=headers, timeout=5)
            if r.status_code == 200:
                items = r.json()["items"]
                if len(items) == 2:
                    return items
        except httpx.HTTPError:
            pass
        time.sleep(2)
    raise AssertionError(f"review queue after {DEADLINE_S} s: {items}\n{log.read_text()[-3000:]}")
