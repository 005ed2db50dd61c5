"""An OpenAI-compatible simulated inference server: cheap enough never to be the bottleneck
of a harness benchmark, exact enough to be the ground truth of tests (DESIGN §6).

It serves `POST /v1/chat/completions` and `POST /v1/completions` (streamed as SSE over a
chunked body, or as one JSON body), `GET /v1/models`, `GET /health`, and `GET /sim/stats`
(its own CPU time and counters). Timing is either fixed (TTFT, then one token every TPOT,
on absolute deadlines) or a continuous-batching model; faults (HTTP 500, stalls, malformed
events, dropped connections, 429 on a full queue) are drawn from a seeded generator. The
HTTP server is hand-written on `asyncio.Protocol` + httptools and runs on uvloop when it
is installed.

    with start_in_thread(SimulatorConfig(ttft_ms=50, tpot_ms=5)) as sim:
        httpx.post(sim.url + "/chat/completions", json={...})
"""

from orchestrator.simulator._config import SimulatorConfig
from orchestrator.simulator._server import (
    Simulator,
    run_simulator,
    serve,
    start_in_process,
    start_in_thread,
)

__all__ = [
    "Simulator",
    "SimulatorConfig",
    "run_simulator",
    "serve",
    "start_in_process",
    "start_in_thread",
]
