"""Terminal output of a sweep: live progress while a level runs, a table at the end.

Progress goes to stderr (so stdout can be piped), refreshed four times a second from the
counts the client processes report; nothing here touches the measurement path.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from orchestrator.loadgen.spec import SweepSpec
from orchestrator.loadgen.sweep import LevelResult, SweepResult


def _fmt(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


class LiveReporter:
    """Implements `SweepReporter` with a rich live line per level."""

    def __init__(self, spec: SweepSpec, console: Console | None = None) -> None:
        self.spec = spec
        self.console = console or Console(stderr=True)
        self._live: Live | None = None
        self._label = ""
        self._index = 0
        self._total = 0
        self._t0 = 0.0

    def __enter__(self) -> LiveReporter:
        self._live = Live(console=self.console, refresh_per_second=4, transient=True)
        self._live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)
            self._live = None

    def level_started(self, index: int, total: int, label: str) -> None:
        self._label, self._index, self._total = label, index, total
        self._t0 = time.monotonic()
        self.progress(0, 0, 0)

    def progress(self, issued: int, completed: int, failed: int) -> None:
        if self._live is None:
            return
        elapsed = time.monotonic() - self._t0
        goal = []
        if self.spec.requests is not None and self.spec.pattern != "offline":
            goal.append(f"{completed}/{self.spec.requests} req")
        if self.spec.min_duration_s is not None:
            goal.append(f"{elapsed:.0f}/{self.spec.min_duration_s:g} s")
        rate = completed / elapsed if elapsed > 0 else 0.0
        line = Text.assemble(
            (f"level {self._index + 1}/{self._total} ", "bold"),
            (self._label, "cyan"),
            f"  issued {issued}  done {completed}  ",
            (f"failed {failed}", "red" if failed else "green"),
            f"  {rate:,.1f} req/s  {elapsed:.1f} s  ",
            " · ".join(goal),
        )
        self._live.update(line)

    def level_finished(self, result: LevelResult) -> None:
        r = result.row()
        status = "ok" if r["valid"] else "INVALID"
        self.console.print(
            f"[bold]{result.label}[/]: {r['succeeded']}/{r['issued']} ok, "
            f"{_fmt(r['qps'], 2)} req/s, TTFT p99 {_fmt(r['ttft_p99_ms'])} ms  [{status}]"
        )


def sweep_table(result: SweepResult) -> Table:
    table = Table(title=f"rollbench sweep → {result.out_dir}", title_justify="left")
    for name in [
        "level",
        "ok/sent",
        "QPS",
        "TPS",
        "TTFT p50 p99",
        "TPOT p50 p99",
        "E2E p99",
        "tok/s/u",
        "err %",
        "valid",
    ]:
        table.add_column(name, justify="left" if name == "level" else "right", no_wrap=True)
    for level in result.levels:
        r = level.row()
        err = r["error_rate"]
        table.add_row(
            level.label.split("-", 1)[1],
            f"{r['succeeded']}/{r['issued']}",
            _fmt(r["qps"], 2),
            _fmt(r["tps"], 0),
            f"{_fmt(r['ttft_p50_ms'])} {_fmt(r['ttft_p99_ms'])}",
            f"{_fmt(r['tpot_p50_ms'], 2)} {_fmt(r['tpot_p99_ms'], 2)}",
            _fmt(r["latency_p99_ms"]),
            _fmt(r["tps_per_user_v1"]),
            "—" if err is None else f"{100 * err:.2f}",
            "yes" if r["valid"] else "NO",
        )
    return table


def print_sweep(result: SweepResult, console: Console | None = None) -> None:
    # A pipe or a log file gets the whole table rather than 80 truncated columns.
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    pattern = result.levels[0].label.split("-", 1)[0] if result.levels else ""
    console.print(sweep_table(result))
    console.print(
        f"level = {pattern}; times in ms; tok/s/u = 1000 / TPOT p90 (v1.0 rules); "
        f"tokens counted by {result.token_counting}"
    )
    for level in result.levels:
        r = level.row()
        lo, hi = r["error_rate_wilson95"]
        if r["failed"]:
            console.print(
                f"{level.label}: error rate 95 % interval {100 * lo:.2f}–{100 * hi:.2f} %",
                style="red",
            )
        for reason in r["invalid_reasons"]:
            console.print(f"{level.label}: invalid — {reason}", style="yellow")
    failures: dict[str, int] = {}
    for level in result.levels:
        for k, v in level.row()["failure_counts"].items():
            failures[k] = failures.get(k, 0) + v
    if failures:
        console.print(
            "failures: " + ", ".join(f"{k} {v}" for k, v in sorted(failures.items())),
            style="red",
        )
    if result.interrupted:
        console.print("INTERRUPTED: the last level stopped early", style="yellow")
