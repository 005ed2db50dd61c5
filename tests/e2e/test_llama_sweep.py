"""End to end against a real third-party server: llama.cpp serving SmolLM2-135M.

What this proves that the simulator cannot: our framing and TTFT rules hold on a server we
did not write (llama.cpp sends a role-only first event with `content: null`, `finish_reason`
in a chunk of its own, usage in a trailing chunk with `choices: []`), and our TPOT agrees
with the server's own clock.

llama.cpp reports, per response, `timings.predicted_ms` over tokens 2..n and
`predicted_per_token_ms = predicted_ms / (n - 1)`; its /metrics counters add these up:
`tokens_predicted_seconds_total` (Σ predicted_ms) and `tokens_predicted_total` (Σ n). With
every answer forced to the same length (`ignore_eos`), the mean of our per-request TPOT,
(end − first useful chunk) / (n − 1), must equal Σ predicted_ms / Σ (n − 1) up to what lies
between the server's clock and ours: the write and read of the first and last chunk over
loopback and the client's event loop — well under a millisecond each, i.e. < 1 % of a
32-token answer at ≥ 5 ms/token on this machine. We allow 10 % (plus 0.5 ms) because client,
server and the pytest process share two cores, and scheduling noise on one token interval
is not what this test is about; a wrong definition (counting n instead of n − 1 tokens, or
starting at the role chunk) moves the figure by more than that.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from _llama import llama_server

from orchestrator.loadgen import (
    DatasetSpec,
    EndpointSpec,
    LevelResult,
    SweepSpec,
    SyntheticSpec,
    run_sweep,
)

OUTPUT_TOKENS = 32
REQUESTS = {1: 6, 4: 12}


def _metrics(root_url: str) -> dict[str, float]:
    text = httpx.get(f"{root_url}/metrics", timeout=10).text
    out = {}
    for line in text.splitlines():
        m = re.match(r"^llamacpp:(\w+)\s+([0-9.eE+-]+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


class MetricsTap:
    """Snapshots llama.cpp's counters at the start and end of each level."""

    def __init__(self, root_url: str) -> None:
        self.root_url = root_url
        self.deltas: dict[str, dict[str, float]] = {}
        self._start: dict[str, float] = {}

    def level_started(self, index: int, total: int, label: str) -> None:
        self._start = _metrics(self.root_url)

    def progress(self, issued: int, completed: int, failed: int) -> None:
        pass

    def level_finished(self, result: LevelResult) -> None:
        end = _metrics(self.root_url)
        self.deltas[result.label] = {k: end[k] - self._start.get(k, 0.0) for k in end}


@pytest.mark.slow
def test_sweep_against_llama_cpp(tmp_path: Path) -> None:
    with llama_server(n_parallel=4) as server:
        tap = MetricsTap(server.root_url)
        for level, n in REQUESTS.items():
            spec = SweepSpec(
                endpoint=EndpointSpec(
                    url=server.base_url,
                    model=server.model,
                    # Same length for every answer, and no prompt cache between samples.
                    extra_body={"ignore_eos": True, "cache_prompt": False},
                ),
                dataset=DatasetSpec(
                    synthetic=SyntheticSpec(isl=24, osl=OUTPUT_TOKENS, prompts=64),
                    system="You are a concise assistant.",
                    temperature=0.0,
                ),
                levels=[level],
                requests=n,
            )
            result = run_sweep(spec, tmp_path / f"c{level}", reporter=tap)
            (lvl,) = result.levels
            s = lvl.summary
            assert result.token_counting == "usage"
            assert lvl.health["token_sources"] == {"usage": n}
            assert (s.issued, s.succeeded, s.failed) == (n, n, 0), lvl.failure_examples
            assert s.finish_reason_counts["length"] == n
            assert s.output_sequence_lengths is not None
            assert s.output_sequence_lengths.min == s.output_sequence_lengths.max == OUTPUT_TOKENS
            assert s.input_sequence_lengths is not None and s.input_sequence_lengths.min > 24
            assert s.ttft_ns is not None and s.tpot_ns is not None

            d = tap.deltas[lvl.label]
            assert d["tokens_predicted_total"] == n * OUTPUT_TOKENS
            server_tpot_ms = (
                1000 * d["tokens_predicted_seconds_total"] / (d["tokens_predicted_total"] - n)
            )
            ours_ms = s.tpot_ns.avg / 1e6
            assert abs(ours_ms - server_tpot_ms) <= 0.10 * server_tpot_ms + 0.5, (
                f"c={level}: our TPOT {ours_ms:.3f} ms vs llama.cpp {server_tpot_ms:.3f} ms"
            )
            # TTFT cannot be shorter than the server's prompt processing of that request.
            assert s.ttft_ns.min / 1e6 > 0
