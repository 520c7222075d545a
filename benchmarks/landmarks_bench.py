"""What chapter 9's landmarks cost beside the capture they read, measured side by side in one run.

Four steps on the same prompts, timed in interleaved rounds (a b c d, a b c d, ...), medians of the CPU time of
this process (torch on one thread; wall time beside it):

- (a) a plain forward of the full causal LM over the prompts (``torch.inference_mode``), the reference;
- (b) ``lb.capture`` of the prompts at the book's settings: the capture every landmark is read from;
- (c) ``study.run_landmarks.depth_landmarks`` on that capture: intrinsic dimension (TwoNN and Gride, 400 prompt
  draws each), the massive-activation onset, update norms and the Omega fit of ``m_z``; no forward pass;
- (d) ``study.run_landmarks.lens_of``: the logit lens of ``LENS_TOKENS`` sampled tokens at every depth (the model's
  final norm and unembedding; no forward pass of the trunk).

Nothing is added to the capture itself: (c) and (d) read what it keeps, so the capture's cost is unchanged by
construction, and the table says what the landmarks add after it. Usage::

    .venv/bin/python benchmarks/landmarks_bench.py             # SmolLM2, 32 prompts, 5 rounds (a few minutes)
    .venv/bin/python benchmarks/landmarks_bench.py --quick     # a smoke test on random:llama-tiny
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402

import latentbook as lb  # noqa: E402
from latentbook import prompts as prompt_sets  # noqa: E402
from latentbook._version import __version__  # noqa: E402
from latentbook.capturing.cache import BOOK_SETTINGS  # noqa: E402
from latentbook.study import run_landmarks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STEPS = {
    "a": "(a) plain forward, full causal LM",
    "b": "(b) lb.capture at the book's settings",
    "c": "(c) depth_landmarks on the capture (no forward)",
    "d": f"(d) logit lens of {run_landmarks.LENS_TOKENS} sampled tokens",
}


def _timed(step) -> tuple[float, float, object]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = step()
    return time.process_time() - cpu, time.perf_counter() - wall, result


def run(model_name: str, n_prompts: int, rounds: int) -> dict:
    """Medians of CPU and wall seconds per step over ``rounds`` interleaved rounds."""
    torch.set_num_threads(1)
    model = lb.load_model(model_name)
    prompts = prompt_sets.load("general", limit=n_prompts)
    settings = dict(BOOK_SETTINGS)

    def forward():
        enc = model.tokenizer(prompts, return_tensors="pt", padding=True, truncation=True, max_length=128)
        with torch.inference_mode():
            for first in range(0, len(prompts), settings["batch_size"]):
                model.model(**{k: v[first : first + settings["batch_size"]] for k, v in enc.items()})

    state: dict = {}
    steps = {
        "a": forward,
        "b": lambda: state.__setitem__("cap", lb.capture(model, prompts, progress=False, **settings)),
        "c": lambda: run_landmarks.depth_landmarks(state["cap"]),
        "d": lambda: run_landmarks.lens_of(state["cap"], model),
    }
    times: dict[str, list[tuple[float, float]]] = {key: [] for key in steps}
    for _ in range(rounds):
        for key, step in steps.items():
            cpu, wall, _ = _timed(step)
            times[key].append((cpu, wall))
    medians = {
        key: {"cpu_s": statistics.median(c for c, _ in t), "wall_s": statistics.median(w for _, w in t)}
        for key, t in times.items()
    }
    return {
        "model": model_name,
        "n_prompts": n_prompts,
        "rounds": rounds,
        "tokens": int(state["cap"].n_tokens),
        "steps": medians,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, one thread",
        "latentbook": __version__,
    }


def table(record: dict) -> str:
    """The Markdown table: each step's median CPU and wall seconds and its CPU time over the capture's."""
    capture = record["steps"]["b"]["cpu_s"]
    lines = [
        f"# Landmark cost on {record['model']} ({record['n_prompts']} prompts, {record['tokens']} tokens)",
        "",
        f"{record['machine']}; medians of {record['rounds']} interleaved rounds; {record['date']}.",
        "",
        "| step | CPU s | wall s | CPU / capture |",
        "|---|---:|---:|---:|",
    ]
    for key, label in STEPS.items():
        step = record["steps"][key]
        lines.append(
            f"| {label} | {step['cpu_s']:.2f} | {step['wall_s']:.2f} | {step['cpu_s'] / capture:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="random:llama-tiny, 8 prompts, 2 rounds")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench", help="folder for the table")
    args = parser.parse_args(argv)
    record = run("random:llama-tiny", 8, 2) if args.quick else run("smollm2-135m", 32, 5)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "landmarks_quick" if args.quick else "landmarks_cpu"
    (args.out / f"{stem}.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    (args.out / f"{stem}.md").write_text(table(record), encoding="utf-8")
    print(table(record))


if __name__ == "__main__":
    main()
