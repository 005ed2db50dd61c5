"""The two timing models: when does each token of each request exist?

Both count tokens and hand the count to the request's `TokenStream`; neither writes bytes.
All deadlines are absolute `time.monotonic()` instants computed from the request's receive
time (fixed) or from the previous step's end (batching), never "now + interval", so timer
lateness does not accumulate: a late write is followed by an on-time one.

Timer granularity is about 1 ms on both event loops (epoll waits in whole milliseconds,
and uvloop's clock ticks in milliseconds and may fire up to 1 ms early). A timer that fires
early is simply re-armed, with at least 1 ms so that it does not spin; tokens that fall due
within one wake-up go out in one write.

Fixed mode: token j (0-based) is due at `received + ttft + j·tpot` (with jitter, each
interval gets its own uniform draw, clamped at 0). A request's timer wakes once per event,
at the deadline of the event's last token. Batching mode: one scheduler task per server.
Each step admits waiting sequences up to `max_batch`, lasts
`prefill_ms_per_input_token · (prompt tokens admitted) + decode_step_ms +
decode_step_ms_per_seq · running` and gives every running sequence one token at its end.
So a lone request's TTFT is prefill + one decode step. Requests that arrive while the queue
holds `queue_limit` sequences are refused (HTTP 429).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import deque
from typing import Final

from orchestrator.simulator._config import SimulatorConfig
from orchestrator.simulator._stream import TokenStream

_MIN_REARM_S: Final = 0.001


class FixedDriver:
    """Per-request timer for fixed mode: wakes when an event's last token is due."""

    __slots__ = (
        "_deadlines",
        "_due",
        "_first_s",
        "_handle",
        "_jitter_rng",
        "_jitter_s",
        "_loop",
        "_stream",
        "_tpot_s",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        stream: TokenStream,
        *,
        received_s: float,
        config: SimulatorConfig,
        jitter_seed: int,
    ) -> None:
        self._loop = loop
        self._stream = stream
        self._tpot_s = config.tpot_ms / 1000.0
        self._jitter_s = config.jitter_ms / 1000.0
        self._due = 0
        self._handle: asyncio.TimerHandle | None = None
        self._jitter_rng: random.Random | None = None
        self._deadlines: list[float] = []
        ttft_s = config.ttft_ms / 1000.0
        if self._jitter_s > 0:
            self._jitter_rng = random.Random(jitter_seed)
            ttft_s = max(0.0, ttft_s + self._jitter_rng.uniform(-self._jitter_s, self._jitter_s))
        self._first_s = received_s + ttft_s
        stream.on_cancel = self.cancel

    def start(self) -> None:
        self._fire()

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _deadline(self, token: int) -> float:
        rng = self._jitter_rng
        if rng is None:
            return self._first_s + token * self._tpot_s
        deadlines = self._deadlines
        if not deadlines:
            deadlines.append(self._first_s)
        while len(deadlines) <= token:
            step = max(0.0, self._tpot_s + rng.uniform(-self._jitter_s, self._jitter_s))
            deadlines.append(deadlines[-1] + step)
        return deadlines[token]

    def _fire(self) -> None:
        self._handle = None
        stream = self._stream
        total = stream.total_tokens
        now = time.monotonic()
        due = self._due
        while due < total and self._deadline(due) <= now:
            due += 1
        if due > self._due:
            self._due = due
            stream.advance(due)
        else:
            stream.flush_head()
        if due >= total or stream.done:
            return
        delay = self._deadline(stream.next_trigger_token(due)) - time.monotonic()
        self._handle = self._loop.call_later(max(delay, _MIN_REARM_S), self._fire)


class BatchScheduler:
    """Continuous batching: one task per server steps the batch and hands out tokens."""

    def __init__(self, config: SimulatorConfig) -> None:
        self._config = config
        self._waiting: deque[TokenStream] = deque()
        self._running: list[TokenStream] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.steps = 0

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def running(self) -> int:
        return len(self._running)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="sim-batch")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def submit(self, stream: TokenStream) -> bool:
        """Queue a sequence; False when the queue is full (the caller answers 429)."""
        waiting = self._waiting
        if len(waiting) >= self._config.queue_limit:
            # clients that went away while queued do not hold their place
            alive = [queued for queued in waiting if not queued.done]
            waiting.clear()
            waiting.extend(alive)
            if len(waiting) >= self._config.queue_limit:
                return False
        waiting.append(stream)
        self._wake.set()
        return True

    async def _run(self) -> None:
        config = self._config
        waiting, running = self._waiting, self._running
        step_end_s: float | None = None  # absolute end of the previous step; None when idle
        while True:
            if not running:
                while waiting and waiting[0].done:
                    waiting.popleft()  # cancelled while queued
                if not waiting:
                    step_end_s = None
                    self._wake.clear()
                    await self._wake.wait()
                    continue
            prefill_tokens = 0
            while waiting and len(running) < config.max_batch:
                stream = waiting.popleft()
                if not stream.done:
                    running.append(stream)
                    prefill_tokens += stream.prompt_tokens
            if not running:
                continue
            step_ms = (
                config.prefill_ms_per_input_token * prefill_tokens
                + config.decode_step_ms
                + config.decode_step_ms_per_seq * len(running)
            )
            start_s = time.monotonic() if step_end_s is None else step_end_s
            step_end_s = start_s + step_ms / 1000.0
            await _sleep_until(step_end_s)
            self.steps += 1
            still_running: list[TokenStream] = []
            for stream in running:
                if stream.done:
                    continue
                generated = stream.generated + 1
                stream.advance(generated)
                if generated < stream.total_tokens and not stream.done:
                    still_running.append(stream)
            running[:] = still_running


async def _sleep_until(deadline_s: float) -> None:
    delay = deadline_s - time.monotonic()
    if delay <= 0:
        await asyncio.sleep(0)  # let I/O run between back-to-back steps
        return
    while delay > 0:
        await asyncio.sleep(max(delay, _MIN_REARM_S))
        delay = deadline_s - time.monotonic()
