"""Routing and per-request decisions: auth, validation, output length, faults, dispatch.

Checks run in a fixed order — route (404/405), bearer token (401), body (400), model
(404) — and only a request that passes them all is a *generation request*. Each
generation request, in the order they are handled, takes the same fixed set of draws from
the server's seeded generator (fault, fault position, output-length jitter, timing-jitter
seed), whatever its content; so two servers with the same seed that receive the same
sequence of requests make the same decisions, and a change in one request's parameters
does not shift the draws of the next. Then the request either fails outright (the error
fault, or 429 when the batch queue is full) or becomes a `TokenStream` driven by the
configured timing model.

Output length: `output_tokens` (± `output_tokens_jitter`, at least 1) content tokens plus
`reasoning_tokens` (chat only: the completions API has no reasoning field); a request's
`max_completion_tokens`, else `max_tokens`, caps the sum, with finish_reason `length` when
it cuts anything and `stop` otherwise. `usage.completion_tokens` is the sum.
"""

from __future__ import annotations

import asyncio
import hmac
import os
import random
import time
from typing import Final

import msgspec

from orchestrator.simulator._config import SimulatorConfig
from orchestrator.simulator._engines import BatchScheduler, FixedDriver
from orchestrator.simulator._http import Connection, Request
from orchestrator.simulator._stream import Fault, TokenStream
from orchestrator.simulator._wire import (
    Api,
    RequestError,
    json_response,
    parse_generation,
)

_GENERATION_ROUTES: Final[dict[bytes, Api]] = {
    b"/v1/chat/completions": "chat",
    b"/v1/completions": "completions",
}
_ID_PREFIX: Final[dict[Api, str]] = {"chat": "chatcmpl-", "completions": "cmpl-"}


