"""How many streaming requests per second the simulator serves, and at what CPU cost.

Starts the simulator in its own process, by default at zero latency (ttft 0, tpot 0, 16
tokens, one token per event; options change these) and drives it with an aiohttp client
(on uvloop) at a fixed concurrency for a few seconds. Prints completed streaming requests
per second, the server's CPU use (from its `/sim/stats`, i.e. its own process CPU time)
and the client's, the server's CPU time per request — whose inverse is the rate one fully
busy server core would reach — and the mean request latency against the configured one.
On a 2-core machine the client usually saturates first; that is the point: the simulator
must not be the bottleneck of a harness benchmark.

    .venv/bin/python bench/simulator_capacity.py [--concurrency 64] [--duration-s 5]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import aiohttp

from orchestrator.simulator import SimulatorConfig, start_in_process

try:
    import uvloop
except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
    uvloop = None  # type: ignore[assignment]


async def _worker(
    session: aiohttp.ClientSession,
    url: str,
    body: dict[str, object],
    stop_at: float,
    latencies_s: list[float],
) -> tuple[int, int]:
    completed = failed = 0
    while (sent := time.perf_counter()) < stop_at:
        async with session.post(url, json=body) as response:
            payload = await response.read()
        if response.status == 200 and payload.endswith(b"data: [DONE]\n\n"):
            completed += 1
            latencies_s.append(time.perf_counter() - sent)
        else:
            failed += 1
    return completed, failed


async def _drive(base_url: str, concurrency: int, duration_s: float) -> dict[str, float]:
    url = base_url + "/chat/completions"
    stats_url = base_url.removesuffix("/v1") + "/sim/stats"
    body: dict[str, object] = {
        "model": "sim-model",
        "messages": [{"role": "user", "content": "how fast can you go"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        # warm-up: open the connections and let both sides settle
        warm_up_until = time.perf_counter() + 0.5
        await asyncio.gather(
            *(_worker(session, url, body, warm_up_until, []) for _ in range(concurrency))
        )
        async with session.get(stats_url) as response:
            before = await response.json()
        client_cpu_0, wall_0 = time.process_time(), time.perf_counter()
        latencies_s: list[float] = []
        results = await asyncio.gather(
            *(
                _worker(session, url, body, wall_0 + duration_s, latencies_s)
                for _ in range(concurrency)
            )
        )
        wall_s = time.perf_counter() - wall_0
        client_cpu_s = time.process_time() - client_cpu_0
        async with session.get(stats_url) as response:
            after = await response.json()
    completed = sum(c for c, _ in results)
    server_cpu_s = after["cpu_s"] - before["cpu_s"]
    return {
        "completed": completed,
        "failed": sum(f for _, f in results),
        "wall_s": wall_s,
        "req_per_s": completed / wall_s,
        "server_cpu_frac": server_cpu_s / wall_s,
        "client_cpu_frac": client_cpu_s / wall_s,
        "server_cpu_us_per_req": 1e6 * server_cpu_s / max(completed, 1),
        "mean_latency_ms": 1e3 * sum(latencies_s) / max(len(latencies_s), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--duration-s", type=float, default=5.0)
    parser.add_argument("--output-tokens", type=int, default=16)
    parser.add_argument("--tokens-per-chunk", type=int, default=1)
    parser.add_argument("--ttft-ms", type=float, default=0.0)
    parser.add_argument("--tpot-ms", type=float, default=0.0)
    args = parser.parse_args()
    config = SimulatorConfig(
        ttft_ms=args.ttft_ms,
        tpot_ms=args.tpot_ms,
        output_tokens=args.output_tokens,
        tokens_per_chunk=args.tokens_per_chunk,
    )
    with start_in_process(config) as base_url:
        coroutine = _drive(base_url, args.concurrency, args.duration_s)
        result = uvloop.run(coroutine) if uvloop is not None else asyncio.run(coroutine)
    print(
        f"simulator capacity: concurrency {args.concurrency}, {args.output_tokens} tokens/request "
        f"({args.tokens_per_chunk} per event), ttft {args.ttft_ms:g} ms, tpot {args.tpot_ms:g} ms, "
        f"{args.duration_s:g} s"
    )
    print(
        f"  completed streaming requests/s : {result['req_per_s']:.0f} "
        f"({result['completed']:.0f} ok, {result['failed']:.0f} failed)"
    )
    print(f"  server CPU                     : {100 * result['server_cpu_frac']:.0f} % of one core")
    print(
        f"  server CPU per request         : {result['server_cpu_us_per_req']:.0f} µs "
        f"(≈ {1e6 / max(result['server_cpu_us_per_req'], 1e-9):.0f} req/s per busy core)"
    )
    print(f"  client CPU (aiohttp)           : {100 * result['client_cpu_frac']:.0f} % of one core")
    expected_ms = args.ttft_ms + (args.output_tokens - 1) * args.tpot_ms
    print(
        f"  mean request latency           : {result['mean_latency_ms']:.2f} ms "
        f"(configured {expected_ms:g} ms)"
    )


if __name__ == "__main__":
    main()
