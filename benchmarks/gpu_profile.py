"""Where ``lb.capture`` spends its time on a GPU: one capture of ``random:llama-1b`` (bfloat16, 32 x 512 tokens)
under ``torch.profiler``, the top operators by self CPU and by self CUDA time, and the capture's wall time at
batch sizes 8 and 32 (a fold to the host per batch: fewer, larger batches fold less often) against a plain forward.

Run like ``gpu_check.sh`` (from the source tree, no install)::

    PYTHONPATH=src python benchmarks/gpu_profile.py            # writes gpu_profile.txt to $OUT or results/bench
    PYTHONPATH=src python benchmarks/gpu_profile.py --device cpu --dry-run
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_check  # noqa: E402  (the same random models, tokenizer and prompts as the check)

import latentbook as lb  # noqa: E402
from latentbook.models.zoo import random_config  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    device = torch.device(args.device)
    tokenizer = gpu_check.byte_tokenizer()
    n_prompts, seq_len = (4, 32) if args.dry_run else (32, 512)
    config = (
        gpu_check.llama_config(gpu_check.TINY_SHAPE, len(tokenizer))
        if args.dry_run
        else random_config("random:llama-1b", 49152)
    )
    loaded = gpu_check.random_model("random:llama-1b", config, tokenizer, device, torch.bfloat16)
    texts = gpu_check.long_prompts(tokenizer, n_prompts, seq_len)
    lines = [f"{torch.cuda.get_device_name() if device.type == 'cuda' else 'cpu'}; torch {torch.__version__}"]

    def capture(batch_size: int) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lb.capture(loaded, texts, max_length=seq_len, batch_size=batch_size, progress=False)

    def forward(batch_size: int) -> None:
        gpu_check.plain_forward(loaded.model, tokenizer, texts, seq_len, batch_size, device)

    def timed(run, *a) -> float:
        gpu_check._sync(device)
        start = time.perf_counter()
        run(*a)
        gpu_check._sync(device)
        return time.perf_counter() - start

    batches = []
    for batch_size in (8, 32):
        capture(batch_size), forward(batch_size)  # warm-up
        c = sorted(timed(capture, batch_size) for _ in range(3))[1]
        f = sorted(timed(forward, batch_size) for _ in range(3))[1]
        lines.append(f"batch {batch_size}: capture {c:.3f} s, forward {f:.3f} s, ratio {c / f:.2f}")
        batches.append({"batch_size": batch_size, "capture_s": c, "forward_s": f, "ratio": round(c / f, 2)})
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        capture(8)
    for key in ["self_cpu_time_total"] + (["self_cuda_time_total"] if device.type == "cuda" else []):
        lines.append(f"\n## top operators by {key} (one capture, batch 8)\n")
        lines.append(prof.key_averages().table(sort_by=key, row_limit=25, max_name_column_width=60))
    text = "\n".join(lines)
    print(text)
    out = Path(os.environ.get("OUT") or Path(__file__).resolve().parents[1] / "results" / "bench")
    if not args.dry_run:
        out.mkdir(parents=True, exist_ok=True)
        (out / "gpu_profile.txt").write_text(text + "\n")
        (out / "gpu_profile.json").write_text(json.dumps({"header": lines[0], "batches": batches}, indent=1))


if __name__ == "__main__":
    main()
