"""`rollbench frontier show|history` on a real store, and the terminal step plot."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import migrate
from orchestrator.cli import app
from orchestrator.config import get_settings
from orchestrator.db import make_engine
from orchestrator.frontier import plot
from orchestrator.frontier.pareto import AXES, AxisPoint, step_function

from .conftest import World

runner = CliRunner()


@pytest.fixture
def cli_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("ROLLBENCH_DATABASE_URL", url)
    monkeypatch.setenv("ROLLBENCH_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    migrate.upgrade(url)
    engine = make_engine(url)
    world = World(engine)
    workload_id = world.workload("chat-smoke")
    system_id = world.system("h100-vllm", org="acme")
    sub = world.submission(system_id, workload_id)
    first = world.points(sub, [(1, 100.0, 10.0), (4, 300.0, 12.0), (8, 250.0, 30.0)])
    world.apply(system_id, workload_id, first, submission_id=sub)
    world.apply(system_id, workload_id, world.points(sub, [(16, 800.0, 25.0)]), submission_id=sub)
    world.system("h100-vllm", org="globex")  # same name in another organisation
    yield world
    engine.dispose()
    get_settings.cache_clear()


def test_show_prints_table_and_step_plot(cli_world: World) -> None:
    r = runner.invoke(app, ["frontier", "show", "acme/h100-vllm", "chat-smoke"])
    assert r.exit_code == 0, r.output + str(r.stderr if r.stderr_bytes else "")
    out = r.output
    assert "frontier version 2" in out
    assert "on frontier" in out and "dominated by #" in out  # conc. 8 is worse than conc. 4
    assert "●" in out and "per-user TPS (1000/TPOT p90, tok/s)" in out
    assert "TPS (output tok/s)" in out
    r = runner.invoke(
        app,
        [
            "frontier",
            "show",
            "acme/h100-vllm",
            "chat-smoke",
            "--version",
            "1",
            "--slo",
            "interactive",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "admissible" in r.output and "quality: not measured" in r.output
    r = runner.invoke(
        app, ["frontier", "show", "1", "chat-smoke", "--x", "concurrency", "--y", "tps"]
    )
    assert r.exit_code == 0 and "measured curve" in r.output


def test_history_lists_versions(cli_world: World) -> None:
    r = runner.invoke(app, ["frontier", "history", "acme/h100-vllm", "chat-smoke"])
    assert r.exit_code == 0, r.output
    assert "frontier versions" in r.output and "#4" in r.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "h100-vllm", "chat-smoke"], "ambiguous"),
        (["show", "nope", "chat-smoke"], "no system"),
        (["show", "acme/h100-vllm", "nope"], "no workload"),
        (["show", "acme/h100-vllm", "chat-smoke", "--version", "9"], "no version 9"),
        (["show", "acme/h100-vllm", "chat-smoke", "--x", "speed"], "--x"),
        (["show", "acme/h100-vllm", "chat-smoke", "--slo", "nope"], "no SLO profile"),
        (["history", "globex/h100-vllm", "chat-smoke"], "no frontier"),
    ],
)
def test_mistakes_end_in_one_line_and_exit_2(
    cli_world: World, args: list[str], message: str
) -> None:
    r = runner.invoke(app, ["frontier", *args])
    assert r.exit_code == 2, r.output
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("rollbench: error:")
    assert message in lines[0]


def test_plot_draws_only_steps_through_measured_corners() -> None:
    x, y = AXES["tps_per_user"], AXES["tps"]
    points = [AxisPoint(1, 100.0, 100.0), AxisPoint(2, 40.0, 800.0), AxisPoint(3, 20.0, 1500.0)]
    text = plot.render(step_function(points, x, y), width=40, height=10)
    grid = [line.split("┤", 1)[1] for line in text.splitlines() if "┤" in line]
    assert len(grid) == 10 and all(len(row) == 40 for row in grid)
    assert sum(row.count("●") for row in grid) == 3
    assert not set("".join(grid)) - set(" ●─│└┘┌┐")  # no slope characters, ever
    # the best corner (highest TPS) is top-left, the best per-user one bottom-right
    assert grid[0][0] == "●" and grid[-1][-1] == "●"
    assert "1,500" in text and "100.0" in text and "higher is better" in text


def test_plot_of_nothing_says_so() -> None:
    text = plot.render(step_function([], AXES["tps_per_user"], AXES["tps"]))
    assert "no measured point" in text
