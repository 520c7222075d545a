"""When should variable names get fresh codes? The ladder's choice against the two obvious alternatives (issue 9).

The ladder (chapter 7) keeps the init's name codes during the first stage of its curriculum and gives every program
fresh codes from the second stage on (``TrainConfig.fresh_names_from = 2``). This script trains rung ``l4-d64`` with
the ladder's recipe and the same batches under three settings of that one knob:

- ``fixed, then fresh`` (the ladder): ``fresh_names_from = 2``;
- ``fresh from the start``: ``fresh_names_from = 1``;
- ``fixed throughout``: ``fresh_names_from = max_hops + 1`` (never fresh; held-out names are never seen).

It reports accuracy by hop count on held-out names and on training names, and the step at which each stage of the
curriculum opened. Variants run in parallel processes (one CPU thread each); the JSON is rewritten after each one
finishes, so an interrupted run keeps what it finished::

    .venv/bin/python benchmarks/ladder_names.py                  # 5000 steps per variant, 2 processes (~15 min)
    .venv/bin/python benchmarks/ladder_names.py --steps 200      # a smoke test
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from latentbook._files import atomic_write
from latentbook.ladder import train as ladder_train

RUNG = "l4-d64"


def variants(spec) -> dict[str, int]:
    """Variant name -> ``fresh_names_from``."""
    return {"fixed, then fresh": 2, "fresh from the start": 1, "fixed throughout": spec.max_hops + 1}


def run(fresh_names_from: int, steps: int, n_eval: int, threads: int | None = 1) -> dict:
    """Train ``RUNG`` with the ladder's recipe and this ``fresh_names_from``; accuracies and curriculum stages."""
    config = dataclasses.replace(ladder_train.LADDER_CONFIG, steps=steps, fresh_names_from=fresh_names_from)
    start = time.perf_counter()
    model, log = ladder_train.train(
        ladder_train.ladder_rung(RUNG), ladder_train.LADDER_SPEC, config, progress=False, threads=threads
    )
    spec = ladder_train.LADDER_SPEC
    return dict(
        fresh_names_from=fresh_names_from,
        heldout=ladder_train.accuracy_by_hops(model, spec, n_eval, split="heldout", seed=3),
        training_names=ladder_train.accuracy_by_hops(model, spec, n_eval, split="train", seed=3),
        stages=log.stages,
        seconds=time.perf_counter() - start,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--n-eval", type=int, default=512)
    parser.add_argument("--jobs", type=int, default=2, help="variants trained at once (one process each)")
    parser.add_argument("--out", type=Path, default=Path("results/bench/ladder_names.json"))
    args = parser.parse_args()
    if args.steps < 1 or args.n_eval < 1 or args.jobs < 1:
        parser.error("--steps, --n-eval and --jobs must be at least 1")
    report = dict(rung=RUNG, settings=vars(args) | {"out": str(args.out)}, variants={})
    todo = variants(ladder_train.LADDER_SPEC)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=context) as pool:
        futures = {pool.submit(run, knob, args.steps, args.n_eval): name for name, knob in todo.items()}
        for future in as_completed(futures):
            name = futures[future]
            r = report["variants"][name] = future.result()
            acc = " ".join(f"{a:.2f}" for a in r["heldout"].values())
            print(f"{name:22s} held-out accuracy by hops {acc}  stages {r['stages']}  ({r['seconds']:.0f} s)")
            report["variants"] = {k: report["variants"][k] for k in todo if k in report["variants"]}
            args.out.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(args.out, lambda tmp: tmp.write_text(json.dumps(report, indent=1)))
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
