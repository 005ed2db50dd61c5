"""Starting and stopping the simulator: in a running loop, blocking, in a thread, in a process.

`serve` is the primitive (it needs a running event loop); the others wrap it. The thread
variant gives tests a real server on loopback with its own event loop, so the client under
test may be sync or async. The process variant (multiprocessing "spawn", so nothing of the
parent's state is inherited) is for benchmarks, where a server sharing the client's GIL
would distort the client's own measurements. uvloop is used when it is installed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection as PipeEnd
from types import TracebackType
from typing import Any, Self

from orchestrator.simulator._app import SimulatorApp
from orchestrator.simulator._config import SimulatorConfig
from orchestrator.simulator._http import Connection

__all__ = ["Simulator", "run_simulator", "serve", "start_in_process", "start_in_thread"]

_STARTUP_TIMEOUT_S = 30.0
_SHUTDOWN_TIMEOUT_S = 10.0


class Simulator:
    """A listening simulator. `url` is the OpenAI base URL (ends in /v1)."""

    def __init__(self, server: asyncio.Server, app: SimulatorApp, host: str) -> None:
        self._server = server
        self._app = app
        self.config = app.config
        self.host = host
        self.port: int = server.sockets[0].getsockname()[1]
        shown = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
        if ":" in shown:
            shown = f"[{shown}]"
        self.url = f"http://{shown}:{self.port}/v1"

    async def close(self) -> None:
        """Stop listening, abort open connections and stop the batch scheduler."""
        self._server.close()
        await self._app.close()
        await self._server.wait_closed()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


async def serve(config: SimulatorConfig, host: str = "127.0.0.1", port: int = 0) -> Simulator:
    """Start a simulator on the running loop; port 0 picks a free port.

    >>> async with await serve(SimulatorConfig(ttft_ms=10)) as sim:
    ...     print(sim.url)  # http://127.0.0.1:<port>/v1
    """
    loop = asyncio.get_running_loop()
    app = SimulatorApp(config)
    server = await loop.create_server(
        lambda: Connection(app), host, port, backlog=4096, reuse_address=True
    )
    app.start()
    return Simulator(server, app, host)


def _new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


def run_simulator(
    config: SimulatorConfig,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve until SIGINT (Ctrl-C) or SIGTERM, then close cleanly. `on_ready(url)` is
    called once the socket listens."""
    with (
        contextlib.suppress(KeyboardInterrupt),
        asyncio.Runner(loop_factory=_new_event_loop) as runner,
    ):
        runner.run(_serve_until_signalled(config, host, port, on_ready))


async def _serve_until_signalled(
    config: SimulatorConfig, host: str, port: int, on_ready: Callable[[str], None] | None
) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    handled: list[signal.Signals] = []
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):  # loops without signal support
                loop.add_signal_handler(signum, stop.set)
                handled.append(signum)
    try:
        async with await serve(config, host, port) as sim:
            if on_ready is not None:
                on_ready(sim.url)
            await stop.wait()
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)


@contextlib.contextmanager
def start_in_thread(
    config: SimulatorConfig, host: str = "127.0.0.1", port: int = 0
) -> Iterator[Simulator]:
    """Run a simulator on its own event loop in a daemon thread; stop it on exit.

    >>> with start_in_thread(SimulatorConfig(ttft_ms=10)) as sim:
    ...     httpx.get(sim.url + "/models")
    """
    loop = _new_event_loop()
    started: concurrent.futures.Future[Simulator] = concurrent.futures.Future()

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            try:
                sim = loop.run_until_complete(serve(config, host, port))
            except BaseException as exc:
                started.set_exception(exc)
                return
            started.set_result(sim)
            loop.run_forever()
            loop.run_until_complete(sim.close())
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    thread = threading.Thread(target=run, name="rollbench-simulator", daemon=True)
    thread.start()
    try:
        sim = started.result(timeout=_STARTUP_TIMEOUT_S)
        yield sim
    finally:
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed in between
                loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=_SHUTDOWN_TIMEOUT_S)


def _process_main(
    config_data: dict[str, Any], host: str, port: int, ready: PipeEnd, cpu: int | None
) -> None:
    try:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        config = SimulatorConfig.model_validate(config_data)
        run_simulator(config, host, port, on_ready=lambda url: ready.send(("ok", url)))
    except BaseException as exc:
        with contextlib.suppress(OSError):
            ready.send(("error", f"{type(exc).__name__}: {exc}"))
        raise
    finally:
        ready.close()


@contextlib.contextmanager
def start_in_process(
    config: SimulatorConfig, host: str = "127.0.0.1", port: int = 0, *, cpu: int | None = None
) -> Iterator[str]:
    """Run a simulator in a separate ("spawn") process; yield its base URL; stop it on exit.

    The server then has its own GIL and CPU (pinned to core `cpu` if given).
    `GET <url without /v1>/sim/stats` reports its CPU time (`cpu_s`) and counters.
    """
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(
        target=_process_main,
        args=(config.model_dump(), host, port, sender, cpu),
        name="rollbench-simulator",
        daemon=True,
    )
    process.start()
    sender.close()
    try:
        if not receiver.poll(_STARTUP_TIMEOUT_S):
            raise RuntimeError("the simulator process did not start in time")
        try:
            status, detail = receiver.recv()
        except EOFError:
            raise RuntimeError("the simulator process exited during startup") from None
        if status != "ok":
            raise RuntimeError(f"the simulator process failed to start: {detail}")
        yield str(detail)
    finally:
        receiver.close()
        if process.is_alive():
            process.terminate()  # SIGTERM: the server closes cleanly
            process.join(_SHUTDOWN_TIMEOUT_S)
        if process.is_alive():
            process.kill()
            process.join()
