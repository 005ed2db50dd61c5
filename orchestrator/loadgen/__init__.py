"""The measurement engine: transports, SSE framing, load patterns, multi-process client.

Usage in two lines::

    spec = SweepSpec(endpoint=EndpointSpec(url=url, model="m"), dataset=..., levels=[1, 8])
    result = run_sweep(spec, Path("out"))
"""

from orchestrator.loadgen.records import Failure, FinishReason, RequestRecords, TokenSource
from orchestrator.loadgen.spec import (
    DatasetSpec,
    EndpointSpec,
    HarnessLimits,
    SweepSpec,
    SyntheticSpec,
    TimeoutSpec,
)


def __getattr__(name: str) -> object:
    # The sweep needs orchestrator.stats, which imports records from this package: load it
    # on first use so that importing either package first works.
    if name in ("LevelResult", "SweepResult", "run_sweep"):
        from orchestrator.loadgen import sweep

        return getattr(sweep, name)
    raise AttributeError(name)


__all__ = [
    "DatasetSpec",
    "EndpointSpec",
    "Failure",
    "FinishReason",
    "HarnessLimits",
    "LevelResult",
    "RequestRecords",
    "SweepResult",
    "SweepSpec",
    "SyntheticSpec",
    "TimeoutSpec",
    "TokenSource",
    "run_sweep",
]
