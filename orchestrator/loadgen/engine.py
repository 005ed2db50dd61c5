"""The load patterns, run inside one client process on its own event loop.

`concurrency` keeps N exchanges in flight: N coroutines, each issuing its next request the
moment its previous one ends (closed loop). `poisson` issues at seeded exponential arrival
times whatever happens to earlier requests (open loop); the scheduled time of each request
is kept so that issue lag — the client falling behind its own schedule — is measured, not
hidden. `offline` issues everything at once. Issuing stops when the request count and the
minimum duration are both reached (whichever are set) or at the maximum duration; then
in-flight requests drain until a deadline, after which they are failed as `timeout`. A
failed request is recorded, never retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from orchestrator.loadgen.exchange import Exchange
from orchestrator.loadgen.records import COLUMNS, Failure, TokenSource
from orchestrator.loadgen.transport import PreparedRequest, Transport

Pattern = Literal["concurrency", "poisson", "offline"]
_now = time.monotonic_ns
_EXAMPLES_PER_CLASS = 3


class TokenCounter(Protocol):
    def __call__(self, text: str) -> int: ...


@dataclass(slots=True)
class Share:
    """One client process's part of a level."""

    pattern: Pattern
    concurrency: int  # closed loop: exchanges kept in flight by this process
    rate_qps: float  # poisson: this process's arrival rate
    n_requests: int | None
    n_warmup: int
    min_duration_s: float | None
    max_duration_s: float | None
    drain_timeout_s: float
    seed: int
    worker: int
    workers: int
    give_up_after: int | None = None  # stop issuing when this many requests all failed


@dataclass(slots=True)
class Health:
    """How the client itself fared while measuring."""

    cpu_s: float = 0.0
    wall_s: float = 0.0
    loop_lag_ns: list[int] = field(default_factory=list)
    connections_opened: int = 0
    stale_resends: int = 0  # requests re-sent because a reused connection was already closed
    keep_alive: bool = True  # False once the server was seen closing after every response
    drained_by_deadline: int = 0
    gave_up: bool = False  # stopped issuing: the first `give_up_after` requests all failed
    token_sources: dict[str, int] = field(default_factory=dict)


