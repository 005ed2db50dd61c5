"""The `rollbench` command line: parse, call the library, print.

Errors a user can make (a bad level list, a missing dataset file, an unknown field) end in
one line on stderr and exit status 2. A failing endpoint is not a usage error: the sweep
runs, every failure is classified in the run folder, and the command says what happened.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from pydantic import ValidationError
from typer.exceptions import TyperException

from orchestrator.config import get_settings
from orchestrator.loadgen.dataset import DatasetError
from orchestrator.loadgen.pool import HarnessError
from orchestrator.loadgen.spec import DatasetSpec, EndpointSpec, SweepSpec, SyntheticSpec
from orchestrator.loadgen.sweep import SweepResult, run_sweep
from orchestrator.simulator import SimulatorConfig

app = typer.Typer(
    name="rollbench",
    help="Measure LLM inference endpoints the MLPerf Endpoints way: sweeps, curves, reviews.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

from orchestrator.auth.cli import keys_app, token_app  # noqa: E402

app.add_typer(token_app, name="token", help="API tokens: create (shown once), list, revoke")
app.add_typer(keys_app, name="keys", help="Keys that seal endpoint credentials: rotate, status")

from orchestrator.frontier.cli import frontier_app  # noqa: E402
from orchestrator.interop.cli import export_app, import_app  # noqa: E402
from orchestrator.review.cli import review_app  # noqa: E402
from orchestrator.slo.cli import rank, slo_app  # noqa: E402

app.add_typer(review_app, name="review", help="The review queue: list, show, accept, reject")
app.add_typer(frontier_app, name="frontier", help="Frontiers: show a curve and its versions")
app.add_typer(slo_app, name="slo", help="SLO profiles: list, show, admissibility of points")
app.command("rank", help="Rank systems on a workload by admissible throughput at an SLO")(rank)
app.add_typer(import_app, name="import", help="Import results measured elsewhere (MLPerf)")
app.add_typer(export_app, name="export", help="Export points and frontiers in MLPerf formats")

EXIT_USAGE = 2
EXIT_ENDPOINT = 1
EXIT_HARNESS = 3


def fail_usage(message: str) -> NoReturn:
    print(f"rollbench: error: {message}", file=sys.stderr)
    raise typer.Exit(EXIT_USAGE)


# Where a spec field came from on the command line, so errors name the option.
OPTION_FOR_FIELD = {
    "endpoint.url": "--url",
    "endpoint.model": "--model",
    "endpoint.api": "--api",
    "pattern": "--pattern",
    "levels": "--levels",
    "requests": "--requests",
    "min_duration_s": "--min-duration",
    "max_duration_s": "--max-duration",
    "warmup": "--warmup",
    "workers": "--workers",
    "transport": "--transport",
    "tokenizer": "--tokenizer",
    "dataset.max_tokens": "--max-tokens",
    "dataset.temperature": "--temperature",
    "timeouts.connect_s": "--connect-timeout",
    "timeouts.stall_s": "--stall-timeout",
    "timeouts.total_s": "--total-timeout",
    "timeouts.drain_s": "--drain-timeout",
}


def describe_validation(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err["loc"])
        where = OPTION_FOR_FIELD.get(where, where or "arguments")
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {msg}")
    return "; ".join(parts)


def parse_levels(text: str) -> list[float]:
    try:
        levels = [float(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        fail_usage(f"--levels: expected comma-separated numbers like 1,8,64, got {text!r}")
    if not levels:
        fail_usage("--levels: give at least one level")
    return levels


def parse_synthetic(text: str) -> SyntheticSpec:
    fields: dict[str, int] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep:
            fail_usage(f"--synthetic: expected key=value pairs like isl=128,osl=64, got {item!r}")
        try:
            fields[key.strip()] = int(value)
        except ValueError:
            fail_usage(f"--synthetic: {key.strip()} must be an integer, got {value!r}")
    try:
        return SyntheticSpec(**fields)
    except ValidationError as exc:
        fail_usage("--synthetic: " + describe_validation(exc))


def parse_headers(items: list[str]) -> dict[str, str]:
    headers = {}
    for item in items:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            fail_usage(f"--header: expected 'Name: value', got {item!r}")
        headers[name.strip()] = value.strip()
    return headers


@app.command()
def simulate(
    port: Annotated[int, typer.Option(help="TCP port (0: any free port)")] = 8000,
    host: Annotated[str, typer.Option(help="Address to bind")] = "127.0.0.1",
    mode: Annotated[str, typer.Option(help="fixed | batching")] = "fixed",
    ttft_ms: Annotated[float, typer.Option(help="fixed: time to first token")] = 50.0,
    tpot_ms: Annotated[float, typer.Option(help="fixed: interval between tokens")] = 5.0,
    jitter_ms: Annotated[float, typer.Option(help="fixed: uniform ± jitter per interval")] = 0.0,
    output_tokens: Annotated[
        int, typer.Option(help="tokens per answer (capped by max_tokens)")
    ] = 64,
    tokens_per_chunk: Annotated[int, typer.Option(help="tokens grouped per SSE event")] = 1,
    reasoning_tokens: Annotated[int, typer.Option(help="reasoning tokens sent first")] = 0,
    max_batch: Annotated[int, typer.Option(help="batching: max running sequences")] = 64,
    prefill_ms_per_input_token: Annotated[
        float, typer.Option(help="batching: prefill cost")
    ] = 0.05,
    decode_step_ms: Annotated[float, typer.Option(help="batching: step time at batch 1")] = 10.0,
    decode_step_ms_per_seq: Annotated[
        float, typer.Option(help="batching: added per sequence")
    ] = 0.2,
    queue_limit: Annotated[int, typer.Option(help="batching: waiting requests before 429")] = 1024,
    error_rate: Annotated[float, typer.Option(help="fraction answered HTTP 500")] = 0.0,
    stall_rate: Annotated[float, typer.Option(help="fraction that stall mid-stream")] = 0.0,
    malformed_rate: Annotated[float, typer.Option(help="fraction with an invalid chunk")] = 0.0,
    drop_rate: Annotated[float, typer.Option(help="fraction whose connection drops")] = 0.0,
    api_key: Annotated[str | None, typer.Option(help="require this bearer token")] = None,
    model: Annotated[str, typer.Option(help="served model name")] = "sim-model",
    stamp: Annotated[bool, typer.Option(help="stamp server monotonic time in chunks")] = False,
    seed: Annotated[int | None, typer.Option(help="seed for faults and jitter")] = None,
) -> None:
    """Serve a simulated OpenAI-compatible endpoint (chat, completions, models)."""
    from orchestrator.simulator import run_simulator

    try:
        config = SimulatorConfig(
            mode=mode,
            ttft_ms=ttft_ms,
            tpot_ms=tpot_ms,
            jitter_ms=jitter_ms,
            output_tokens=output_tokens,
            tokens_per_chunk=tokens_per_chunk,
            reasoning_tokens=reasoning_tokens,
            max_batch=max_batch,
            prefill_ms_per_input_token=prefill_ms_per_input_token,
            decode_step_ms=decode_step_ms,
            decode_step_ms_per_seq=decode_step_ms_per_seq,
            queue_limit=queue_limit,
            error_rate=error_rate,
            stall_rate=stall_rate,
            malformed_rate=malformed_rate,
            drop_rate=drop_rate,
            api_key=api_key,
            served_model=model,
            stamp=stamp,
            seed=seed,
        )
    except ValidationError as exc:
        fail_usage(describe_validation(exc))
    print(f"rollbench simulator ({config.mode}) serving {model!r} on http://{host}:{port}/v1")
    try:
        run_simulator(config, host, port)
    except OSError as exc:
        fail_usage(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


@app.command()
def run(
    url: Annotated[
        str, typer.Option(help="base URL of the OpenAI-compatible API, e.g. http://host:8000/v1")
    ],
    model: Annotated[str, typer.Option(help="served model name")],
    out: Annotated[Path, typer.Option(help="run folder to write")],
    levels: Annotated[
        str,
        typer.Option(
            help="comma-separated levels: concurrency, QPS (poisson) or burst size (offline)"
        ),
    ] = "1,8,64",
    pattern: Annotated[str, typer.Option(help="concurrency | poisson | offline")] = "concurrency",
    requests: Annotated[int | None, typer.Option(help="measured requests per level")] = None,
    min_duration: Annotated[float | None, typer.Option(help="minimum seconds per level")] = None,
    max_duration: Annotated[
        float | None, typer.Option(help="stop issuing after this many seconds")
    ] = None,
    warmup: Annotated[int, typer.Option(help="uncounted requests before each level")] = 0,
    dataset: Annotated[
        Path | None, typer.Option(help="JSONL prompts (prompt or messages per line)")
    ] = None,
    synthetic: Annotated[
        str | None, typer.Option(help="synthetic prompts, e.g. isl=128,osl=64")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option(help="override max_tokens of every request")
    ] = None,
    system: Annotated[str | None, typer.Option(help="system message for chat prompts")] = None,
    temperature: Annotated[float | None, typer.Option(help="sampling temperature")] = None,
    api: Annotated[str, typer.Option(help="chat | completions")] = "chat",
    api_key_env: Annotated[
        str | None, typer.Option(help="environment variable holding the API key")
    ] = None,
    header: Annotated[list[str], typer.Option(help="extra header 'Name: value' (repeatable)")] = [],  # noqa: B006
    extra_body: Annotated[
        str | None, typer.Option(help="JSON object merged into every request body")
    ] = None,
    insecure: Annotated[bool, typer.Option(help="do not verify TLS certificates")] = False,
    stream: Annotated[bool, typer.Option(help="stream responses (SSE)")] = True,
    usage: Annotated[bool, typer.Option(help="ask for usage in the stream (token counts)")] = True,
    tokenizer: Annotated[
        Path | None, typer.Option(help="Hugging Face tokenizer.json to count tokens")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="client processes (default: auto)")] = None,
    seed: Annotated[int, typer.Option(help="seed for Poisson arrivals")] = 42,
    transport: Annotated[str, typer.Option(help="native | aiohttp")] = "native",
    connect_timeout: Annotated[
        float | None, typer.Option(help="seconds [default: settings]")
    ] = None,
    stall_timeout: Annotated[
        float | None, typer.Option(help="seconds without a byte [default: settings]")
    ] = None,
    total_timeout: Annotated[
        float | None, typer.Option(help="seconds per request [default: settings]")
    ] = None,
    drain_timeout: Annotated[
        float | None,
        typer.Option(help="seconds to wait for in-flight requests [default: settings]"),
    ] = None,
) -> None:
    """Measure an endpoint at each level of a load pattern and write a run folder."""
    defaults = get_settings().loadgen
    api_key = None
    if api_key_env is not None:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            fail_usage(f"--api-key-env: environment variable {api_key_env} is not set")
    extra: dict[str, Any] = {}
    if extra_body is not None:
        try:
            extra = json.loads(extra_body)
        except json.JSONDecodeError as exc:
            fail_usage(f"--extra-body: not JSON: {exc.msg}")
        if not isinstance(extra, dict):
            fail_usage("--extra-body: must be a JSON object")
    if dataset is None and synthetic is None:
        synthetic = "isl=128,osl=64"
    if dataset is not None and synthetic is not None:
        fail_usage("give --dataset or --synthetic, not both")
    if dataset is not None and not dataset.is_file():
        fail_usage(f"--dataset: file not found: {dataset}")
    fields: dict[str, Any] = {
        "endpoint": {
            "url": url,
            "model": model,
            "api": api,
            "api_key": api_key,
            "headers": parse_headers(header),
            "verify_tls": not insecure,
            "extra_body": extra,
        },
        "dataset": {
            "path": dataset,
            "synthetic": parse_synthetic(synthetic) if synthetic else None,
            "max_tokens": max_tokens,
            "system": system,
            "temperature": temperature,
        },
        "pattern": pattern,
        "levels": parse_levels(levels),
        "requests": requests,
        "min_duration_s": min_duration,
        "max_duration_s": max_duration,
        "warmup": warmup,
        "seed": seed,
        "workers": defaults.workers if workers is None else workers,
        "stream": stream,
        "include_usage": usage,
        "tokenizer": tokenizer,
        "transport": transport,
        "timeouts": {
            "connect_s": defaults.connect_timeout_s if connect_timeout is None else connect_timeout,
            "stall_s": defaults.stall_timeout_s if stall_timeout is None else stall_timeout,
            "total_s": defaults.total_timeout_s if total_timeout is None else total_timeout,
            "drain_s": defaults.drain_timeout_s if drain_timeout is None else drain_timeout,
        },
    }
    try:
        # One validation of the whole tree, so an error names its place (endpoint.url → --url).
        spec = SweepSpec.model_validate(fields)
    except ValidationError as exc:
        fail_usage(describe_validation(exc))
    raise typer.Exit(execute(spec, out))


def execute(spec: SweepSpec, out: Path) -> int:
    """Run a sweep with live progress; print the table; return the exit status."""
    from orchestrator.display import LiveReporter, print_sweep

    reporter = LiveReporter(spec)
    try:
        with reporter:
            result = run_sweep(spec, out, reporter=reporter)
    except DatasetError as exc:
        fail_usage(str(exc))
    except HarnessError as exc:
        print(f"rollbench: the measuring client failed: {exc}", file=sys.stderr)
        return EXIT_HARNESS
    print_sweep(result)
    return _exit_status(result)


def _exit_status(result: SweepResult) -> int:
    issued = sum(r.summary.issued for r in result.levels)
    ok = sum(r.summary.succeeded for r in result.levels)
    if issued and not ok:
        examples = [e for r in result.levels for ex in r.failure_examples.values() for e in ex]
        hint = f": {examples[0]}" if examples else ""
        print(
            f"rollbench: every one of the {issued} requests failed{hint}\n"
            f"  the failures are classified in {result.out_dir}",
            file=sys.stderr,
        )
        return EXIT_ENDPOINT
    return 0


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="run folder to write")] = Path("rollbench-data/demo"),
    levels: Annotated[str, typer.Option(help="concurrency levels")] = "1,4,16,64",
    min_duration: Annotated[float, typer.Option(help="seconds per level")] = 3.0,
) -> None:
    """Start a simulated continuous-batching endpoint and sweep it: a curve in ~20 s."""
    from orchestrator.simulator import start_in_process

    config = SimulatorConfig(mode="batching", output_tokens=64, seed=1)
    with start_in_process(config) as url:
        print(f"simulated endpoint (continuous batching) at {url}")
        spec = SweepSpec(
            endpoint=EndpointSpec(url=url, model=config.served_model),
            dataset=DatasetSpec(synthetic=SyntheticSpec(isl=128, osl=64)),
            levels=parse_levels(levels),
            min_duration_s=min_duration,
            warmup=4,
        )
        status = execute(spec, out)
    raise typer.Exit(status)


@app.command()
def migrate() -> None:
    """Build or upgrade the store's schema (Alembic migrations) and load workloads."""
    from orchestrator import migrate as migrations
    from orchestrator.db import get_engine, session_scope
    from orchestrator.errors import ServiceError
    from orchestrator.workloads.service import sync_workloads

    settings = get_settings()
    url = settings.resolved_database_url()
    try:
        migrations.upgrade(url)
        with session_scope(get_engine()) as session:
            names = [f"{w.name} v{w.version}" for w in sync_workloads(session)]
    except ServiceError as exc:
        fail_usage(exc.message)
    print(f"store at {_safe_url(url)} is up to date; workloads: {', '.join(names) or 'none'}")


