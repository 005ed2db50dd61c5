"""The command line as a user meets it: real processes, real ports, exit statuses."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]


def rollbench(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def simulator() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "orchestrator.cli",
            "simulate",
            "--port",
            str(port),
            "--ttft-ms",
            "30",
            "--tpot-ms",
            "3",
            "--output-tokens",
            "20",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{url}/models", timeout=1)
            break
        except httpx.HTTPError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("simulator did not start") from None
            time.sleep(0.1)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "--model", "m", "--out", "x"], "--url"),
        (["run", "--url", "http://h", "--model", "m", "--out", "x", "--levels", "1,a"], "--levels"),
        (["run", "--url", "ftp://h", "--model", "m", "--out", "x", "--requests", "3"], "--url"),
        (
            ["run", "--url", "http://h", "--model", "m", "--out", "x", "--requests", "-3"],
            "--requests",
        ),
        (
            ["run", "--url", "http://h", "--model", "m", "--out", "x", "--requests", "abc"],
            "--requests",
        ),
        (
            [
                "run",
                "--url",
                "http://h",
                "--model",
                "m",
                "--out",
                "x",
                "--pattern",
                "zig",
                "--requests",
                "3",
            ],
            "--pattern",
        ),
        (
            ["run", "--url", "http://h", "--model", "m", "--out", "x", "--dataset", "/nope.jsonl"],
            "--dataset",
        ),
        (
            ["run", "--url", "http://h", "--model", "m", "--out", "x", "--synthetic", "isl=x"],
            "--synthetic",
        ),
        (
            [
                "run",
                "--url",
                "http://h",
                "--model",
                "m",
                "--out",
                "x",
                "--requests",
                "2",
                "--api-key-env",
                "ROLLBENCH_SURELY_UNSET",
            ],
            "ROLLBENCH_SURELY_UNSET",
        ),
        (
            [
                "run",
                "--url",
                "http://h",
                "--model",
                "m",
                "--out",
                "x",
                "--requests",
                "2",
                "--extra-body",
                "[1]",
            ],
            "--extra-body",
        ),
        (["simulate", "--mode", "warp"], "mode"),
        (["frobnicate"], "frobnicate"),
    ],
)
def test_bad_arguments_give_one_line_and_status_2(args: list[str], needle: str) -> None:
    proc = rollbench(*args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("rollbench: error:") and needle in lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout


def test_bad_dataset_line_names_file_and_line(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"prompt": "hi"}\n{"messages": 3}\n')
    proc = rollbench(
        "run",
        "--url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--out",
        str(tmp_path / "o"),
        "--requests",
        "2",
        "--dataset",
        str(data),
    )
    assert proc.returncode == 2
    assert f"{data}:2" in proc.stderr and "messages" in proc.stderr


def test_unreachable_endpoint_writes_a_run_folder(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = rollbench(
        "run",
        "--url",
        f"http://127.0.0.1:{free_port()}/v1",
        "--model",
        "m",
        "--out",
        str(out),
        "--levels",
        "1,2",
        "--requests",
        "5",
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "every one of the 10 requests failed" in proc.stderr
    summary = json.loads((out / "sweep_summary.json").read_text())
    assert [lv["failure_counts"] for lv in summary["levels"]] == [{"connect": 5}, {"connect": 5}]


def test_simulate_then_run_matches_the_truth(simulator: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = rollbench(
        "run",
        "--url",
        simulator,
        "--model",
        "sim-model",
        "--out",
        str(out),
        "--levels",
        "1,4",
        "--requests",
        "40",
        "--warmup",
        "4",
        "--synthetic",
        "isl=32,osl=64",
    )
    assert proc.returncode == 0, proc.stderr
    assert "TTFT" in proc.stdout and "concurrency" in proc.stdout
    levels = json.loads((out / "sweep_summary.json").read_text())["levels"]
    assert [lv["level"] for lv in levels] == [1, 4]
    for lv in levels:
        assert lv["succeeded"] == 40 and lv["valid"]
        assert 29.5 <= lv["ttft_p50_ms"] <= 33  # configured 30 ms
        assert 2.8 <= lv["tpot_p50_ms"] <= 3.25  # configured 3 ms
        # latency 30 + 19 × 3 = 87 ms → at concurrency c about c / 0.087 requests/s
        assert 0.8 * lv["level"] / 0.087 <= lv["qps"] <= 1.02 * lv["level"] / 0.087
    result = json.loads((out / "concurrency-4" / "performance" / "result_summary.json").read_text())
    assert result["n_samples_issued"] == 40
    assert result["rollbench"]["spec"]["endpoint"]["url"] == simulator
