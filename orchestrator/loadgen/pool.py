"""The coordinating side of the multi-process client.

`ClientPool` starts K client processes, hands each its share of a level, starts them at one
agreed CLOCK_MONOTONIC instant (system-wide on Linux, so every process's stamps are on one
time line), relays progress and gathers the records. A client process that dies is a
`HarnessError` naming it and quoting its last words, never a hang.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import overload

import numpy as np
import zmq

from orchestrator.loadgen import protocol as p
from orchestrator.loadgen.engine import split_evenly
from orchestrator.loadgen.records import COLUMNS, RequestRecords

_START_DELAY_NS = 50_000_000  # time for every process to receive Go before the start instant


class HarnessError(RuntimeError):
    """The measuring client itself failed (not the endpoint)."""


@dataclass(slots=True)
class LevelOutcome:
    records: RequestRecords
    measurement_start_ns: int
    health: list[p.HealthReport]
    failure_examples: dict[str, list[str]]
    connections: int
    warmup_failed: int
    interrupted: bool = False


@dataclass(slots=True)
class LevelPlan:
    pattern: str
    concurrency: int  # closed loop N; for poisson/offline an upper bound for pre-opened connections
    rate_qps: float
    n_requests: int | None
    n_warmup: int
    min_duration_s: float | None
    max_duration_s: float | None
    drain_timeout_s: float
    seed: int
    give_up_after: int | None = None


class ClientPool:
    """K client processes under one coordinator. Use as a context manager."""

    def __init__(self, workers: int, *, start_timeout_s: float = 60.0) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.workers = workers
        self._start_timeout_s = start_timeout_s
        self._procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[Path] = []
        self._tmp = tempfile.TemporaryDirectory(prefix="rollbench-")
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.ROUTER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._ids: dict[int, bytes] = {}
        self._level = 0

    def __enter__(self) -> ClientPool:
        endpoint = f"ipc://{self._tmp.name}/pool.sock"
        self._sock.bind(endpoint)
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        for i in range(self.workers):
            log = Path(self._tmp.name) / f"worker-{i}.log"
            self._logs.append(log)
            with log.open("wb") as fh:
                self._procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "orchestrator.loadgen.worker", endpoint, str(i)],
                        stdin=subprocess.DEVNULL,
                        stdout=fh,
                        stderr=subprocess.STDOUT,
                        env=env,
                    )
                )
        deadline = time.monotonic() + self._start_timeout_s
        while len(self._ids) < self.workers:
            ident, msg = self._recv(deadline)
            if isinstance(msg, p.Hello):
                self._ids[msg.worker] = ident
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        for ident in self._ids.values():
            with contextlib.suppress(zmq.ZMQError):
                self._sock.send_multipart([ident, p.encoder.encode(p.Shutdown())])
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self._sock.close(linger=0)
        self._ctx.term()
        self._tmp.cleanup()

    # -- commands ---------------------------------------------------------------------------

    def setup(self, setup: p.Setup) -> None:
        for ident in self._ids.values():
            self._send(ident, setup)

    def run_level(
        self,
        plan: LevelPlan,
        on_progress: Callable[[int, int, int], None] | None = None,
        stop_requested: Callable[[], bool] | None = None,
    ) -> LevelOutcome:
        self._level += 1
        level = self._level
        shares = self._shares(plan, level)
        for w, share in shares.items():
            self._send(self._ids[w], share)
        connections = warmup_failed = 0
        pending = set(shares)
        while pending:
            _, ready = self._recv(None)
            if isinstance(ready, p.Ready) and ready.level == level:
                pending.discard(ready.worker)
                connections += ready.connections
                warmup_failed += ready.warmup_failed
        start_at_ns = time.monotonic_ns() + _START_DELAY_NS
        for w in shares:
            self._send(self._ids[w], p.Go(level=level, start_at_ns=start_at_ns))
        progress = {w: (0, 0, 0) for w in shares}
        results: dict[int, p.Result] = {}
        interrupted = False

        def stop_all() -> None:
            for w in shares:
                self._send(self._ids[w], p.Stop(level=level))

        while len(results) < len(shares):
            if not interrupted and stop_requested is not None and stop_requested():
                interrupted = True  # cancelled from outside (e.g. through the store)
                stop_all()
            try:
                _, got = self._recv(None, poll_once=stop_requested is not None)
            except KeyboardInterrupt:
                if interrupted:
                    raise
                interrupted = True
                stop_all()
                continue
            if got is None:
                continue
            msg = got
            if isinstance(msg, p.Progress) and msg.level == level:
                progress[msg.worker] = (msg.issued, msg.completed, msg.failed)
                if on_progress is not None:
                    on_progress(*(sum(v[i] for v in progress.values()) for i in range(3)))
            elif isinstance(msg, p.Result) and msg.level == level:
                results[msg.worker] = msg
        parts = [_records(r.columns) for r in results.values()]
        examples: dict[str, list[str]] = {}
        for r in results.values():
            for label, items in r.failure_examples.items():
                examples.setdefault(label, []).extend(items)
        return LevelOutcome(
            records=RequestRecords.concat(parts),
            measurement_start_ns=start_at_ns,
            health=[r.health for r in results.values()],
            failure_examples=examples,
            connections=connections,
            warmup_failed=warmup_failed,
            interrupted=interrupted,
        )

    def _shares(self, plan: LevelPlan, level: int) -> dict[int, p.Prepare]:
        k = self.workers
        conc = split_evenly(plan.concurrency, k)
        reqs = split_evenly(plan.n_requests, k) if plan.n_requests is not None else [None] * k
        warm = split_evenly(plan.n_warmup, k)
        shares: dict[int, p.Prepare] = {}
        for w in range(k):
            if plan.pattern == "concurrency" and conc[w] == 0:
                continue  # fewer streams than processes: the idle ones sit this level out
            if plan.pattern == "offline" and not reqs[w]:
                continue
            shares[w] = p.Prepare(
                level=level,
                pattern=plan.pattern,
                concurrency=conc[w],
                rate_qps=plan.rate_qps / k,
                n_requests=reqs[w],
                n_warmup=warm[w],
                min_duration_s=plan.min_duration_s,
                max_duration_s=plan.max_duration_s,
                drain_timeout_s=plan.drain_timeout_s,
                seed=plan.seed,
                workers=k,
                give_up_after=plan.give_up_after,
            )
        return shares

    # -- transport ----------------------------------------------------------------------------

    def _send(self, ident: bytes, msg: p.ToWorker) -> None:
        self._sock.send_multipart([ident, p.encoder.encode(msg)])

    @overload
    def _recv(self, deadline: float | None) -> tuple[bytes, p.FromWorker]: ...
    @overload
    def _recv(
        self, deadline: float | None, poll_once: bool
    ) -> tuple[bytes, p.FromWorker | None]: ...

    def _recv(
        self, deadline: float | None, poll_once: bool = False
    ) -> tuple[bytes, p.FromWorker | None]:
        """Next message; with `poll_once`, (b"", None) after one empty 200 ms poll."""
        while True:
            if self._sock.poll(200):
                ident, raw = self._sock.recv_multipart()
                msg = p.from_worker.decode(raw)
                if isinstance(msg, p.WorkerError):
                    raise HarnessError(f"client process {msg.worker} failed: {msg.message}")
                return ident, msg
            self._check_alive()
            if poll_once:
                return b"", None
            if deadline is not None and time.monotonic() > deadline:
                raise HarnessError("client processes did not start in time" + self._log_tail())

    def _check_alive(self) -> None:
        for i, proc in enumerate(self._procs):
            rc = proc.poll()
            if rc is not None:
                raise HarnessError(
                    f"client process {i} exited with status {rc}" + self._log_tail(i)
                )

    def _log_tail(self, index: int | None = None) -> str:
        logs = self._logs if index is None else [self._logs[index]]
        tails = []
        for log in logs:
            with contextlib.suppress(OSError):
                text = log.read_text(errors="replace").strip()
                if text:
                    tails.append(text[-1500:])
        return (":\n" + "\n".join(tails)) if tails else ""


def _records(columns: dict[str, bytes]) -> RequestRecords:
    return RequestRecords.from_columns(
        {name: np.frombuffer(columns[name], dtype=dt) for name, dt in COLUMNS.items()}
    )
