"""rollbench: continuous rolling-submission orchestration for LLM inference endpoints."""

__version__ = "0.1.0"