def _safe_url(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


@app.command()
def api(
    host: Annotated[str, typer.Option(help="address to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8080,
) -> None:
    """Serve the REST API (distributed mode: one of several processes)."""
    import uvicorn

    uvicorn.run("api.app:create_app", factory=True, host=host, port=port, log_level="info")


@app.command()
def worker(
    queues: Annotated[
        str, typer.Option(help="comma-separated: measure, default")
    ] = "measure,default",
    name: Annotated[str | None, typer.Option(help="worker name (default: host and pid)")] = None,
) -> None:
    """Run a Celery worker: one measurement at a time (solo pool), housekeeping too."""
    from workers.app import app as celery_app

    argv = [
        "worker",
        "--queues",
        queues,
        "--pool",
        "solo",
        "--concurrency",
        "1",
        "--loglevel",
        "INFO",
        "--without-gossip",
        "--without-mingle",
    ]
    if name:
        argv += ["--hostname", name]
    celery_app.worker_main(argv)


@app.command()
def scheduler() -> None:
    """Run the scheduler process (enqueues only)."""
    from workers.scheduler import main as run_scheduler

    run_scheduler()


@app.command()
def up(
    demo: Annotated[
        bool, typer.Option(help="also start a simulated endpoint and submit a sweep")
    ] = False,
    host: Annotated[str, typer.Option(help="API address")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="API port")] = 8080,
) -> None:
    """Start the whole daemon on this machine: API, worker, scheduler (embedded store)."""
    import signal

    from orchestrator.daemon import Daemon

    def _terminate(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM stops the daemon as cleanly as Ctrl-C

    signal.signal(signal.SIGTERM, _terminate)
    if demo:
        # The demo's levels last seconds: its data directory reviews them under the demo
        # programme's durations (every process on that directory reads it, CLIs included).
        from orchestrator.programme import PROJECT_ROOT

        local = get_settings().data_dir / "programme.yaml"
        if not local.exists():
            local.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(PROJECT_ROOT / "configs" / "programme-demo.yaml", local)
            print(f"demo: programme rules in {local} (the demo's: levels of seconds)")
    settings = get_settings()
    migrate()
    daemon = Daemon(host=host, port=port, log_dir=settings.data_dir / "logs")
    sims = None
    if demo:
        from orchestrator.demo import start_simulators

        sims = start_simulators()  # before the worker, which may resume a sweep of them
    try:
        daemon.start()
        daemon.wait_ready()
        print(
            f"rollbench is up: API {daemon.url} (docs {daemon.url}/docs); data in "
            f"{settings.data_dir}/; logs in {daemon.log_dir}/"
        )
        if demo:
            from orchestrator.demo import run_demo

            assert sims is not None
            run_demo(daemon.url, sims)
        print("Ctrl-C stops everything; `rollbench up` again continues where it stopped.")
        daemon.serve_forever()
    except KeyboardInterrupt:
        print("stopping ...", file=sys.stderr)
    except RuntimeError as exc:
        print(f"rollbench: {exc}", file=sys.stderr)
        raise typer.Exit(1) from None
    finally:
        daemon.stop()
        if sims is not None:
            sims.stack.close()


def main() -> None:
    """Entry point that turns usage errors into one line on stderr and exit status 2."""
    try:
        status = app(standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("rollbench: interrupted", file=sys.stderr)
        sys.exit(130)
    except TyperException as exc:  # typer's vendored click: UsageError, BadParameter, ...
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        print(f"rollbench: error: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    sys.exit(status if isinstance(status, int) else 0)


if __name__ == "__main__":
    main()
