"""Run peer load generators against a loopback endpoint and return what they measured.

Why: rollbench's figures only mean something next to a peer measured in the same run on the
same server (these machines drift 10-40 % between rounds). Each runner here launches one peer
as a bounded subprocess (pinned with ``taskset``), reads the peer's own result files, and adds
what the peer does not report: the CPU its whole process tree used, in total and during the
measured window, and the delivered concurrency (Little's law: completed/s x mean latency).

Peers are installed outside the repo (nothing of theirs is committed) and located by env vars:
``ROLLBENCH_REF_CLIENT`` (the MLCommons ``inference-endpoint`` executable) and
``ROLLBENCH_AIPERF`` (the ``aiperf`` executable), defaulting to the venvs under /work/peers.
A runner returns None (and logs why) when its peer is not installed; a run that fails or times
out returns a dict with ``ok: False`` and ``error``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

log = logging.getLogger("rollbench.bench.peers")

DEFAULT_REF_CLIENT = "/work/peers/ref-venv/bin/inference-endpoint"
DEFAULT_AIPERF = "/work/peers/aiperf-venv/bin/aiperf"
CLK_TCK = os.sysconf("SC_CLK_TCK")
SAMPLE_INTERVAL_S = 0.05
# Loopback only: every peer is pointed at the URL it is given, and these keep the Hugging Face
# and tiktoken libraries from trying to reach their hubs.
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}


# --------------------------------------------------------------------------------------------
# Locating peers


def locate_peer(env_var: str, default: str) -> tuple[str | None, str]:
    """(path, reason): the executable named by ``env_var`` or ``default``, or None and why not."""
    path = os.environ.get(env_var) or default
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return path, f"found {path}"
    src = "$" + env_var if os.environ.get(env_var) else "default path"
    return None, f"not installed: {path} ({src}) is not an executable file"


def locate_reference_client() -> tuple[str | None, str]:
    """The MLCommons reference client, ``inference-endpoint``."""
    return locate_peer("ROLLBENCH_REF_CLIENT", DEFAULT_REF_CLIENT)


def locate_aiperf() -> tuple[str | None, str]:
    """NVIDIA AIPerf's ``aiperf``."""
    return locate_peer("ROLLBENCH_AIPERF", DEFAULT_AIPERF)


def dist_version(executable: str, dist: str) -> str | None:
    """Version of ``dist`` in the venv owning ``executable``, read from its dist-info name."""
    venv = Path(executable).resolve().parent.parent
    norm = dist.replace("-", "_").lower()
    for info in venv.glob("lib/python*/site-packages/*.dist-info"):
        name, _, version = info.name.removesuffix(".dist-info").partition("-")
        if name.lower() == norm:
            return version
    return None


def origin_of(base_url: str) -> str:
    """``http://host:port`` from a base URL: both peers append ``/v1/chat/completions`` to it."""
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


# --------------------------------------------------------------------------------------------
# CPU sampling: the process tree of the peer and the busy time of the cores it is pinned to


def parse_cpu_list(spec: str) -> list[int]:
    """``"0"``, ``"0,2"`` or ``"0-3"`` (taskset -c syntax) as a list of CPU numbers."""
    cpus: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.strip().partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def _busy_ticks(cpus: Sequence[int]) -> tuple[int, int]:
    """Non-idle ticks (all but idle and iowait) of ``cpus`` and of the other CPUs, /proc/stat."""
    want = {f"cpu{c}" for c in cpus}
    mine = others = 0
    with open("/proc/stat") as f:
        for line in f:
            fields = line.split()
            if not fields or not fields[0].startswith("cpu") or fields[0] == "cpu":
                continue
            vals = [int(v) for v in fields[1:9]]
            busy = sum(vals) - vals[3] - vals[4]
            if fields[0] in want:
                mine += busy
            else:
                others += busy
    return mine, others


