"""Messages between the coordinating process and its client processes, over ZeroMQ.

msgpack via msgspec tagged structs: typed on both ends and cheap. Records cross once per
level per process as raw column bytes; progress crosses four times a second. Nothing
crosses per request, so IPC never sits on the measurement path.
"""

from __future__ import annotations

import msgspec


class Hello(msgspec.Struct, tag=True):
    worker: int
    pid: int


class Setup(msgspec.Struct, tag=True):
    base_url: str
    route: str
    verify_tls: bool
    transport: str  # "native" | "aiohttp"
    headers: dict[str, str]
    bodies: list[bytes]
    input_tokens: list[int]
    stream: bool
    max_event_bytes: int
    tokenizer_path: str | None
    connect_timeout_s: float
    stall_timeout_s: float
    total_timeout_s: float
    max_idle_s: float
    connect_parallelism: int


class Prepare(msgspec.Struct, tag=True):
    level: int
    pattern: str
    concurrency: int
    rate_qps: float
    n_requests: int | None
    n_warmup: int
    min_duration_s: float | None
    max_duration_s: float | None
    drain_timeout_s: float
    seed: int
    workers: int
    give_up_after: int | None


class Ready(msgspec.Struct, tag=True):
    worker: int
    level: int
    connections: int
    warmup_failed: int


class Go(msgspec.Struct, tag=True):
    level: int
    start_at_ns: int


class Progress(msgspec.Struct, tag=True):
    worker: int
    level: int
    issued: int
    completed: int
    failed: int


class HealthReport(msgspec.Struct):
    cpu_s: float
    wall_s: float
    loop_lag_ns: list[int]
    connections_opened: int
    stale_resends: int
    keep_alive: bool
    drained_by_deadline: int
    gave_up: bool
    token_sources: dict[str, int]


class Result(msgspec.Struct, tag=True):
    worker: int
    level: int
    columns: dict[str, bytes]
    health: HealthReport
    failure_examples: dict[str, list[str]]


class Stop(msgspec.Struct, tag=True):
    level: int


class Shutdown(msgspec.Struct, tag=True):
    pass


class WorkerError(msgspec.Struct, tag=True):
    worker: int
    message: str


ToWorker = Setup | Prepare | Go | Stop | Shutdown
FromWorker = Hello | Ready | Progress | Result | WorkerError

encoder = msgspec.msgpack.Encoder()
to_worker = msgspec.msgpack.Decoder(ToWorker)
from_worker = msgspec.msgpack.Decoder(FromWorker)
