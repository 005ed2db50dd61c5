"""The client benchmark: rollbench against its peers, same server, same run, interleaved.

Two parts (see bench/README.md for the figures and ../shared BENCHMARKS.md for the method):

1. Ceiling. nginx pinned to one core returns a fixed 16-token SSE stream for every request
   (it costs nginx ~15 µs), so the client on the other core is the only bottleneck. Per
   client and concurrency: completed streaming requests/s, client CPU per request and per SSE
   event, delivered concurrency (QPS × mean latency). Clients alternate within each round;
   figures are medians over rounds; ratios are rollbench ÷ peer per round, then the median.

2. Fidelity. The simulator, in its own process on the other core, stamps every chunk with its
   CLOCK_MONOTONIC time and keeps the true TTFT of every answer (first content write − request
   read). The client's TTFT p99 minus the server's true TTFT p99 is the client's own queueing.

    python bench/run.py                       # both parts, 3 rounds
    python bench/run.py --part ceiling --rounds 5 --concurrency 256
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from nginx_sse import nginx_sse_server  # noqa: E402
from ours import run_rollbench  # noqa: E402
from peers import run_aiperf, run_reference_client  # noqa: E402

log = logging.getLogger("rollbench.bench")
MODEL = "bench-model"


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ceiling(args: argparse.Namespace, results: list[dict[str, Any]]) -> None:
    clients = args.clients
    for rnd in range(args.rounds):
        for c in args.concurrency:
            with nginx_sse_server(0, tokens=16, cpu=args.server_cpu) as url:
                order = clients if rnd % 2 == 0 else list(reversed(clients))
                for client in order:
                    n = args.requests if client != "aiperf" else min(args.requests, 4000)
                    if client == "rollbench":
                        r = run_rollbench(
                            url, MODEL, c, n, args.timeout, client_cpus=args.client_cpus
                        )
                    elif client == "rollbench-aiohttp":
                        r = run_rollbench(
                            url,
                            MODEL,
                            c,
                            min(n, 10000),
                            args.timeout,
                            client_cpus=args.client_cpus,
                            transport="aiohttp",
                        )
                    elif client == "reference":
                        r = run_reference_client(
                            url, MODEL, c, n, args.timeout, client_cpus=args.client_cpus
                        )
                    else:
                        r = run_aiperf(url, MODEL, c, n, args.timeout, client_cpus=args.client_cpus)
                    if r is None:
                        log.info("%s not installed: skipped", client)
                        continue
                    r.update({"part": "ceiling", "round": rnd, "client": client})
                    results.append(r)
                    log.info(
                        "round %d c=%d %-18s %8.0f req/s  cpu/req %5.1f µs  delivered %6.1f  "
                        "ttft p99 %6.1f ms  foreign %.2f s  %s",
                        rnd,
                        c,
                        client,
                        r.get("qps") or 0,
                        r.get("cpu_us_per_req") or 0,
                        r.get("delivered_concurrency") or 0,
                        r.get("ttft_p99_ms") or 0,
                        r.get("foreign_on_client_cores_s") or 0,
                        r.get("error", "")[:200],
                    )
                    time.sleep(0.5)


def fidelity(args: argparse.Namespace, results: list[dict[str, Any]]) -> None:
    import httpx

    from orchestrator.simulator import SimulatorConfig, start_in_process

    config = SimulatorConfig(
        ttft_ms=args.ttft_ms, tpot_ms=args.tpot_ms, output_tokens=32, stamp=True, served_model=MODEL
    )
    for rnd in range(args.rounds):
        for c in args.fidelity_concurrency:
            with start_in_process(config, cpu=args.server_cpu) as url:
                root = url.removesuffix("/v1")
                for client in ["rollbench", "reference"]:
                    httpx.get(f"{root}/sim/truth", timeout=10)  # reset the server's truth
                    stats0 = httpx.get(f"{root}/sim/stats", timeout=10).json()
                    n = 8 * c
                    if client == "rollbench":
                        r = run_rollbench(
                            url, MODEL, c, n, args.timeout, client_cpus=args.client_cpus, tokens=32
                        )
                    else:
                        r = run_reference_client(
                            url, MODEL, c, n, args.timeout, tokens=32, client_cpus=args.client_cpus
                        )
                    if r is None:
                        continue
                    truth = httpx.get(f"{root}/sim/truth", timeout=10).json()
                    stats1 = httpx.get(f"{root}/sim/stats", timeout=10).json()
                    busy = (stats1["cpu_s"] - stats0["cpu_s"]) / max(
                        stats1["uptime_s"] - stats0["uptime_s"], 1e-9
                    )
                    r.update(
                        {
                            "server_cpu_util": busy,
                            "part": "fidelity",
                            "round": rnd,
                            "client": client,
                            "server_ttft_p50_ms": truth["ttft_p50_ms"],
                            "server_ttft_p99_ms": truth["ttft_p99_ms"],
                            "server_answers": truth["n"],
                        }
                    )
                    if r.get("ttft_p99_ms") is not None and truth["ttft_p99_ms"] is not None:
                        r["ttft_p99_excess_ms"] = r["ttft_p99_ms"] - truth["ttft_p99_ms"]
                        r["ttft_p50_excess_ms"] = r["ttft_p50_ms"] - truth["ttft_p50_ms"]
                    results.append(r)
                    log.info(
                        "round %d c=%d %-10s ttft p50 %.2f p99 %.2f ms; server truth p50 %.2f "
                        "p99 %.2f ms; excess p99 %.2f ms; simulator busy %.0f%% of a core",
                        rnd,
                        c,
                        client,
                        r.get("ttft_p50_ms") or 0,
                        r.get("ttft_p99_ms") or 0,
                        truth["ttft_p50_ms"] or 0,
                        truth["ttft_p99_ms"] or 0,
                        r.get("ttft_p99_excess_ms") or 0,
                        100 * busy,
                    )


def report(results: list[dict[str, Any]]) -> str:
    lines = []
    ceil = [r for r in results if r["part"] == "ceiling" and r.get("ok")]
    if ceil:
        lines += [
            "| c | client | req/s (median) | ratio rollbench ÷ client | CPU µs/req | CPU µs/event "
            "| delivered conc. | TTFT p99 ms | rounds |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for c in sorted({r["concurrency"] for r in ceil}):
            ours = {
                r["round"]: r["qps"]
                for r in ceil
                if r["concurrency"] == c and r["client"] == "rollbench"
            }
            for client in dict.fromkeys(r["client"] for r in ceil):
                rows = [r for r in ceil if r["concurrency"] == c and r["client"] == client]
                if not rows:
                    continue
                ratios = [ours[r["round"]] / r["qps"] for r in rows if r["round"] in ours]
                lines.append(
                    f"| {c} | {client} | {_median([r['qps'] for r in rows]):,.0f} | "
                    f"{_fmt(_median(ratios), '.2f')} | "
                    f"{_fmt(_median([r.get('cpu_us_per_req') for r in rows]), '.0f')} | "
                    f"{_fmt(_median([r.get('cpu_us_per_event') for r in rows]), '.1f')} | "
                    f"{_fmt(_median([r.get('delivered_concurrency') for r in rows]), '.0f')} | "
                    f"{_fmt(_median([r.get('ttft_p99_ms') for r in rows]), '.1f')} | {len(rows)} |"
                )
    fid = [r for r in results if r["part"] == "fidelity" and r.get("ok")]
    if fid:
        lines += [
            "",
            "| c | client | client TTFT p50 / p99 ms | server truth p50 / p99 ms | "
            "excess p50 / p99 ms | read delay p50 / p99 / max ms | simulator CPU | rounds |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for c in sorted({r["concurrency"] for r in fid}):
            for client in dict.fromkeys(r["client"] for r in fid):
                rows = [r for r in fid if r["concurrency"] == c and r["client"] == client]
                if not rows:
                    continue

                def m(key: str, rows: list[dict[str, Any]] = rows) -> str:
                    return _fmt(_median([r.get(key) for r in rows]), ".2f")

                lines.append(
                    f"| {c} | {client} | {m('ttft_p50_ms')} / {m('ttft_p99_ms')} | "
                    f"{m('server_ttft_p50_ms')} / {m('server_ttft_p99_ms')} | "
                    f"{m('ttft_p50_excess_ms')} / {m('ttft_p99_excess_ms')} | "
                    f"{m('read_delay_p50_ms')} / {m('read_delay_p99_ms')} / "
                    f"{m('read_delay_max_ms')} | "
                    f"{_fmt(_median([r.get('server_cpu_util') for r in rows]), '.0%')} | "
                    f"{len(rows)} |"
                )
    return "\n".join(lines)


def _fmt(v: float | None, spec: str) -> str:
    return "—" if v is None else format(v, spec)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--part", choices=["ceiling", "fidelity", "both"], default="both")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--fidelity-concurrency", type=int, nargs="+", default=[64, 256])
    ap.add_argument(
        "--clients", nargs="+", default=["rollbench", "reference", "aiperf", "rollbench-aiohttp"]
    )
    ap.add_argument("--requests", type=int, default=30000)
    ap.add_argument("--ttft-ms", type=float, default=50.0)
    ap.add_argument("--tpot-ms", type=float, default=5.0)
    ap.add_argument("--timeout", type=float, default=180.0)
    ap.add_argument("--client-cpus", default="0")
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--out", type=Path, default=HERE / "out" / "results.jsonl")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    results: list[dict[str, Any]] = []
    try:
        if args.part in ("ceiling", "both"):
            ceiling(args, results)
        if args.part in ("fidelity", "both"):
            fidelity(args, results)
    finally:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("a") as fh:
            for r in results:
                fh.write(json.dumps(r, default=str) + "\n")
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