class SimulatorApp:
    """Server-wide state: configuration, seeded draws, the batch scheduler, counters."""

    def __init__(self, config: SimulatorConfig) -> None:
        self.config = config
        self.connections: set[Connection] = set()
        self._rng = random.Random(config.seed)
        self._loop = asyncio.get_running_loop()
        self._scheduler = BatchScheduler(config) if config.mode == "batching" else None
        self._expected_auth = (
            b"Bearer " + config.api_key.encode() if config.api_key is not None else None
        )
        self._id_tag = os.urandom(4).hex()
        self._started_s = time.monotonic()
        self.truth_ttft_ns: list[int] = []  # filled when config.stamp, read by /sim/truth
        self._created = int(time.time())
        # fault thresholds on one uniform draw: [0, error) error, then drop, stall, malformed
        self._error_below = config.error_rate
        self._drop_below = self._error_below + config.drop_rate
        self._stall_below = self._drop_below + config.stall_rate
        self._malformed_below = self._stall_below + config.malformed_rate
        self._models_body = msgspec.json.encode(
            {
                "object": "list",
                "data": [
                    {
                        "id": config.served_model,
                        "object": "model",
                        "created": self._created,
                        "owned_by": "rollbench-simulator",
                    }
                ],
            }
        )
        self.requests_total = 0
        self.generation_requests_total = 0
        self.faults_total: dict[str, int] = {
            "error": 0,
            "drop": 0,
            "stall": 0,
            "malformed": 0,
            "rejected_429": 0,
        }

    def start(self) -> None:
        if self._scheduler is not None:
            self._scheduler.start()

    async def close(self) -> None:
        if self._scheduler is not None:
            await self._scheduler.close()
        for connection in list(self.connections):
            connection.abort()

    def handle(self, connection: Connection, request: Request) -> None:
        self.requests_total += 1
        keep_alive = connection.keep_alive
        path, method = request.path, request.method
        api = _GENERATION_ROUTES.get(path)
        if api is not None:
            if method != b"POST":
                self._fail(connection, RequestError(405, "Use POST", kind="invalid_request_error"))
            elif not self._authorized(request):
                self._fail(connection, _unauthorized())
            else:
                try:
                    self._generate(connection, request, api)
                except RequestError as exc:
                    self._fail(connection, exc)
        elif path == b"/v1/models" and method == b"GET":
            if self._authorized(request):
                connection.respond(json_response(200, self._models_body, keep_alive=keep_alive))
            else:
                self._fail(connection, _unauthorized())
        elif path == b"/health" and method == b"GET":
            connection.respond(json_response(200, b'{"status":"ok"}', keep_alive=keep_alive))
        elif path == b"/sim/stats" and method == b"GET":
            connection.respond(json_response(200, self._stats_body(), keep_alive=keep_alive))
        elif path == b"/sim/truth" and method == b"GET":
            connection.respond(json_response(200, self._truth_body(), keep_alive=keep_alive))
        else:
            message = f"No route for {method.decode('latin-1')} {path.decode('latin-1')}"
            self._fail(connection, RequestError(404, message, kind="invalid_request_error"))

    def _authorized(self, request: Request) -> bool:
        expected = self._expected_auth
        if expected is None:
            return True
        given = request.authorization
        return given is not None and hmac.compare_digest(given, expected)

    def _fail(self, connection: Connection, error: RequestError) -> None:
        keep_alive = connection.keep_alive
        connection.respond(json_response(error.status, error.body, keep_alive=keep_alive))

    def _generate(self, connection: Connection, request: Request, api: Api) -> None:
        config = self.config
        parsed = parse_generation(api, request.body)
        if parsed.model is not None and parsed.model != config.served_model:
            raise RequestError(
                404,
                f"The model `{parsed.model}` does not exist; this simulator serves "
                f"`{config.served_model}`.",
                kind="invalid_request_error",
                code="model_not_found",
            )

        # The fixed set of draws of this request, always in this order.
        rng = self._rng
        fault_draw = rng.random()
        fault_position = rng.random()
        length_jitter = (
            rng.randint(-config.output_tokens_jitter, config.output_tokens_jitter)
            if config.output_tokens_jitter
            else 0
        )
        jitter_seed = rng.getrandbits(64) if config.jitter_ms > 0 else 0
        self.generation_requests_total += 1

        if fault_draw < self._error_below:
            self.faults_total["error"] += 1
            raise RequestError(500, "Simulated internal server error", kind="server_error")
        fault = Fault.NONE
        if fault_draw < self._drop_below:
            fault = Fault.DROP
        elif fault_draw < self._stall_below:
            fault = Fault.STALL
        elif fault_draw < self._malformed_below:
            fault = Fault.MALFORMED

        reasoning = config.reasoning_tokens if api == "chat" else 0
        wanted = reasoning + max(1, config.output_tokens + length_jitter)
        cap = parsed.max_tokens
        produced = wanted if cap is None else min(wanted, cap)
        reasoning = min(reasoning, produced)
        stream = TokenStream(
            sink=connection,
            loop=self._loop,
            api=api,
            streamed=parsed.stream,
            include_usage=parsed.include_usage,
            keep_alive=connection.keep_alive,
            request_id=f"{_ID_PREFIX[api]}{self._id_tag}{self.generation_requests_total:x}",
            created=int(time.time()),
            model=config.served_model,
            prompt_tokens=parsed.prompt_tokens,
            reasoning_tokens=reasoning,
            content_tokens=produced - reasoning,
            finish_reason="length" if produced < wanted else "stop",
            tokens_per_chunk=config.tokens_per_chunk,
            stamp=config.stamp,
            fault=fault,
            fault_position=fault_position,
            stall_s=config.stall_s,
            truth_ttft_ns=self.truth_ttft_ns if config.stamp and parsed.stream else None,
        )
        scheduler = self._scheduler
        if scheduler is None:
            if fault is not Fault.NONE:
                self.faults_total[fault.value] += 1
            connection.stream = stream
            FixedDriver(
                self._loop,
                stream,
                received_s=request.received_s,
                config=config,
                jitter_seed=jitter_seed,
            ).start()
            return
        if not scheduler.submit(stream):
            self.faults_total["rejected_429"] += 1
            raise RequestError(
                429,
                f"The server is overloaded: {scheduler.waiting} requests are waiting "
                f"(queue_limit {config.queue_limit}).",
                kind="rate_limit_error",
                code="rate_limit_exceeded",
            )
        if fault is not Fault.NONE:
            self.faults_total[fault.value] += 1
        connection.stream = stream
        stream.flush_head()

    def _truth_body(self) -> bytes:
        """True TTFT of the streamed answers since the last call (needs `stamp`); resets."""
        values, self.truth_ttft_ns[:] = sorted(self.truth_ttft_ns), []

        def pct(p: float) -> float | None:
            # exact, over observed values (numpy's method="lower")
            return values[int(p / 100 * (len(values) - 1))] / 1e6 if values else None

        return msgspec.json.encode(
            {
                "n": len(values),
                "ttft_p50_ms": pct(50),
                "ttft_p99_ms": pct(99),
                "ttft_max_ms": values[-1] / 1e6 if values else None,
            }
        )

    def _stats_body(self) -> bytes:
        """Counters for benchmarks and tests; `cpu_s` is this process's CPU time."""
        scheduler = self._scheduler
        return msgspec.json.encode(
            {
                "cpu_s": time.process_time(),
                "uptime_s": time.monotonic() - self._started_s,
                "requests_total": self.requests_total,
                "generation_requests_total": self.generation_requests_total,
                "faults_total": self.faults_total,
                "connections": len(self.connections),
                "batch_waiting": scheduler.waiting if scheduler is not None else 0,
                "batch_running": scheduler.running if scheduler is not None else 0,
                "batch_steps": scheduler.steps if scheduler is not None else 0,
            }
        )


def _unauthorized() -> RequestError:
    return RequestError(
        401,
        "Incorrect API key provided (expected `Authorization: Bearer <key>`).",
        kind="invalid_request_error",
        code="invalid_api_key",
    )