class Engine:
    """Runs shares of levels with one transport and one set of prepared requests.

    Requests are driven by completion callbacks, not by a coroutine per request: when an
    exchange ends, its record is written and — closed loop — the next request of that slot is
    written at once, from inside the read that completed the previous one. In-flight stays at
    N with no scheduling hop in between, and the client spends its CPU on bytes, not on tasks.
    """

    def __init__(
        self,
        *,
        transport: Transport,
        requests: list[PreparedRequest],
        input_tokens: list[int],
        stream: bool,
        max_event_bytes: int,
        count_tokens: TokenCounter | None,
    ) -> None:
        if not requests:
            raise ValueError("no requests to send")
        self.transport = transport
        self.requests = requests
        self.input_tokens = input_tokens
        self.stream = stream
        self.max_event_bytes = max_event_bytes
        self.count_tokens = count_tokens
        self._cols: dict[str, list[int]] = {}
        self._examples: dict[str, list[str]] = {}
        self._token_sources: dict[str, int] = {}
        self._sample_cursor = 0
        self._share: Share | None = None
        self._start_ns = 0
        self._stop_now = False
        self._issuing_over: asyncio.Event | None = None
        self._drained: asyncio.Event | None = None
        self._in_flight = 0
        self._slots = 0
        self.gave_up = False
        self.issued = self.completed = self.failed = 0
        self._reset()

    # -- public -------------------------------------------------------------------------------

    async def warmup(self, share: Share) -> tuple[int, int]:
        """Open connections, then send `n_warmup` requests (closed loop); nothing recorded.

        A level begins here: a stop that arrives from now on, even before `run`, holds."""
        self._stop_now = False
        want = share.concurrency if share.pattern == "concurrency" else min(share.concurrency, 64)
        opened = await self.transport.warm(max(want, 0))
        failed = 0
        if share.n_warmup > 0:
            remaining = share.n_warmup
            users = max(1, min(want or 1, remaining))

            async def user() -> None:
                nonlocal remaining, failed
                while remaining > 0:
                    remaining -= 1
                    ex = await self.exchange(self._next_request(share)[1])
                    failed += ex.failure is not Failure.NONE

            await asyncio.gather(*(user() for _ in range(users)))
        return opened, failed

    async def exchange(self, request: PreparedRequest) -> Exchange:
        """One request outside any level (warm-up, probes): await its finished exchange."""
        fut: asyncio.Future[Exchange] = asyncio.get_running_loop().create_future()
        ex = self._new_exchange(_now())
        ex.on_done = fut.set_result
        self._start(request, ex, counted=False)
        return await fut

    def stop(self) -> None:
        """Stop issuing now (operator interrupt); in-flight requests still drain."""
        self._stop_now = True
        if self._issuing_over is not None:
            self._issuing_over.set()

    async def run(
        self, share: Share, start_at_ns: int, on_progress: Callable[[int, int, int], None]
    ) -> tuple[dict[str, np.ndarray], Health, dict[str, list[str]]]:
        self._reset()
        self._share = share
        self._start_ns = start_at_ns
        self.gave_up = False
        self._issuing_over = asyncio.Event()
        if self._stop_now:  # stopped between Prepare and Go
            self._issuing_over.set()
        self._drained = asyncio.Event()
        self._in_flight = 0
        health = Health()
        loop = asyncio.get_running_loop()
        delay_s = (start_at_ns - _now()) / 1e9
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        cpu0, wall0 = time.process_time(), _now()
        monitor = loop.create_task(self._watch_loop(health.loop_lag_ns, on_progress))
        opened0 = getattr(self.transport, "connections_opened", 0)
        resends0 = getattr(self.transport, "stale_resends", 0)
        try:
            if share.pattern == "concurrency":
                await self._closed_loop(share)
            elif share.pattern == "poisson":
                await self._poisson(share)
            else:
                await self._offline(share)
            health.drained_by_deadline = await self._drain(share.drain_timeout_s)
        finally:
            monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await monitor
        health.cpu_s = time.process_time() - cpu0
        health.wall_s = (_now() - wall0) / 1e9
        health.connections_opened = getattr(self.transport, "connections_opened", 0) - opened0
        health.stale_resends = getattr(self.transport, "stale_resends", 0) - resends0
        health.keep_alive = bool(getattr(self.transport, "keep_alive", True))
        health.token_sources = dict(self._token_sources)
        health.gave_up = self.gave_up
        on_progress(self.issued, self.completed, self.failed)
        columns = {name: np.asarray(self._cols[name], dtype=dt) for name, dt in COLUMNS.items()}
        return columns, health, self._examples

    # -- patterns -------------------------------------------------------------------------------

    def _may_issue(self, at_ns: int) -> bool:
        share = self._share
        if self._stop_now or share is None:
            return False
        elapsed_s = (at_ns - self._start_ns) / 1e9
        if share.max_duration_s is not None and elapsed_s >= share.max_duration_s:
            return False
        count_met = share.n_requests is None or self.issued >= share.n_requests
        duration_met = share.min_duration_s is None or elapsed_s >= share.min_duration_s
        return not (count_met and duration_met)

    def _check_issuing(self) -> None:
        if not self._may_issue(_now()) and self._issuing_over is not None:
            self._issuing_over.set()

    async def _closed_loop(self, share: Share) -> None:
        """Start N slots; return once issuing has stopped (in-flight ones drain later)."""
        assert self._issuing_over is not None
        if share.concurrency <= 0:
            return
        loop = asyncio.get_running_loop()
        # Duration limits fall while requests are in flight: look at those instants.
        timers = [
            loop.call_at(
                loop.time() + (self._start_ns + limit_s * 1e9 - _now()) / 1e9 + 1e-3,
                self._check_issuing,
            )
            for limit_s in (share.min_duration_s, share.max_duration_s)
            if limit_s is not None
        ]
        self._slots = share.concurrency
        for _ in range(share.concurrency):
            if not self._may_issue(_now()):
                self._slots -= 1
                continue
            self._launch_closed()
        if self._slots == 0:
            self._issuing_over.set()
        await self._issuing_over.wait()
        for timer in timers:
            timer.cancel()

    def _launch_closed(self) -> None:
        share = self._share
        assert share is not None
        sample, request = self._next_request(share)
        ex = self._new_exchange(_now())
        ex.sample = sample
        ex.on_done = self._closed_done
        self.issued += 1
        self._check_issuing()  # the last request of the count: draining starts now
        self._start(request, ex)

    def _closed_done(self, ex: Exchange) -> None:
        self._finished(ex)
        if self._may_issue(_now()):
            self._launch_closed()
            return
        self._slots -= 1
        if self._issuing_over is not None:
            self._issuing_over.set()

    async def _poisson(self, share: Share) -> None:
        if share.rate_qps <= 0:
            return
        rng = np.random.default_rng([share.seed, share.worker])
        mean_gap_ns = 1e9 / share.rate_qps
        scheduled = self._start_ns
        gaps: Iterator[int] = iter(())
        while True:
            gap = next(gaps, None)
            if gap is None:
                gaps = iter(rng.exponential(mean_gap_ns, 4096).astype(np.int64).tolist())
                continue
            scheduled += max(1, gap)
            if not self._may_issue(scheduled):
                return
            wait_ns = scheduled - _now()
            if wait_ns > 0:
                await asyncio.sleep(wait_ns / 1e9)
            self._launch_open(share, scheduled)

    async def _offline(self, share: Share) -> None:
        t = _now()
        for _ in range(share.n_requests or 0):
            if self._stop_now:
                break
            self._launch_open(share, t)
            await asyncio.sleep(0)  # let connects and reads run while we issue

    def _launch_open(self, share: Share, scheduled_ns: int) -> None:
        sample, request = self._next_request(share)
        ex = self._new_exchange(scheduled_ns)
        ex.sample = sample
        ex.on_done = self._finished
        self.issued += 1
        self._start(request, ex)

    async def _drain(self, timeout_s: float) -> int:
        drained = self._drained
        assert drained is not None
        if self._in_flight == 0:
            return 0
        drained.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(drained.wait(), timeout_s)
            return 0
        n = self.transport.abort_in_flight(
            f"still in flight at the drain deadline ({timeout_s:g} s)"
        )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(drained.wait(), 5)
        return n

    # -- one exchange -----------------------------------------------------------------------------

    def _next_request(self, share: Share) -> tuple[int, PreparedRequest]:
        # Interleave samples across processes so that K processes cover the dataset like one.
        k = self._sample_cursor
        self._sample_cursor += 1
        sample = (share.worker + k * share.workers) % len(self.requests)
        return sample, self.requests[sample]

    def _new_exchange(self, scheduled_ns: int) -> Exchange:
        issue_ns = _now()
        return Exchange(
            stream=self.stream,
            scheduled_ns=min(scheduled_ns, issue_ns),
            issue_ns=issue_ns,
            max_event_bytes=self.max_event_bytes,
            keep_text=self.count_tokens is not None,
        )

    def _start(self, request: PreparedRequest, ex: Exchange, *, counted: bool = True) -> None:
        if counted:
            self._in_flight += 1
        try:
            self.transport.start(request, ex)
        except Exception as exc:  # a transport bug must not lose the request from the counts
            ex.fail(Failure.CONNECT, _now(), f"client error: {type(exc).__name__}: {exc}")

    def _finished(self, ex: Exchange) -> None:
        self._in_flight -= 1
        if ex.sample >= 0:
            self._record(ex)
        if self._in_flight == 0 and self._drained is not None:
            self._drained.set()

    def _record(self, ex: Exchange) -> None:
        share = self._share
        assert share is not None
        self.completed += 1
        ok = ex.failure is Failure.NONE
        if not ok:
            self.failed += 1
            label = ex.failure.label
            examples = self._examples.setdefault(label, [])
            if len(examples) < _EXAMPLES_PER_CLASS:
                examples.append(ex.detail[:300])
            # An endpoint that is down would otherwise be hammered for the whole level.
            limit = share.give_up_after
            if limit is not None and self.failed == self.completed >= limit:
                self.gave_up = True
                self.stop()
        out, after, source = self._count_output(ex)
        self._token_sources[source.label] = self._token_sources.get(source.label, 0) + 1
        in_tokens = self.input_tokens[ex.sample] if self.input_tokens else -1
        if in_tokens < 0:
            in_tokens = ex.usage_input
        gaps = ex.gaps
        if gaps:
            ordered = sorted(gaps)
            max_gap, p99_gap = ordered[-1], ordered[int(0.99 * (len(ordered) - 1))]
        else:
            max_gap = p99_gap = -1
        c = self._cols
        c["worker"].append(share.worker)
        c["scheduled_ns"].append(ex.scheduled_ns)
        c["issue_ns"].append(ex.issue_ns)
        c["first_ns"].append(ex.first_ns)
        c["first_server_ns"].append(ex.first_server_ns)
        c["end_ns"].append(ex.end_ns)
        c["output_tokens"].append(out)
        c["tokens_after_first"].append(after)
        c["input_tokens"].append(in_tokens)
        c["chunks"].append(ex.chunks)
        c["max_gap_ns"].append(max_gap)
        c["p99_gap_ns"].append(p99_gap)
        c["failure"].append(int(ex.failure))
        c["http_status"].append(ex.status)
        c["finish_reason"].append(int(ex.finish_reason))

    def _count_output(self, ex: Exchange) -> tuple[int, int, TokenSource]:
        """Output tokens and tokens after the first useful chunk (TPOT's denominator)."""
        if ex.chunks == 0:
            return (0 if ex.failure is Failure.NONE else -1), -1, TokenSource.CHUNKS
        if self.count_tokens is not None:
            after_text = "".join(ex.text_after_first)
            after = self.count_tokens(after_text) if after_text else 0
            return self.count_tokens(ex.first_text + after_text), after, TokenSource.TOKENIZER
        if ex.usage_output >= 0:
            out = ex.usage_output
            # Usage does not say how many tokens the first chunk held: assume the mean per
            # chunk (1 for servers that stream token by token, k for stream_interval=k).
            first = max(1, round(out / ex.chunks))
            return out, max(out - first, 0), TokenSource.USAGE
        return ex.chunks, ex.chunks - 1, TokenSource.CHUNKS

    # -- bookkeeping ------------------------------------------------------------------------------

    def _reset(self) -> None:
        self._cols = {name: [] for name in COLUMNS}
        self._examples = {}
        self._token_sources = {}
        self.issued = self.completed = self.failed = 0

    @staticmethod
    def _lag_probe(lags: list[int], queued_ns: int) -> None:
        lags.append(_now() - queued_ns)

    async def _watch_loop(
        self, lags: list[int], on_progress: Callable[[int, int, int], None]
    ) -> None:
        """Sample how long a ready callback waits for the loop (every 10 ms), report progress."""
        loop = asyncio.get_running_loop()
        tick = 0
        while True:
            await asyncio.sleep(0.01)
            loop.call_soon(self._lag_probe, lags, _now())
            tick += 1
            if tick % 25 == 0:
                on_progress(self.issued, self.completed, self.failed)


def split_evenly(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


__all__ = ["Engine", "Health", "Pattern", "Share", "split_evenly"]
