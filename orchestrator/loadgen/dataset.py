"""Prompts to send: a JSONL file or a seeded synthetic set, turned into request bodies.

A JSONL line holds `prompt` (text) or `messages` (chat messages), and optionally `system`
and `max_tokens`. Synthetic prompts are numbered so that no two share a prefix: servers
that cache prompt prefixes (llama.cpp, vLLM's prefix cache) would otherwise answer later
requests faster than a real workload would see.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from orchestrator.loadgen.openai import ROUTES, build_body
from orchestrator.loadgen.spec import DatasetSpec, EndpointSpec

_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "that",
    "with",
    "as",
    "by",
    "at",
    "from",
    "his",
    "an",
    "were",
    "are",
    "which",
    "this",
    "be",
    "or",
    "has",
    "had",
    "not",
    "but",
    "one",
    "new",
    "first",
    "time",
    "year",
    "two",
    "may",
    "after",
    "also",
    "other",
    "over",
    "into",
    "would",
    "city",
    "state",
    "world",
    "system",
    "model",
    "water",
    "light",
    "music",
    "river",
    "night",
    "paper",
    "house",
    "voice",
    "field",
]


class DatasetError(ValueError):
    """The dataset cannot be used; the message names the file, line and field."""


@dataclass(frozen=True, slots=True)
class Sample:
    prompt: str | None
    messages: list[dict[str, Any]] | None
    system: str | None
    max_tokens: int | None


def load_samples(spec: DatasetSpec) -> list[Sample]:
    if spec.synthetic is not None:
        syn = spec.synthetic
        rng = random.Random(syn.seed)
        return [
            Sample(
                prompt=f"[{i}] " + " ".join(rng.choice(_WORDS) for _ in range(max(syn.isl - 1, 1))),
                messages=None,
                system=None,
                max_tokens=syn.osl,
            )
            for i in range(syn.prompts)
        ]
    assert spec.path is not None
    path = spec.path
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read: {exc}") from None
    samples = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        samples.append(_parse_line(line, f"{path}:{lineno}"))
    if not samples:
        raise DatasetError(f"{path}: no samples")
    return samples


def _parse_line(line: str, where: str) -> Sample:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{where}: not JSON: {exc.msg}") from None
    if not isinstance(row, dict):
        raise DatasetError(f"{where}: each line must be a JSON object")
    prompt, messages = row.get("prompt"), row.get("messages")
    if (prompt is None) == (messages is None):
        raise DatasetError(f"{where}: give exactly one of 'prompt' or 'messages'")
    if prompt is not None and not isinstance(prompt, str):
        raise DatasetError(f"{where}: 'prompt' must be a string")
    if messages is not None and (
        not isinstance(messages, list)
        or not all(isinstance(m, dict) and "role" in m for m in messages)
    ):
        raise DatasetError(f"{where}: 'messages' must be a list of objects with a 'role'")
    max_tokens = row.get("max_tokens", row.get("output_tokens"))
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise DatasetError(f"{where}: 'max_tokens' must be a positive integer")
    system = row.get("system")
    if system is not None and not isinstance(system, str):
        raise DatasetError(f"{where}: 'system' must be a string")
    return Sample(prompt=prompt, messages=messages, system=system, max_tokens=max_tokens)


def build_bodies(
    samples: list[Sample],
    dataset: DatasetSpec,
    endpoint: EndpointSpec,
    *,
    stream: bool,
    include_usage: bool,
) -> list[bytes]:
    return [
        build_body(
            api=endpoint.api,
            model=endpoint.model,
            prompt=s.prompt,
            messages=s.messages,
            system=s.system or dataset.system,
            max_tokens=dataset.max_tokens or s.max_tokens,
            stream=stream,
            include_usage=include_usage,
            temperature=dataset.temperature,
            seed=dataset.seed,
            extra=endpoint.extra_body,
        )
        for s in samples
    ]


def prompt_text(sample: Sample) -> str:
    if sample.prompt is not None:
        return sample.prompt
    return "\n".join(str(m.get("content", "")) for m in sample.messages or [])


__all__ = ["ROUTES", "DatasetError", "Sample", "build_bodies", "load_samples", "prompt_text"]
