"""`rollbench up`: the whole daemon on one machine, as child processes of one command.

API (uvicorn), one Celery worker (measure + default queues, solo pool) and the scheduler,
on the embedded store (SQLite under DATA_DIR) and a broker that needs no server (kombu's
SQLAlchemy transport on SQLite). Children run in their own sessions, so that Ctrl-C reaches
this process only; it then stops them in order: the API, the scheduler, the worker (cold:
a run in progress is abandoned and measured again from scratch on the next start — its
lease runs out — never counted half-done).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from orchestrator.config import get_settings


class Daemon:
    def __init__(self, *, host: str, port: int, log_dir: Path) -> None:
        self.host, self.port = host, port
        self.log_dir = log_dir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _spawn(self, name: str, args: list[str]) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = (self.log_dir / f"{name}.log").open("ab")
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.cli", *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=dict(os.environ),
        )

    def start(self) -> None:
        self._spawn("api", ["api", "--host", self.host, "--port", str(self.port)])
        self._spawn("worker", ["worker", "--queues", "measure,default"])
        self._spawn("scheduler", ["scheduler"])

    def wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the API did not become ready on {self.url}")

    def check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                tail = (self.log_dir / f"{name}.log").read_text(errors="replace")[-1500:]
                raise RuntimeError(f"{name} exited with status {proc.returncode}:\n{tail}")

    def serve_forever(self, tick: Callable[[], None] | None = None) -> None:
        while True:
            self.check_alive()
            if tick is not None:
                tick()
            time.sleep(1)

    def stop(self) -> None:
        order = [("api", signal.SIGTERM), ("scheduler", signal.SIGTERM), ("worker", signal.SIGQUIT)]
        for name, sig in order:
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, sig)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)


def data_dir() -> Path:
    return get_settings().data_dir
