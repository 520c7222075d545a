"""Command line: ``latentbook models | capture | report | train-ladder``, so a GPU box can produce ``results/`` files.

latentbook models
latentbook capture smollm2-135m --prompts general --out results/smollm2.safetensors
latentbook report results/smollm2.safetensors
latentbook train-ladder --measure    # chapter 7's ladder, trained on the CPU, then measured
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import InvalidInputError, LatentbookError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="latentbook", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("models", help="list the model zoo")

    cap = sub.add_parser("capture", help="capture per-depth statistics of a model on a prompt set")
    cap.add_argument("model", help="zoo name (see `latentbook models`), local folder or cached hub id")
    cap.add_argument("--prompts", default="general", help="shipped prompt set name, or a .txt/.jsonl file")
    cap.add_argument("--out", required=True, type=Path, help="where to write the capture (.safetensors)")
    cap.add_argument("--max-prompts", type=int, default=None)
    cap.add_argument("--batch-size", type=int, default=16)
    cap.add_argument("--max-length", type=int, default=128)
    cap.add_argument("--exclude-first", action="store_true", help="drop the first (BOS / sink) position")
    cap.add_argument(
        "--attention", action="store_true", help="also stream attention statistics (eager attention)"
    )
    cap.add_argument("--precision", choices=["float32", "float64"], default="float32")
    cap.add_argument("--device", default="auto")
    cap.add_argument("--dtype", default="auto")
    cap.add_argument("--checkpoint-every", type=int, default=8, help="batches between checkpoints")
    cap.add_argument("--resume", action="store_true", help="continue from OUT.partial after an interruption")
    cap.add_argument("--strict", action="store_true", help="refuse prompts longer than --max-length")
    cap.add_argument(
        "--distributed", action="store_true", help="under torchrun: shard prompts across ranks, merge exactly"
    )

    rep = sub.add_parser("report", help="summarise a capture file")
    rep.add_argument("path", type=Path)

    lad = sub.add_parser("train-ladder", help="train chapter 7's ladder of small Llamas (CPU, seeded, exact)")
    lad.add_argument("--out", type=Path, default=None, help="folder of the rungs (default: results/ladder)")
    lad.add_argument("--rungs", default=None, help="comma-separated rung names (default: all)")
    lad.add_argument("--measure", action="store_true", help="then measure every rung and its null")
    lad.add_argument("--measure-only", action="store_true", help="measure the rungs already trained")
    lad.add_argument(
        "--steps", type=int, default=None, help="training steps per rung (default: the ladder's)"
    )
    return parser


def read_prompts(spec: str, limit: int | None = None) -> list[str]:
    """A shipped prompt set by name, or a file: ``.jsonl`` with ``{"text": ...}`` per line, or ``.txt`` (one per line)."""
    import json

    from . import prompts as prompt_sets

    if limit is not None and limit <= 0:
        raise InvalidInputError(f"--max-prompts must be a positive integer, got {limit}.")
    if spec in prompt_sets.names():
        return prompt_sets.load(spec, limit)
    path = Path(spec)
    if not path.is_file():
        raise InvalidInputError(
            f"--prompts {spec!r} is neither a shipped set {prompt_sets.names()} nor a file."
        )
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if path.suffix != ".jsonl":
        return lines[:limit]
    texts = []
    for number, line in enumerate(lines, start=1):
        try:
            texts.append(json.loads(line)["text"])
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInputError(
                f"{path}, line {number}: expected a JSON object with a 'text' field ({exc!r})."
            ) from exc
    return texts[:limit]


def _capture(args: argparse.Namespace) -> None:
    from .capturing import capture
    from .capturing.distributed import barrier, is_main_process, rank_and_world, rank_checkpoint
    from .models import load_model

    partial = args.out.with_name(args.out.name + ".partial")
    rank, world = rank_and_world() if args.distributed else (0, 1)
    own_partial = rank_checkpoint(partial, rank, world)
    if own_partial.exists() and not args.resume:
        raise InvalidInputError(
            f"An interrupted capture left {own_partial}. Pass --resume to continue it, or delete it to start over."
        )
    texts = read_prompts(args.prompts, args.max_prompts)
    model = load_model(args.model, device=args.device, dtype=args.dtype)
    result = capture(
        model,
        texts,
        max_length=args.max_length,
        batch_size=args.batch_size,
        exclude_first=args.exclude_first,
        attention=args.attention,
        precision=args.precision,
        checkpoint=partial,
        checkpoint_every=args.checkpoint_every,
        strict=args.strict,
        prompt_set=args.prompts,
        distributed=args.distributed,
    )
    if is_main_process():
        result.save(args.out)
    barrier()  # the merged result is on disk before any rank drops its checkpoint
    own_partial.unlink(missing_ok=True)
    if not is_main_process():
        return
    print(f"Captured {result.n_tokens} tokens of {model.name} at {result.n_layers + 1} depths -> {args.out}")


def _report(args: argparse.Namespace) -> None:
    from .capturing import load_capture

    cap = load_capture(args.path)
    print(f"{cap.model_name}: {cap.n_layers} layers, d={cap.d_model}, {cap.n_tokens} tokens")
    print(f"captured {cap.provenance.get('date')} with {cap.provenance.get('versions')}")
    print(" depth  gamma   mean Omega")
    for depth, (g, m) in enumerate(zip(cap.gamma, cap.omega_mean())):
        print(f"{depth:6d}  {g:5.3f}   {m:.4f}")


def _train_ladder(args: argparse.Namespace) -> None:
    import dataclasses
    import os

    from .ladder import report, store, train

    if args.out is not None:
        os.environ["LATENTBOOK_LADDER_DIR"] = str(args.out)
    names = args.rungs.split(",") if args.rungs else [r.name for r in train.LADDER]
    rungs = tuple(train.ladder_rung(name) for name in names)
    config = train.LADDER_CONFIG
    if args.steps is not None:
        config = dataclasses.replace(config, steps=args.steps)
    if not args.measure_only:
        for folder in train.train_ladder(store.ladder_dir(), rungs, config=config):
            print(f"trained {folder.name} -> {folder}")
    if args.measure or args.measure_only:
        print(f"measurements -> {report.measure_ladder(rungs=[r.name for r in rungs])}")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "models":
            from .models import models

            print(models().to_string(index=False))
        elif args.command == "capture":
            _capture(args)
        elif args.command == "report":
            _report(args)
        elif args.command == "train-ladder":
            _train_ladder(args)
    except LatentbookError as exc:
        print(f"latentbook: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
