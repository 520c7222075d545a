"""The command line's options: ``build_parser(summary)`` is ``latentbook``'s argument parser, every subcommand
with its options, their help and defaults (``cli`` parses with it and runs the subcommand).

Usage: ``build_parser("...").parse_args(["capture", "smollm2-135m", "--out", "x.safetensors"])``.
Introduced in: the README's command line.
"""

from __future__ import annotations

import argparse
from pathlib import Path


class DefaultsShown(argparse.HelpFormatter):
    """Help that ends each option with its default, where it has one (not for flags or required options)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default not in (None, False, argparse.SUPPRESS) and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


def build_parser(summary: str) -> argparse.ArgumentParser:
    """``latentbook``'s argument parser, every subcommand and option, with ``summary`` as its description."""
    from ._version import __version__

    parser = argparse.ArgumentParser(prog="latentbook", description=summary)
    parser.add_argument("--version", action="version", version=f"latentbook {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the traceback of an error from another library (torch, transformers, json, the OS) "
        "instead of its one-line summary",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    zoo = sub.add_parser("models", help="list the model zoo (fits 100 columns)")
    zoo.add_argument("--wide", action="store_true", help="one unwrapped line per model, every column")
    zoo.add_argument(
        "--prepare",
        action="store_true",
        help="dequantise the embedded GGUF models into the model cache now, as their first load would "
        "(make setup runs it beside pip), instead of listing the zoo",
    )

    cap = sub.add_parser(
        "capture",
        help="capture per-depth statistics of a model on a prompt set",
        formatter_class=DefaultsShown,
    )
    cap.add_argument("model", help="zoo name (see `latentbook models`), local folder or cached hub id")
    cap.add_argument(
        "--prompts",
        default="general",
        help="shipped prompt set name, or a file: JSON lines, a JSON array, or one prompt per line",
    )
    cap.add_argument("--out", required=True, type=Path, help="where to write the capture (.safetensors)")
    cap.add_argument(
        "--max-prompts", type=int, default=None, help="use only the first N prompts (default: all)"
    )
    cap.add_argument("--batch-size", type=int, default=16, help="prompts per forward pass")
    cap.add_argument(
        "--max-length", type=int, default=128, help="tokens kept per prompt (longer ones are cut)"
    )
    cap.add_argument("--exclude-first", action="store_true", help="drop the first (BOS / sink) position")
    cap.add_argument(
        "--attention", action="store_true", help="also stream attention statistics (eager attention)"
    )
    cap.add_argument(
        "--precision",
        choices=["float32", "float64"],
        default="float32",
        help="precision of the batch Gram sums",
    )
    cap.add_argument("--device", default="auto", help="cpu, cuda, cuda:N, mps, or auto")
    cap.add_argument("--dtype", default="auto", help="model weights: float32, bfloat16, float16, or auto")
    cap.add_argument("--checkpoint-every", type=int, default=8, help="batches between checkpoints")
    cap.add_argument("--resume", action="store_true", help="continue from OUT.partial after an interruption")
    cap.add_argument("--force", action="store_true", help="overwrite a finished capture at OUT")
    cap.add_argument("--strict", action="store_true", help="refuse prompts longer than --max-length")
    cap.add_argument(
        "--distributed", action="store_true", help="under torchrun: shard prompts across ranks, merge exactly"
    )
    cap.add_argument(
        "--depths",
        default=None,
        help="keep statistics at these depths only, e.g. 0,7,14 (indices l in 0..L) or 0.25,0.5,1.0 (gamma "
        "fractions, nearest depth; with a decimal point); the forward stops after the last (default: all)",
    )
    cap.add_argument(
        "--device-map",
        default=None,
        help="spread the model over the GPUs (auto, balanced, sequential; needs accelerate): each layer's "
        "statistics on its GPU, the float64 sums on the host (default: one device)",
    )

    rep = sub.add_parser(
        "report",
        help="what a capture holds and means: references, m(gamma) with intervals, spectra, verdict rows",
        formatter_class=DefaultsShown,
    )
    rep.add_argument(
        "path", type=Path, metavar="CAPTURE", help="a capture file written by `latentbook capture`"
    )
    rep.add_argument(
        "--plot",
        type=Path,
        default=None,
        metavar="PNG",
        help="also write the m(gamma) and spectrum figure (.png)",
    )
    rep.add_argument("--force", action="store_true", help="overwrite the --plot file if it exists")
    rep.add_argument(
        "--twin",
        type=Path,
        default=None,
        metavar="CAPTURE",
        help="a capture of the random-weight twin (latentbook capture random:NAME or random:FOLDER), to judge "
        "the claims against",
    )
    rep.add_argument(
        "--no-verdict", action="store_true", help="skip the verdict rows (the slow part on large captures)"
    )

    ver = sub.add_parser(
        "verdict",
        help="judge every claim on the book's cached captures and a results folder (no book build)",
    )
    ver.add_argument(
        "--results",
        type=Path,
        default=None,
        help="folder of capture files (default: the repository's results/)",
    )
    ver.add_argument("--csv", type=Path, default=None, help="also write the table as CSV to this path")
    ver.add_argument("--force", action="store_true", help="overwrite the --csv file if it exists")
    ver.add_argument("--no-book", action="store_true", help="only the results folder, not the book's runs")
    ver.add_argument(
        "--capture-missing", action="store_true", help="capture the book's runs that are not cached (slow)"
    )

    lad = sub.add_parser("train-ladder", help="train chapter 7's ladder of small Llamas (CPU, seeded, exact)")
    lad.add_argument("--out", type=Path, default=None, help="folder of the rungs (default: results/ladder)")
    lad.add_argument("--rungs", default=None, help="comma-separated rung names (default: all)")
    lad.add_argument("--measure", action="store_true", help="then measure every rung and its null")
    lad.add_argument("--measure-only", action="store_true", help="measure the rungs already trained")
    lad.add_argument(
        "--steps", type=int, default=None, help="training steps per rung (default: the ladder's)"
    )
    lad.add_argument(
        "--seeds", default=None, help="comma-separated seeds: each rung once per seed, as <rung>-s<seed>"
    )
    lad.add_argument(
        "--balanced", action="store_true", help="the v2 task: the queried chain's start balanced (ladder v2)"
    )
    lad.add_argument(
        "--checkpoint-every", type=int, default=0, help="save a checkpoint every N steps (0: none)"
    )
    lad.add_argument(
        "--checkpoint-rungs", default=None, help="comma-separated rungs that get checkpoints (default: all)"
    )
    lad.add_argument("--jobs", type=int, default=1, help="rungs trained at once, one process and thread each")
    lad.add_argument("--force", action="store_true", help="retrain rungs whose folder is already complete")
    rec = sub.add_parser("records", help="the long-run records the book reads and whether each is current")
    rec_actions = rec.add_subparsers(dest="action", required=True, metavar="ACTION")
    rec_status = rec_actions.add_parser(
        "status",
        help="each record's file, whether the code that wrote it is the current code, and how to rerun it",
    )
    rec_status.add_argument(
        "--results", type=Path, default=None, help="the results folder (default: the book's results/)"
    )
    for action, what in (
        ("run", "compute a record again with its producer (hours for a calibration: see `status`)"),
        ("restamp", "keep a record for the current code once its spot cases reproduce (minutes)"),
    ):
        rec_action = rec_actions.add_parser(
            action, help=what, epilog="Arguments after -- go to the producer: ... -- --jobs 1"
        )
        rec_action.add_argument("name", help="the record: its name or slug, e.g. planted-calibration")
        rec_action.add_argument(
            "--repository",
            type=Path,
            default=None,
            help="the book's repository, which holds the producers (default: the one around results/)",
        )
        rec_action.add_argument(
            "--dry-run", action="store_true", help="print the command line and run nothing"
        )
    plan = sub.add_parser(
        "plan",
        help="the memory a capture needs per device, from the model's config alone (no weights read)",
        formatter_class=DefaultsShown,
    )
    plan.add_argument(
        "model",
        help="a config.json, a folder with one, a zoo name, a cached hub id, or a shipped config "
        "(Qwen/Qwen2.5-1.5B, Qwen/Qwen2.5-7B, Qwen/Qwen2.5-32B, google/gemma-2-27b, meta-llama/Meta-Llama-3-70B)",
    )
    plan.add_argument("--gpus", type=int, default=1, help="GPUs to spread the model over (0: a CPU capture)")
    plan.add_argument("--gpu-mem", type=float, default=80.0, help="GiB per GPU (with --gpus 0: RAM)")
    plan.add_argument("--depths", default=None, help="as for capture (default: all)")
    plan.add_argument("--batch-size", type=int, default=16, help="prompts per forward pass")
    plan.add_argument("--max-length", type=int, default=128, help="tokens per prompt")
    plan.add_argument("--attention", action="store_true", help="with attention statistics (eager attention)")
    plan.add_argument("--dtype", default="auto", help="weights: auto (bfloat16 on GPUs), float32...")
    plan.add_argument(
        "--precision", choices=["float32", "float64"], default="float32", help="of the pending Grams"
    )
    return parser
