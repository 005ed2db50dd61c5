"""`rollbench import mlperf` and `rollbench export ...` on a real store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from interop.interop_helpers import REFERENCE
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.config import get_settings


@pytest.fixture
def cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CliRunner]:
    monkeypatch.setenv("ROLLBENCH_DATABASE_URL", db_url)
    monkeypatch.setenv("ROLLBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")
    get_settings.cache_clear()
    yield CliRunner()
    get_settings.cache_clear()


def test_import_prints_the_points_and_the_frontier_version(cli: CliRunner, tmp_path: Path) -> None:
    args = [
        "import",
        "mlperf",
        str(REFERENCE / "run_conc16"),
        "--system",
        "ref",
        "--workload",
        "synthetic-chat",
    ]
    missing = cli.invoke(app, args)
    assert missing.exit_code == 2 and "no system 'ref'" in missing.stderr
    done = cli.invoke(app, [*args, "--org", "mlc"])
    assert done.exit_code == 0, done.stderr
    assert "34.52" in done.stdout and "6,910.4" in done.stdout  # QPS, TPS
    assert "147.86" in done.stdout and "2.049" in done.stdout  # TTFT p99, TPOT p90 (ms)
    assert "frontier version 1" in done.stdout
    again = cli.invoke(
        app,
        [
            "import",
            "mlperf",
            str(REFERENCE / "run_flaky"),
            "--system",
            "ref",
            "--workload",
            "synthetic-chat",
        ],
    )
    assert again.exit_code == 0 and "frontier version 2" in again.stdout

    out = tmp_path / "out"
    frontier = cli.invoke(app, ["export", "frontier", "ref", "synthetic-chat", "--out", str(out)])
    assert frontier.exit_code == 0, frontier.stderr
    assert "frontier version 2" in frontier.stdout
    [summary] = out.rglob("r16/result_summary.json")
    assert json.loads(summary.read_text())["n_samples_failed"] == 40
    old = cli.invoke(
        app,
        [
            "export",
            "frontier",
            "ref",
            "synthetic-chat",
            "--out",
            str(tmp_path / "v1"),
            "--version",
            "1",
        ],
    )
    assert old.exit_code == 0 and "frontier version 1" in old.stdout
    [first] = (tmp_path / "v1").rglob("r16/result_summary.json")
    assert json.loads(first.read_text())["n_samples_failed"] == 0

    v07 = cli.invoke(app, ["export", "point", "1", "--out", str(tmp_path / "p"), "--format", "v07"])
    assert v07.exit_code == 0, v07.stderr
    meta = json.loads(Path(v07.stdout.strip()).read_text())
    assert meta["measured_total_requests"] == 400 and meta["concurrency"] == 16
    v1 = cli.invoke(app, ["export", "point", "2", "--out", str(tmp_path / "p1")])
    assert v1.exit_code == 0 and "check-submission" in v1.stdout


def test_cli_errors_are_one_line_naming_file_and_field(cli: CliRunner, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    (bad / "performance").mkdir(parents=True)
    (bad / "config.yaml").write_text((REFERENCE / "run_conc16" / "config.yaml").read_text())
    doc = json.loads((REFERENCE / "run_conc16/performance/result_summary.json").read_text())
    doc["ttft"]["percentiles"]["99.0"] = "147860998.0"
    (bad / "performance" / "result_summary.json").write_text(json.dumps(doc))
    done = cli.invoke(
        app,
        [
            "import",
            "mlperf",
            str(bad),
            "--system",
            "s",
            "--workload",
            "synthetic-chat",
            "--org",
            "acme",
        ],
    )
    assert done.exit_code == 2
    [line] = done.stderr.strip().splitlines()
    assert "result_summary.json: ttft.percentiles.99.0: must be a JSON number" in line
    # nothing was imported, not even the system
    listing = cli.invoke(
        app, ["export", "frontier", "s", "synthetic-chat", "--out", str(tmp_path / "o")]
    )
    assert listing.exit_code == 2 and "no organisation" not in listing.stderr
    assert "no system 's'" in listing.stderr
    for args, words in (
        (["export", "point", "99", "--out", str(tmp_path)], "no point 99"),
        (["export", "point", "1", "--out", str(tmp_path), "--format", "v2"], "--format"),
        (
            [
                "import",
                "mlperf",
                str(tmp_path / "nope"),
                "--system",
                "s",
                "--workload",
                "synthetic-chat",
                "--org",
                "acme",
            ],
            "does not exist",
        ),
        (
            [
                "import",
                "mlperf",
                str(REFERENCE),
                "--system",
                "s",
                "--workload",
                "nope",
                "--org",
                "acme",
            ],
            "no workload nope",
        ),
    ):
        result = cli.invoke(app, args)
        assert result.exit_code == 2 and words in result.stderr, (args, result.stderr)
