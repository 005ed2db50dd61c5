"""Terminal output of a sweep: live progress while a level runs, a table at the end.

Progress goes to stderr (so stdout can be piped), refreshed four times a second from the
counts the client processes report; nothing here touches the measurement path.
"""

from __future__ import annotations

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
    for name, justify in [
        ("level", "left"),
        ("ok/issued", "right"),
        ("QPS", "right"),
        ("TPS", "right"),
        ("TTFT p50/p99 ms", "right"),
        ("TPOT p50/p99 ms", "right"),
        ("E2E p99 ms", "right"),
        ("tok/s/user", "right"),
        ("errors % [95% CI]", "right"),
        ("harness", "left"),
    ]:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for level in result.levels:
        r = level.row()
        err = r["error_rate"]
        lo, hi = r["error_rate_wilson95"]
        table.add_row(
            level.label,
            f"{r['succeeded']}/{r['issued']}",
            _fmt(r["qps"], 2),
            _fmt(r["tps"], 0),
            f"{_fmt(r['ttft_p50_ms'])}/{_fmt(r['ttft_p99_ms'])}",
            f"{_fmt(r['tpot_p50_ms'], 2)}/{_fmt(r['tpot_p99_ms'], 2)}",
            _fmt(r["latency_p99_ms"]),
            _fmt(r["tps_per_user_v1"]),
            "—" if err is None else f"{100 * err:.2f} [{100 * lo:.2f}–{100 * hi:.2f}]",
            "ok" if r["valid"] else "INVALID: " + "; ".join(r["invalid_reasons"]),
        )
    return table


def print_sweep(result: SweepResult, console: Console | None = None) -> None:
    console = console or Console()
    console.print(sweep_table(result))
    failures: dict[str, int] = {}
    for level in result.levels:
        for k, v in level.row()["failure_counts"].items():
            failures[k] = failures.get(k, 0) + v
    if failures:
        console.print(
            "failures: " + ", ".join(f"{k} {v}" for k, v in sorted(failures.items())),
            style="red",
        )
    console.print(
        f"tokens counted by: {result.token_counting}; tok/s/user = 1000 / TPOT p90 (v1.0 rules)"
        + ("; INTERRUPTED" if result.interrupted else "")
    )
