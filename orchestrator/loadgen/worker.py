"""A client process: one event loop, one connection pool, commands over ZeroMQ.

Started as `python -m orchestrator.loadgen.worker ENDPOINT INDEX` with subprocess rather
than multiprocessing: a plain child process works everywhere, including inside a Celery
worker's pool process, which may not fork children of its own. It exits by itself when the
process that started it goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any, cast

import zmq
import zmq.asyncio

from orchestrator.loadgen import protocol as p
from orchestrator.loadgen.engine import Engine, Pattern, Share, TokenCounter
from orchestrator.loadgen.transport import PreparedRequest, Target, Timeouts, Transport


def _make_transport(setup: p.Setup) -> Transport:
    target = Target.from_url(setup.base_url, setup.route, setup.verify_tls)
    timeouts = Timeouts(setup.connect_timeout_s, setup.stall_timeout_s, setup.total_timeout_s)
    if setup.transport == "aiohttp":
        from orchestrator.loadgen.aiohttp_transport import AiohttpTransport

        return AiohttpTransport(target, timeouts=timeouts)
    from orchestrator.loadgen.native import NativeTransport

    return NativeTransport(
        target,
        timeouts=timeouts,
        max_idle_s=setup.max_idle_s,
        connect_parallelism=setup.connect_parallelism,
    )


def _token_counter(path: str | None) -> TokenCounter | None:
    if not path:
        return None
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)

    def count(text: str) -> int:
        return len(tok.encode(text, add_special_tokens=False).ids)

    return count


class _Worker:
    def __init__(self, endpoint: str, index: int) -> None:
        self.index = index
        self.ctx = zmq.asyncio.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 2000)
        self.sock.connect(endpoint)
        self.engine: Engine | None = None
        self.transport: Transport | None = None
        self.running: asyncio.Task[None] | None = None
        self._sends: set[asyncio.Future[Any]] = set()

    def post(self, msg: p.FromWorker) -> None:
        fut = asyncio.ensure_future(self.sock.send(p.encoder.encode(msg)))
        self._sends.add(fut)
        fut.add_done_callback(self._sends.discard)

    async def serve(self) -> None:
        self.post(p.Hello(worker=self.index, pid=os.getpid()))
        while True:
            msg = p.to_worker.decode(await self.sock.recv())
            if isinstance(msg, p.Setup):
                await self._setup(msg)
            elif isinstance(msg, p.Prepare):
                await self._prepare(msg)
            elif isinstance(msg, p.Go):
                self.running = asyncio.get_running_loop().create_task(self._run(msg))
            elif isinstance(msg, p.Stop):
                if self.engine is not None:
                    self.engine.stop()
            elif isinstance(msg, p.Shutdown):
                break
        if self.running is not None:
            self.running.cancel()
        if self.transport is not None:
            await self.transport.close()
        if self._sends:
            await asyncio.wait(set(self._sends), timeout=2)

    async def _setup(self, setup: p.Setup) -> None:
        if self.transport is not None:
            await self.transport.close()
        self.transport = _make_transport(setup)
        requests = [PreparedRequest(body=b, headers=dict(setup.headers)) for b in setup.bodies]
        self.engine = Engine(
            transport=self.transport,
            requests=requests,
            input_tokens=setup.input_tokens,
            stream=setup.stream,
            max_event_bytes=setup.max_event_bytes,
            count_tokens=_token_counter(setup.tokenizer_path),
        )

    def _share(self, msg: p.Prepare) -> Share:
        return Share(
            pattern=cast(Pattern, msg.pattern),
            concurrency=msg.concurrency,
            rate_qps=msg.rate_qps,
            n_requests=msg.n_requests,
            n_warmup=msg.n_warmup,
            min_duration_s=msg.min_duration_s,
            max_duration_s=msg.max_duration_s,
            drain_timeout_s=msg.drain_timeout_s,
            seed=msg.seed,
            worker=self.index,
            workers=msg.workers,
            give_up_after=msg.give_up_after,
        )

    async def _prepare(self, msg: p.Prepare) -> None:
        assert self.engine is not None, "Setup must come before Prepare"
        self.share = self._share(msg)
        opened, failed = await self.engine.warmup(self.share)
        self.post(
            p.Ready(worker=self.index, level=msg.level, connections=opened, warmup_failed=failed)
        )

    async def _run(self, go: p.Go) -> None:
        engine = self.engine
        assert engine is not None
        level = go.level
        progress: Callable[[int, int, int], None] = lambda i, c, f: self.post(  # noqa: E731
            p.Progress(worker=self.index, level=level, issued=i, completed=c, failed=f)
        )
        columns, health, examples = await engine.run(self.share, go.start_at_ns, progress)
        self.post(
            p.Result(
                worker=self.index,
                level=level,
                columns={k: v.tobytes() for k, v in columns.items()},
                health=p.HealthReport(
                    cpu_s=health.cpu_s,
                    wall_s=health.wall_s,
                    loop_lag_ns=health.loop_lag_ns,
                    connections_opened=health.connections_opened,
                    stale_resends=health.stale_resends,
                    keep_alive=health.keep_alive,
                    drained_by_deadline=health.drained_by_deadline,
                    gave_up=health.gave_up,
                    token_sources=health.token_sources,
                ),
                failure_examples=examples,
            )
        )


async def _watch_parent(parent: int) -> None:
    while True:
        await asyncio.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


async def _main(endpoint: str, index: int) -> None:
    worker = _Worker(endpoint, index)
    watchdog = asyncio.get_running_loop().create_task(_watch_parent(os.getppid()))
    try:
        await worker.serve()
    except Exception as exc:
        worker.post(p.WorkerError(worker=index, message=f"{exc!r}\n{traceback.format_exc()}"))
        await asyncio.sleep(0.5)
        raise
    finally:
        watchdog.cancel()
        worker.sock.close(linger=1000)
        worker.ctx.term()


def main() -> None:
    endpoint, index = sys.argv[1], int(sys.argv[2])
    # Ctrl-C reaches the whole process group; the coordinator decides how a run stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import uvloop

        runner: Callable[..., None] = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        runner = asyncio.run
    with contextlib.suppress(KeyboardInterrupt):
        runner(_main(endpoint, index))


if __name__ == "__main__":
    main()
