"""A server that costs (almost) nothing: nginx answering every request with a fixed SSE body.

Why: to measure a load generator's own ceiling, the server must not be the bottleneck. One nginx
worker pinned to the other core returns a canned OpenAI chat-completions stream (role chunk,
``tokens`` one-token content chunks, a finish chunk, a usage chunk, ``data: [DONE]``), so every
request costs nginx a few microseconds and the client is the only thing being measured.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/bin/nginx")


def find_nginx() -> str | None:
    """Locate the nginx binary (env ``ROLLBENCH_NGINX`` wins), or None if absent."""
    env = os.environ.get("ROLLBENCH_NGINX")
    if env:
        return env if os.access(env, os.X_OK) else None
    found = shutil.which("nginx")
    if found:
        return found
    return next((p for p in NGINX_CANDIDATES if os.access(p, os.X_OK)), None)


def free_port() -> int:
    """Ask the kernel for a free loopback port (racy but fine for a benchmark)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sse_body(tokens: int = 16, model: str = "bench-model", prompt_tokens: int = 8) -> str:
    """The complete OpenAI chat streaming body nginx will return for every request."""
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, str], finish: str | None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return "data: " + json.dumps({**base, "choices": [choice]}, separators=(",", ":")) + "\n\n"

    parts = [chunk({"role": "assistant", "content": ""}, None)]
    parts += [chunk({"content": f" t{i}"}, None) for i in range(tokens)]
    parts.append(chunk({}, "stop"))
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": tokens,
        "total_tokens": prompt_tokens + tokens,
    }
    parts.append(
        "data: "
        + json.dumps({**base, "choices": [], "usage": usage}, separators=(",", ":"))
        + "\n\n"
    )
    parts.append("data: [DONE]\n\n")
    return "".join(parts)


def _nginx_quote(text: str) -> str:
    """Quote a string for an nginx config: single quotes, escaped backslash/quote/newline."""
    if "$" in text:
        raise ValueError("'$' would be expanded as an nginx variable")
    esc = text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return "'" + esc + "'"


def nginx_config(port: int, body: str, cpu: int, prefix: Path) -> str:
    """Config for one pinned worker that returns ``body`` to any method on any path."""
    affinity = format(1 << cpu, "b")
    user = "user root;\n" if os.geteuid() == 0 else ""
    return f"""{user}worker_processes 1;
worker_cpu_affinity {affinity};
worker_rlimit_nofile 65536;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{
    worker_connections 16384;
    multi_accept on;
}}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    keepalive_requests 1000000;
    keepalive_timeout 60;
    tcp_nodelay on;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            default_type text/event-stream;
            return 200 {_nginx_quote(body)};
        }}
    }}
}}
"""


def _wait_port(port: int, proc: subprocess.Popen[bytes], deadline_s: float) -> None:
    """Block until something accepts on 127.0.0.1:port, or raise if nginx died or took too long."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited early with code {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.02)
    raise TimeoutError(f"nginx did not listen on 127.0.0.1:{port} within {deadline_s} s")


@contextlib.contextmanager
def nginx_sse_server(
    port: int,
    tokens: int = 16,
    cpu: int = 1,
    *,
    model: str = "bench-model",
    startup_timeout_s: float = 10.0,
) -> Iterator[str]:
    """Run nginx serving the fixed SSE body on 127.0.0.1:port; yield ``http://127.0.0.1:port/v1``.

    ``port=0`` picks a free port. nginx (master and worker) is also started under ``taskset`` so
    both stay off the client's core. The process is killed and its temp dir removed on exit.
    """
    nginx = find_nginx()
    if nginx is None:
        raise FileNotFoundError("nginx not found (apt-get install nginx-light)")
    if port == 0:
        port = free_port()
    with tempfile.TemporaryDirectory(prefix="rollbench-nginx-") as tmp:
        prefix = Path(tmp)
        conf = prefix / "nginx.conf"
        conf.write_text(nginx_config(port, sse_body(tokens, model), cpu, prefix))
        cmd = [nginx, "-q", "-c", str(conf), "-p", str(prefix), "-e", str(prefix / "error.log")]
        if shutil.which("taskset"):
            cmd = ["taskset", "-c", str(cpu), *cmd]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            _wait_port(port, proc, startup_timeout_s)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the master so it reaps its worker (no zombies); SIGKILL the group if it lingers."""
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=5)
