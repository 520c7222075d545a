"""Why the first ladder did not bind (issue 9): the easiest binding task, training variants side by side.

The first ladder's rungs (chapter 7) never beat the first-value heuristic. This script isolates the simplest case:
rung ``l2-d64`` on programs of two statements, one hop, one query (``a = 7 ; b = 3 ; ? a`` -> ``7``), where
a lookup is the whole task and guessing one of the two values written in the program is right with probability
``(1 + [values equal]) / 2``. Every variant gets the same batches, seed and steps; they differ in

- the variable names: ``frozen`` at the first ladder's init (a shared "name" direction plus a random identity,
  so any two names have cosine about 0.5), ``trained``, ``shared`` (frozen identities, one common learnt offset),
  or ``iid`` (frozen independent codes ``N(0, I/d)``, no shared direction);
- the MLPs: ``stock`` (Llama init), ``zero-init`` (``down_proj`` starts at 0, trained) or ``none`` (fixed at 0).

``llama`` is the first ladder (stock Llama init, names sharing a direction; ``stock_init``); the ladder now
starts from ``train.init_model``: independent name codes and zero-init ``down_proj``. It reports the mean
training loss of the last 200 steps, the accuracy on programs with training names and with held-out names, and
the guessing baseline on the same programs::

    .venv/bin/python benchmarks/ladder_plateau.py                 # 6000 steps per variant (about 12 min)
    .venv/bin/python benchmarks/ladder_plateau.py --steps 300     # a smoke test
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import torch

from latentbook._files import atomic_write
from latentbook.ladder import train as ladder_train
from latentbook.ladder.diagnostics import guess_floor
from latentbook.ladder.task import TaskSpec, encode, generate, name_token_ids

VARIANTS = {
    "llama": dict(names="frozen", mlp="stock"),
    "names trained": dict(names="trained", mlp="stock"),
    "names shared": dict(names="shared", mlp="stock"),
    "MLP zero-init": dict(names="frozen", mlp="zero-init"),
    "names shared, MLP zero-init": dict(names="shared", mlp="zero-init"),
    "no MLP": dict(names="frozen", mlp="none"),
    "no MLP, names trained": dict(names="trained", mlp="none"),
    "names iid": dict(names="frozen", mlp="stock", name_init="iid"),
    "names iid, MLP zero-init": dict(names="frozen", mlp="zero-init", name_init="iid"),
    "names iid, no MLP": dict(names="frozen", mlp="none", name_init="iid"),
}
SPEC = TaskSpec(n_statements=2, max_hops=1)  # the ladder's vocabulary and names, programs of two statements


def batch(step: int, size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, answer ids) of 2-statement, 1-hop training programs; identical for every variant."""
    examples = generate(SPEC, size, hops=1, split="train", seed=seed * 1_000_003 + step)
    ids, answers = encode(SPEC, examples)
    return torch.from_numpy(ids), torch.from_numpy(answers)


def _share_rows(weight: torch.nn.Parameter, rows: torch.Tensor) -> None:
    """Every row in ``rows`` gets the mean gradient of those rows: names move together, identities stay random."""

    def hook(grad: torch.Tensor) -> torch.Tensor:
        grad = grad.clone()
        grad[rows] = grad[rows].mean(0, keepdim=True)
        return grad

    weight.register_hook(hook)


def stock_init(seed: int):
    """Rung ``l2-d64`` as the first ladder initialised it: stock Llama, each name = (shared + identity) / sqrt(2d)."""
    from transformers import LlamaForCausalLM

    rung = ladder_train.ladder_rung("l2-d64")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(ladder_train.model_config(rung, SPEC))
        names = torch.tensor(name_token_ids(SPEC))
        with torch.no_grad():
            shared = torch.randn(1, rung.d_model)
            identity = torch.randn(len(names), rung.d_model)
            model.model.embed_tokens.weight[names] = (shared + identity) / math.sqrt(2 * rung.d_model)
    return model


def run(variant: dict, steps: int, lr: float, batch_size: int, seed: int, n_eval: int) -> dict:
    torch.manual_seed(seed)
    model = stock_init(seed)
    embed = model.model.embed_tokens.weight
    names = torch.tensor(name_token_ids(SPEC))
    if variant.get("name_init") == "iid":  # no shared "name" direction: independent draws of the same norm
        with torch.no_grad():
            embed[names] = torch.randn(len(names), embed.shape[1]) / math.sqrt(embed.shape[1])
    if variant["names"] == "frozen":
        ladder_train._freeze_rows(embed, names)
    elif variant["names"] == "shared":
        _share_rows(embed, names)
    for layer in model.model.layers if variant["mlp"] != "stock" else []:
        layer.mlp.down_proj.weight.data.zero_()
        layer.mlp.down_proj.weight.requires_grad_(variant["mlp"] == "zero-init")
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.98), weight_decay=0.0)
    schedule = ladder_train.TrainConfig(steps=steps, lr=lr, warmup=50, schedule="cosine")
    losses, start = [], time.perf_counter()
    model.train()
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = ladder_train.learning_rate(schedule, step)
        ids, answers = batch(step, batch_size, seed)
        loss = torch.nn.functional.cross_entropy(model(input_ids=ids).logits[:, -1], answers)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        losses.append(float(loss.detach()))
    model.eval()
    return dict(
        final_loss=float(np.mean(losses[-200:])),
        train_names_accuracy=ladder_train.accuracy_by_hops(model, SPEC, n_eval, split="train", seed=seed + 1)[
            1
        ],
        heldout_accuracy=ladder_train.accuracy_by_hops(model, SPEC, n_eval, split="heldout", seed=seed + 1)[
            1
        ],
        seconds=time.perf_counter() - start,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--n-eval", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="*", choices=list(VARIANTS), help="run these variants only")
    parser.add_argument("--out", type=Path, default=Path("results/bench/ladder_plateau.json"))
    args = parser.parse_args()
    if args.steps < 1 or args.batch_size < 1 or args.n_eval < 1:
        parser.error("--steps, --batch-size and --n-eval must be at least 1")
    torch.set_num_threads(1)
    baseline = guess_floor(SPEC, 1, args.n_eval, args.seed + 1)  # a random one of the values in the program
    print(f"guessing one of the two values: {baseline:.3f}")
    report = dict(
        task=dict(hops=1, spec=SPEC.to_dict()),
        settings=vars(args) | {"out": str(args.out)},
        guessing_baseline=baseline,
        variants={},
        torch_version=torch.__version__,
    )
    for name, variant in VARIANTS.items():
        if args.only and name not in args.only:
            continue
        r = run(variant, args.steps, args.lr, args.batch_size, args.seed, args.n_eval)
        print(
            f"{name:28s} loss {r['final_loss']:.3f}  accuracy: training names {r['train_names_accuracy']:.3f},"
            f" held-out names {r['heldout_accuracy']:.3f}  ({r['seconds']:.0f} s)",
            flush=True,
        )
        report["variants"][name] = variant | r
        # rewritten after every variant, atomically: an interrupted run keeps the variants it finished
        atomic_write(args.out, lambda tmp: tmp.write_text(json.dumps(report, indent=1)))
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
