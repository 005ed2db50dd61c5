"""`orchestrator.stats` must import on its own, before anything else of the project."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_stats_imports_first_in_a_fresh_interpreter() -> None:
    # A fresh process: within pytest another test may already have imported the modules in
    # an order that hides an import cycle.
    result = subprocess.run(
        [sys.executable, "-c", "import orchestrator.stats"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