def _session_procs(session: int) -> Iterator[tuple[int, bytes, list[bytes]]]:
    """(pid, comm, stat fields after comm) of every live process in ``session``."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        close = raw.rfind(b")")
        rest = raw[close + 2 :].split()
        # rest[0] is state (field 3); session is field 6, utime..cstime are fields 14..17.
        if int(rest[3]) == session:
            yield int(entry.name), raw[raw.find(b"(") + 1 : close], rest


def _tree_ticks(session: int) -> tuple[int, int]:
    """(CPU ticks, process count) of every live process in ``session``.

    utime+stime+cutime+cstime: a child reaped inside the tree moves its time into its parent's
    cutime, so the sum stays monotone while processes come and go.
    """
    ticks = count = 0
    for _, _, rest in _session_procs(session):
        ticks += int(rest[11]) + int(rest[12]) + int(rest[13]) + int(rest[14])
        count += 1
    return ticks, count


@dataclass(frozen=True)
class Sample:
    """One CPU sample, stamped with both clocks (peers report in one or the other)."""

    mono_ns: int
    wall_ns: int
    tree_ticks: int
    core_ticks: int
    other_ticks: int
    procs: int


@dataclass
class CpuSampler:
    """Background thread sampling a process session's CPU and its cores' busy time.

    The thread pins itself to the cores outside ``cpus`` (the server's side) so that sampling
    does not steal time from the client being measured.
    """

    session: int
    cpus: list[int]
    interval_s: float = SAMPLE_INTERVAL_S
    samples: list[Sample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _take(self) -> None:
        tree, procs = _tree_ticks(self.session)
        core, other = _busy_ticks(self.cpus)
        self.samples.append(Sample(time.monotonic_ns(), time.time_ns(), tree, core, other, procs))

    def _run(self) -> None:
        others = set(range(os.cpu_count() or 1)) - set(self.cpus)
        if others:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, others)  # this thread only
        while not self._stop.wait(self.interval_s):
            self._take()

    def start(self) -> None:
        """Take a first sample and start the thread."""
        self._take()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (no final sample: the session may already be gone)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def _interp(samples: Sequence[Sample], t_ns: int, clock: str, key: str) -> float:
    """Linear interpolation of a cumulative counter at time ``t_ns`` (clamped to the range)."""
    ts = [getattr(s, clock) for s in samples]
    vs = [getattr(s, key) for s in samples]
    if t_ns <= ts[0]:
        return float(vs[0])
    for i in range(1, len(ts)):
        if t_ns <= ts[i]:
            span = ts[i] - ts[i - 1]
            frac = (t_ns - ts[i - 1]) / span if span else 1.0
            return float(vs[i - 1] + frac * (vs[i] - vs[i - 1]))
    return float(vs[-1])


def window_cpu(
    samples: Sequence[Sample], start_ns: int, end_ns: int, clock: str
) -> dict[str, float] | None:
    """CPU seconds of the tree and busy seconds of the pinned cores between two instants."""
    if len(samples) < 2 or end_ns <= start_ns:
        return None
    ts = [getattr(s, clock) for s in samples]
    if end_ns < ts[0] or start_ns > ts[-1]:
        return None

    def delta_s(key: str) -> float:
        ticks = _interp(samples, end_ns, clock, key) - _interp(samples, start_ns, clock, key)
        return ticks / CLK_TCK

    return {
        "window_s": (end_ns - start_ns) / 1e9,
        "window_tree_cpu_s": delta_s("tree_ticks"),
        "window_core_busy_s": delta_s("core_ticks"),
        # The server's side: if this nears window_s x its cores, the server was the limit.
        "window_other_cores_busy_s": delta_s("other_ticks"),
    }


# --------------------------------------------------------------------------------------------
# Bounded subprocess


@dataclass
class RunOutcome:
    """What running one peer command produced, independent of the peer."""

    returncode: int | None
    timed_out: bool
    wall_s: float
    cpu_total_s: float
    samples: list[Sample]
    log_tail: str
    leftover_procs: list[str]


def _kill_session(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def run_bounded(
    cmd: Sequence[str], env: dict[str, str], timeout_s: float, cpus: str | None, log_path: Path
) -> RunOutcome:
    """Run ``cmd`` in its own session, pinned to ``cpus``, killed after ``timeout_s``.

    CPU total comes from ``wait4``'s rusage of the leader, which includes every descendant the
    tree itself reaped; the sampler covers the rest and gives the in-window figures.
    """
    argv = list(cmd)
    if cpus is not None and shutil.which("taskset"):
        argv = ["taskset", "-c", cpus, *argv]
    t0 = time.monotonic()
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    sampler = CpuSampler(proc.pid, parse_cpu_list(cpus) if cpus else [])
    sampler.start()
    deadline = t0 + timeout_s
    timed_out = False
    status, rusage = 0, None
    try:
        while True:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                timed_out = True
                _kill_session(proc.pid, signal.SIGTERM)
                end = time.monotonic() + 5
                while time.monotonic() < end:
                    pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
                    if pid:
                        break
                    time.sleep(0.05)
                if not pid:
                    _kill_session(proc.pid, signal.SIGKILL)
                    _, status, rusage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
    finally:
        sampler.stop()
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    # Processes the peer left behind (seen: an unreaped zombie child of inference-endpoint).
    # Their CPU is not in the leader's rusage, so it is added from /proc before they go.
    leftover, leftover_ticks = [], 0
    for pid, comm, rest in _session_procs(proc.pid):
        leftover.append(f"{pid} {comm.decode(errors='replace')} state={rest[0].decode()}")
        leftover_ticks += int(rest[11]) + int(rest[12]) + int(rest[13]) + int(rest[14])
    _kill_session(proc.pid, signal.SIGKILL)  # stragglers the peer left behind
    cpu = (rusage.ru_utime + rusage.ru_stime) if rusage is not None else float("nan")
    cpu += leftover_ticks / CLK_TCK
    tail = log_path.read_bytes()[-4000:].decode("utf-8", "replace")
    return RunOutcome(
        None if timed_out else proc.returncode,
        timed_out,
        wall,
        cpu,
        sampler.samples,
        tail,
        leftover,
    )


def _base_result(
    peer: str,
    exe: str,
    dist: str,
    cmd: Sequence[str],
    out: RunOutcome,
    concurrency: int,
    n_requests: int,
    cpus: str | None,
) -> dict[str, Any]:
    return {
        "peer": peer,
        "version": dist_version(exe, dist),
        "command": list(cmd),
        "client_cpus": cpus,
        "concurrency": concurrency,
        "n_requests": n_requests,
        "returncode": out.returncode,
        "timed_out": out.timed_out,
        "wall_s": out.wall_s,
        "cpu_total_s": out.cpu_total_s,
        "leftover_procs": out.leftover_procs,
        "ok": False,
    }


def _finish(res: dict[str, Any], win: dict[str, float] | None) -> None:
    """Add the derived figures: delivered concurrency and CPU per request in the window."""
    qps, lat = res.get("qps"), res.get("latency_avg_s")
    if qps and lat:
        res["delivered_concurrency"] = qps * lat
    if win is not None:
        res.update(win)
        done = res.get("completed") or 0
        # Busy time on the client's core(s) not charged to the peer's tree: another process
        # shared the core (these machines are shared), so the window's figures are suspect.
        res["foreign_on_client_cores_s"] = win["window_core_busy_s"] - win["window_tree_cpu_s"]
        if done:
            res["cpu_us_per_req"] = win["window_tree_cpu_s"] / done * 1e6
            res["core_busy_us_per_req"] = win["window_core_busy_s"] / done * 1e6


# --------------------------------------------------------------------------------------------
# The MLCommons reference client (inference-endpoint)


def write_prompts(path: Path, n: int = 1000) -> Path:
    """A JSONL dataset of short distinct prompts (the reference client reads the ``prompt`` key)."""
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"prompt": f"Benchmark prompt {i}: reply with sixteen tokens."}))
            f.write("\n")
    return path


def _ref_window(events: Path) -> tuple[int, int] | None:
    """Start/stop of performance tracking from events.jsonl (CLOCK_MONOTONIC ns)."""
    start = stop = None
    if not events.is_file():
        return None
    with open(events, "rb") as f:
        for line in f:
            if b'"session.' not in line[:64]:
                continue
            ev = json.loads(line)
            if ev["event_type"] == "session.start_performance_tracking":
                start = int(ev["timestamp_ns"])
            elif ev["event_type"] == "session.stop_performance_tracking":
                stop = int(ev["timestamp_ns"])
    return (start, stop) if start is not None and stop is not None else None


def run_reference_client(
    base_url: str,
    model: str,
    concurrency: int,
    n_requests: int,
    timeout_s: float,
    *,
    tokens: int = 16,
    client_cpus: str | None = "0",
    workers: int = 2,
    max_connections: int | None = None,
    extra_args: Sequence[str] = (),
    keep_dir: Path | None = None,
) -> dict[str, Any] | None:
    """Run ``inference-endpoint benchmark online`` at fixed concurrency, streaming.

    No tokenizer is needed: with HF_HUB_OFFLINE=1 its tokenizer probe fails fast and it runs
    without ISL/OSL/TPOT (which is also the cheapest mode for it). ``workers=2``: with the whole
    tree pinned to one core that was its fastest setting here (c=256: ~7.4-8.6k req/s against
    ~6-7k with 1 worker, ~5k with its auto default of 10), so it is the figure to beat; 1 worker
    keeps delivered concurrency slightly closer to the target (0.96 vs 0.92-0.95). Its own NUMA
    pinning is off (``--no-cpu-affinity``) so it does not override ``taskset``. Returns None if
    the peer is not installed.
    """
    exe, reason = locate_reference_client()
    if exe is None:
        log.warning("reference client skipped: %s", reason)
        return None
    with tempfile.TemporaryDirectory(prefix="rollbench-ref-") as tmp_s:
        tmp = Path(keep_dir) if keep_dir else Path(tmp_s)
        tmp.mkdir(parents=True, exist_ok=True)
        dataset = write_prompts(tmp / "prompts.jsonl")
        report = tmp / "report"
        cmd = [
            exe,
            "benchmark",
            "online",
            "--endpoints",
            origin_of(base_url),
            "--model",
            model,
            "--dataset",
            str(dataset),
            "--load-pattern",
            "concurrency",
            "--concurrency",
            str(concurrency),
            "--num-samples",
            str(n_requests),
            "--duration",
            "0",
            "--streaming",
            "on",
            "--max-output-tokens",
            str(tokens),
            "--workers",
            str(workers),
            "--max-connections",
            str(max_connections or 2 * concurrency),
            "--client.warmup-connections",
            str(concurrency),
            "--report-dir",
            str(report),
            "--no-cpu-affinity",
            "--timeout",
            str(int(timeout_s)),
            *extra_args,
        ]
        env = {**os.environ, **OFFLINE_ENV, "HF_HOME": str(tmp / "hf")}
        out = run_bounded(cmd, env, timeout_s, client_cpus, tmp / "client.log")
        res = _base_result(
            "inference-endpoint",
            exe,
            "inference-endpoint",
            cmd,
            out,
            concurrency,
            n_requests,
            client_cpus,
        )
        summaries = sorted(report.glob("**/result_summary.json"))
        if out.timed_out or not summaries:
            res["error"] = (
                "timed out" if out.timed_out else "no result_summary.json"
            ) + f"; log tail:\n{out.log_tail[-1500:]}"
            return res
        s = json.loads(summaries[0].read_text())
        lat, ttft = s.get("latency") or {}, s.get("ttft") or {}
        pct = ttft.get("percentiles") or {}
        duration_s = s["duration_ns"] / 1e9
        res.update(
            {
                "ok": out.returncode == 0 and bool(s.get("complete", True)),
                "issued": s.get("n_samples_issued"),
                "completed": s["n_samples_completed"],
                "failed": s["n_samples_failed"],
                "duration_s": duration_s,
                "qps": s["n_samples_completed"] / duration_s if duration_s else None,
                "reported_qps": s.get("qps"),
                "latency_avg_s": (lat.get("avg") or 0) / 1e9 or None,
                "ttft_p50_ms": (pct.get("50.0") or 0) / 1e6,
                "ttft_p90_ms": (pct.get("90.0") or 0) / 1e6,
                "ttft_p99_ms": (pct.get("99.0") or 0) / 1e6,
            }
        )
        win_ns = _ref_window(report / "events.jsonl")
        _finish(res, window_cpu(out.samples, *win_ns, "mono_ns") if win_ns else None)
        return res


# --------------------------------------------------------------------------------------------
# NVIDIA AIPerf


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map (what a ByteLevel pre-tokenizer emits)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars = list(keep)
    extra = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(keep, (chr(c) for c in chars), strict=True))


def write_offline_tokenizer(hub_cache: Path, repo_id: str = "local/bench-tok") -> str:
    """A byte-level tokenizer (one token per byte) laid out as a Hugging Face cache entry.

    Why: AIPerf needs a tokenizer even with ``--use-server-token-count`` (it generates the
    synthetic prompts with it); its ``builtin`` one downloads a tiktoken file on first use, and
    with HF_HUB_OFFLINE it resolves names only from the HF cache, not from plain local paths.
    So we write ``models--local--bench-tok/snapshots/<rev>/`` under ``HF_HUB_CACHE``.
    """
    rev = "0" * 40
    repo_dir = hub_cache / ("models--" + repo_id.replace("/", "--"))
    snap = repo_dir / "snapshots" / rev
    snap.mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs").mkdir(exist_ok=True)
    (repo_dir / "refs" / "main").write_text(rev)
    vocab = {ch: i for i, ch in enumerate(sorted(_bytes_to_unicode().values()))}
    eos = "<|endoftext|>"
    vocab[eos] = len(vocab)
    byte_level = {"add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tokenizer: dict[str, Any] = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": vocab[eos],
                "content": eos,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", **byte_level},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", **byte_level},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [],
        },
    }
    (snap / "tokenizer.json").write_text(json.dumps(tokenizer))
    (snap / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "model_max_length": 1_000_000,
                "eos_token": eos,
            }
        )
    )
    return repo_id


_NS_RE = {
    k: re.compile(rb'"' + k.encode() + rb'":(\d+)')
    for k in ("credit_issued_ns", "request_start_ns", "request_end_ns")
}


def _aiperf_window(records: Path) -> tuple[int, int] | None:
    """First request start .. last request end (wall-clock ns) from profile_export.jsonl."""
    if not records.is_file():
        return None
    start, end = None, None
    with open(records, "rb") as f:
        for line in f:
            m_s = _NS_RE["request_start_ns"].search(line)
            m_e = _NS_RE["request_end_ns"].search(line)
            if m_s:
                v = int(m_s.group(1))
                start = v if start is None else min(start, v)
            if m_e:
                v = int(m_e.group(1))
                end = v if end is None else max(end, v)
    return (start, end) if start is not None and end is not None else None


def _stat(metrics: dict[str, Any], name: str, key: str = "avg") -> float | None:
    value = (metrics.get(name) or {}).get(key)
    return float(value) if value is not None else None


def run_aiperf(
    base_url: str,
    model: str,
    concurrency: int,
    n_requests: int,
    timeout_s: float,
    *,
    tokens: int = 16,
    client_cpus: str | None = "0",
    extra_args: Sequence[str] = (),
    keep_dir: Path | None = None,
) -> dict[str, Any] | None:
    """Run ``aiperf profile`` (chat, streaming, fixed concurrency, synthetic 16-token prompts).

    Offline: a byte-level tokenizer written into a private HF cache, HF_HUB_OFFLINE=1, server
    metrics and GPU telemetry scraping off (they would poll loopback ports for nothing), server
    token counts used (no client-side tokenizing of outputs), no UI. Returns None if absent.
    """
    exe, reason = locate_aiperf()
    if exe is None:
        log.warning("aiperf skipped: %s", reason)
        return None
    with tempfile.TemporaryDirectory(prefix="rollbench-aiperf-") as tmp_s:
        tmp = Path(keep_dir) if keep_dir else Path(tmp_s)
        tmp.mkdir(parents=True, exist_ok=True)
        hub = tmp / "hf" / "hub"
        tok = write_offline_tokenizer(hub)
        art = tmp / "artifacts"
        cmd = [
            exe,
            "profile",
            "--model",
            model,
            "--url",
            origin_of(base_url),
            "--endpoint-type",
            "chat",
            "--streaming",
            "--concurrency",
            str(concurrency),
            "--request-count",
            str(n_requests),
            "--tokenizer",
            tok,
            "--isl",
            "16",
            "--osl",
            str(tokens),
            "--use-server-token-count",
            "--output-artifact-dir",
            str(art),
            "--ui",
            "none",
            "--no-server-metrics",
            "--no-gpu-telemetry",
            "--request-timeout-seconds",
            str(int(timeout_s)),
            *extra_args,
        ]
        env = {
            **os.environ,
            **OFFLINE_ENV,
            "HF_HOME": str(tmp / "hf"),
            "HF_HUB_CACHE": str(hub),
            "TIKTOKEN_CACHE_DIR": str(tmp / "tiktoken"),
            "MPLCONFIGDIR": str(tmp / "mpl"),
        }
        out = run_bounded(cmd, env, timeout_s, client_cpus, tmp / "client.log")
        res = _base_result("aiperf", exe, "aiperf", cmd, out, concurrency, n_requests, client_cpus)
        summary = art / "profile_export_aiperf.json"
        if out.timed_out or not summary.is_file():
            res["error"] = (
                "timed out" if out.timed_out else "no profile_export_aiperf.json"
            ) + f"; log tail:\n{out.log_tail[-1500:]}"
            return res
        m = json.loads(summary.read_text())
        ok_count = _stat(m, "request_count") or 0.0
        errors = _stat(m, "error_request_count") or 0.0
        lat_ms = _stat(m, "request_latency")
        duration_s = _stat(m, "benchmark_duration")
        res.update(
            {
                "ok": out.returncode == 0 and not m.get("was_cancelled", False),
                "completed": int(ok_count),
                "failed": int(errors),
                "duration_s": duration_s,
                "qps": ok_count / duration_s if duration_s else None,
                "reported_qps": _stat(m, "request_throughput"),
                "latency_avg_s": lat_ms / 1e3 if lat_ms else None,
                "ttft_p50_ms": _stat(m, "time_to_first_token", "p50"),
                "ttft_p90_ms": _stat(m, "time_to_first_token", "p90"),
                "ttft_p99_ms": _stat(m, "time_to_first_token", "p99"),
                "reported_effective_concurrency": _stat(m, "effective_concurrency"),
            }
        )
        win_ns = _aiperf_window(art / "profile_export.jsonl")
        _finish(res, window_cpu(out.samples, *win_ns, "wall_ns") if win_ns else None)
        return res


# --------------------------------------------------------------------------------------------
# Manual trial: python bench/peers.py --peer ref --concurrency 64 256 --requests 5000


def _nginx_server(port: int, tokens: int, cpu: int) -> contextlib.AbstractContextManager[str]:
    """The sibling module's server, whether this file runs as a script or as ``bench.peers``."""
    import importlib
    import sys

    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    server: contextlib.AbstractContextManager[str] = importlib.import_module(
        "nginx_sse"
    ).nginx_sse_server(port, tokens=tokens, cpu=cpu)
    return server


def _summary(r: dict[str, Any]) -> str:
    def f(key: str, fmt: str) -> str:
        v = r.get(key)
        return "-" if v is None else format(v, fmt)

    return (
        f"{r['peer']:<18} c={r['concurrency']:<4} ok={r['ok']!s:<5} "
        f"done={f('completed', 'd')} fail={f('failed', 'd')} req/s={f('qps', ',.0f')} "
        f"delivered_c={f('delivered_concurrency', '.1f')} ttft_p99={f('ttft_p99_ms', '.1f')}ms "
        f"cpu_win={f('window_tree_cpu_s', '.2f')}s/{f('window_s', '.2f')}s "
        f"core_busy={f('window_core_busy_s', '.2f')}s "
        f"other_busy={f('window_other_cores_busy_s', '.2f')}s "
        f"foreign={f('foreign_on_client_cores_s', '.2f')}s cpu_total={f('cpu_total_s', '.1f')}s "
        f"cpu/req={f('cpu_us_per_req', '.0f')}us wall={f('wall_s', '.1f')}s"
    )


def _main(argv: Sequence[str] | None = None) -> int:
    """Start the nginx SSE server and run the chosen peers at each concurrency, in turn."""
    import argparse

    ap = argparse.ArgumentParser(description=_main.__doc__)
    ap.add_argument("--peer", choices=["ref", "aiperf", "both"], default="both")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--client-cpus", default="0")
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--ref-workers", type=int, default=2)
    ap.add_argument("--json", type=Path, help="append results as JSON lines here")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    peers = ["ref", "aiperf"] if args.peer == "both" else [args.peer]
    with _nginx_server(0, args.tokens, args.server_cpu) as url:
        for c in args.concurrency:
            for p in peers:
                if p == "ref":
                    r = run_reference_client(
                        url,
                        "bench-model",
                        c,
                        args.requests,
                        args.timeout,
                        tokens=args.tokens,
                        client_cpus=args.client_cpus,
                        workers=args.ref_workers,
                    )
                else:
                    r = run_aiperf(
                        url,
                        "bench-model",
                        c,
                        args.requests,
                        args.timeout,
                        tokens=args.tokens,
                        client_cpus=args.client_cpus,
                    )
                if r is None:
                    continue
                print(_summary(r), flush=True)
                if r.get("error"):
                    print("  error:", r["error"], flush=True)
                if args.json:
                    with open(args.json, "a") as f:
                        f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
