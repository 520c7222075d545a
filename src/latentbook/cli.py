"""Command line: ``latentbook models | capture | report | verdict | plan | train-ladder``, so a GPU box can
produce ``results/`` files and judge them.

For example::

    latentbook models
    latentbook capture smollm2-135m --prompts general --out results/smollm2.safetensors
    latentbook report results/smollm2.safetensors
    latentbook verdict --csv verdict.csv    # every claim, on the book's cached captures and results/
    latentbook plan Qwen/Qwen2.5-32B --gpus 1 --gpu-mem 80    # will it fit? (from the config alone)
    latentbook train-ladder --measure    # chapter 7's ladder, trained on the CPU, then measured
    latentbook train-ladder --out results/ladder-v2 --seeds 0,1,2 --balanced --checkpoint-every 500 \\
        --checkpoint-rungs l4-d64,l8-d64 --jobs 2    # ladder v2 (resumes; complete rungs are skipped)
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from ._text import printable
from .cli_commands import CSV_BYTES as CSV_BYTES  # re-exported: cli_commands holds the other subcommands
from .cli_commands import _check_csv_path as _check_csv_path
from .cli_commands import _check_ladder_options as _check_ladder_options
from .cli_commands import _plan, _prepare_models, _records, _report, _train_ladder, _verdict
from .cli_options import build_parser
from .errors import InvalidInputError, LatentbookError, OutputExistsError


def _parser() -> argparse.ArgumentParser:
    """``latentbook``'s argument parser (``cli_options.build_parser``), described by this module's first
    paragraph."""
    return build_parser(" ".join(__doc__.split("\n\n")[0].split()).replace("``", ""))


def read_prompts(spec: str, limit: int | None = None) -> list[str]:
    """A shipped prompt set by name, or a file (``prompts.files.read_prompt_file``: JSON lines, a JSON array, or
    one prompt per line).

    Parameters
    ----------
    spec : str
        The value of ``--prompts``: the name of a shipped set (``lb.prompts.names()``), else the path of a file.
    limit : int, optional
        The value of ``--max-prompts``: keep only the first ``limit`` prompts (a positive integer); None keeps
        them all.

    Returns
    -------
    list of str
        The prompts, in the set's or the file's order.

    Raises
    ------
    InvalidInputError
        For a ``limit`` that is not a positive integer, a ``spec`` that is neither a shipped set nor a file, a
        ``spec`` that is both (a file of a shipped set's name in the working folder: ambiguous), a folder or a
        device, or a file that holds no prompt or is malformed in its format (``prompts.files.read_prompt_file``
        says where). A pipe (``--prompts <(grep word prompts.txt)``) is read as a file.
    """
    from . import prompts as prompt_sets
    from .prompts.files import read_prompt_file

    prompt_sets.check_limit(limit, "--max-prompts")
    if spec in prompt_sets.names():
        if Path(spec).exists():  # the user may mean either: refuse to guess
            raise InvalidInputError(
                f"--prompts {spec!r} names both a shipped prompt set and the file {Path(spec).resolve()}: write "
                f"--prompts ./{spec} for the file, or run from another folder for the shipped set."
            )
        return prompt_sets.load(spec, limit)
    path = Path(spec)
    if not path.exists():
        raise InvalidInputError(
            f"--prompts {spec!r} is neither a shipped set {prompt_sets.names()} nor a file."
        )
    return read_prompt_file(path)[:limit]  # a folder or a device is refused there; a pipe is read once


def _capture(args: argparse.Namespace) -> None:
    """``latentbook capture``: check the prompts, the settings, the depths and ``--out`` first (a mistake costs a
    second, not a model load), then load the model, capture with checkpoints and save the capture to ``--out``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``latentbook capture`` (``model``, ``prompts``, ``out``, ``max_prompts``,
        ``batch_size``, ``max_length``, ``resume``, ``force``, ``distributed``, ``depths``, ...; see
        ``latentbook capture -h``).

    Returns
    -------
    None
        The capture is written to ``--out`` (by the main process under ``torchrun``), which prints one line
        with its tokens, model and depths; the checkpoint is removed once the capture is on disk.

    Raises
    ------
    InvalidInputError
        For prompts or settings that cannot give a capture, or a checkpoint left at ``OUT.partial`` without
        ``--resume``.
    OutputExistsError
        For an ``--out`` that already holds a file, without ``--force``.
    CheckpointMismatchError
        For ``--resume`` of a checkpoint written with other prompts or settings.
    """
    from .capturing import capture
    from .capturing import distributed as dist
    from .capturing.capture import _check_depths_from_config, check_prompts, check_settings, parse_depths
    from .models import load_model
    from .models.zoo import resolve_device, resolve_dtype

    # Everything cheap first, so a mistake costs a second, not a model load or a capture.
    texts = check_prompts(read_prompts(args.prompts, args.max_prompts))
    check_settings(
        max_length=args.max_length,
        batch_size=args.batch_size,
        checkpoint_every=args.checkpoint_every,
        precision=args.precision,
    )
    resolve_dtype(args.dtype, resolve_device(args.device))
    depths = parse_depths(args.depths)
    if depths is not None:  # out-of-range depths are refused from the config, before the model loads
        _check_depths_from_config(args.model, depths)
    _check_room_for_capture(args)
    rank, world = dist.rank_and_world() if args.distributed else (0, 1)
    partial = args.out.with_name(args.out.name + ".partial")
    own_partial = dist.rank_checkpoint(partial, rank, world)
    with _claimed_output(args, partial, rank, world):
        _check_resume_early(args, texts, own_partial)
        model = load_model(args.model, device=args.device, dtype=args.dtype, device_map=args.device_map)
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
            depths=args.depths,
        )
        if dist.is_main_process():
            result.save(args.out, force=args.force)  # --force: whatever --out held (checked above without it)
        dist.barrier()  # the merged result is on disk before any rank drops its checkpoint
        own_partial.unlink(missing_ok=True)
        dist.barrier()  # every checkpoint is gone before the lock is released
    if dist.is_main_process():
        print(f"Captured {result.n_tokens} tokens of {model.name} at {result.n_depths} depths -> {args.out}")


def _check_room_for_capture(args: argparse.Namespace) -> None:
    """Refuse, before the model loads, an ``--out`` whose disk cannot hold the capture and its checkpoint (twice
    the host memory ``latentbook plan`` counts for the accumulators, which the file holds); a model the plan
    cannot read from its config alone is checked by its load instead."""
    from ._files import check_room
    from .capturing.plan import make_plan

    try:
        plan = make_plan(
            args.model, gpus=0, gpu_mem_gib=2.0**20, depths=args.depths, attention=args.attention
        )
    except LatentbookError:
        return
    check_room(args.out, 2 * plan.accumulator_bytes()["host"])


def _check_resume_early(args: argparse.Namespace, texts: list[str], checkpoint: Path) -> None:
    """The settings of a checkpoint to ``--resume`` that are known before the model loads (the prompts, the
    weights' dtype, lengths, precision, attention) compared now, so a mismatch costs a second, not a model load;
    the model itself is compared once loaded (``capture``'s resume)."""
    from .capturing.capture import prompt_set_hash
    from .capturing.capture_file import capture_header
    from .errors import CaptureFileError, CheckpointMismatchError
    from .models.zoo import resolve_device, resolve_dtype, run_name

    if not (args.resume and checkpoint.exists()):
        return
    try:
        saved = (capture_header(checkpoint) or {}).get("provenance") or {}
    except Exception as exc:  # safetensors refuses a truncated file or a damaged header
        raise CaptureFileError(
            f"The checkpoint {checkpoint} cannot be read ({' '.join(str(exc).split())[:200]}): it is damaged or "
            "truncated. Delete it and capture again without --resume."
        ) from exc
    wanted = {
        "model": run_name(args.model),
        "prompt_set_sha256": prompt_set_hash(texts),
        "n_prompts": len(texts),
        "dtype": str(resolve_dtype(args.dtype, resolve_device(args.device))).removeprefix("torch."),
        "max_length": args.max_length,
        "exclude_first": args.exclude_first,
        "precision": args.precision,
        "attention": args.attention,
    }
    differing = [
        f"{key} {saved[key]!r} -> {value!r}"
        for key, value in wanted.items()
        if value is not None and saved.get(key, value) != value  # None: known only once the model loads
    ]
    if differing:
        raise CheckpointMismatchError(
            f"The checkpoint {checkpoint} was written with other settings ({'; '.join(differing)}). Resume with "
            "the same prompts and settings (the same --dtype too: mixing weight dtypes mixes two populations), "
            "or delete the checkpoint to start over."
        )


@contextlib.contextmanager
def _claimed_output(args: argparse.Namespace, partial: Path, rank: int, world: int) -> Iterator[None]:
    """Check ``--out`` and hold its lock for the block (rank 0 holds it; every rank stops if one check fails)."""
    from .capturing import distributed as dist

    with contextlib.ExitStack() as stack:
        try:
            if rank == 0:
                stack.enter_context(_locked_output(args.out, world))
            _refuse_lost_work(args, partial, rank, world)
            error = None
        except LatentbookError as exc:
            error = exc
        error = dist.first_error(error)
        if error is not None:
            raise error
        yield


@contextlib.contextmanager
def _locked_output(out: Path, world: int) -> Iterator[None]:
    """Validate ``out``, lock it (and its checkpoints) against a second run, and clean killed writes' leftovers."""
    from ._files import check_output_path, exclusive_lock, remove_stale_temporaries

    longest = f"{out.name}.partial" + (f".rank{world - 1}-of-{world}" if world > 1 else "")
    check_output_path(out, longest)
    lock = out.with_name(f".{out.name}.lock")
    fix = f"wait for it to finish, or choose another --out than {out}"
    with exclusive_lock(lock, what=f"--out {out}", fix=fix):
        remove_stale_temporaries(out.parent, re.escape(out.name) + r"(?:\.partial(?:\.rank\d+-of-\d+)?)?")
        yield


def _refuse_lost_work(args: argparse.Namespace, partial: Path, rank: int, world: int) -> None:
    """Never overwrite a finished capture unless ``--force``; never discard a checkpoint unless asked."""
    from .capturing import distributed as dist

    own_partial = dist.rank_checkpoint(partial, rank, world)
    if args.out.exists() and not args.force and rank == 0:
        if not _holds_capture(args.out):
            raise OutputExistsError(
                f"{args.out} is a file that is not a latentbook capture, and it would be lost. Choose another "
                "--out (or pass --force to replace it)."
            )
        what = "nothing is left to resume" if args.resume and not own_partial.exists() else "it would be lost"
        raise OutputExistsError(
            f"{args.out} already holds a finished capture and {what}. Pass --force to overwrite it, or choose "
            "another --out."
        )
    dist.refuse_other_world_partials(partial, world)
    if own_partial.exists() and not args.resume:
        raise InvalidInputError(
            f"An interrupted capture left {own_partial}. Pass --resume to continue it, or delete it to start over."
        )


def _holds_capture(path: Path) -> bool:
    """Whether ``path`` is a safetensors file whose header says it is a latentbook capture (read, not verified)."""
    from .capturing.capture_file import FORMAT, capture_header

    try:
        header = capture_header(path)
    except Exception:  # noqa: BLE001 -- anything unreadable as safetensors is not a capture
        return False
    return header is not None and header.get("format") == FORMAT


def main(argv: list[str] | None = None) -> int:
    """The ``latentbook`` command: parse ``argv`` and run its subcommand (``models``, ``capture``, ``report``,
    ``verdict``, ``plan``, ``train-ladder`` or ``records``; ``latentbook SUBCOMMAND -h`` lists each one's options).

    A ``LatentbookError`` (bad input, an output that exists, a damaged file, ...) or a full disk is printed as one
    ``latentbook: error:`` line, not a traceback; after Ctrl-C the message says what is on disk and how to
    continue.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``latentbook``, e.g. ``["report", "results/smollm2.safetensors"]``; None (the
        default, as the installed command runs) reads them from ``sys.argv``.

    Returns
    -------
    int
        The exit status: 0 on success (also when the reader of the output closes the pipe early), 2 after a
        ``LatentbookError`` or a full disk, 130 after Ctrl-C.

    Raises
    ------
    SystemExit
        From argparse: status 2 for unknown or missing arguments, status 0 after ``-h`` or ``--version``.
    """
    for stream in (sys.stdout, sys.stderr):  # an ASCII terminal shows "mod\xe8le", not a UnicodeEncodeError
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    argv = sys.argv[1:] if argv is None else list(argv)
    # `records run NAME -- ARGS`: ARGS go to the record's producer, unread (argparse's subcommands misread "--")
    cut = argv.index("--") if "--" in argv else len(argv)
    passthrough = argv[cut + 1 :] if "records" in argv[:cut] else []
    args = _parser().parse_args(argv[:cut] if "records" in argv[:cut] else argv)
    args.extra = passthrough
    try:
        if args.command == "models" and args.prepare:
            _prepare_models()
        elif args.command == "models":
            from ._text import text_table
            from .models import models

            table = models().rename(columns={"d_model": "d", "available": "here"})
            print(table.to_string(index=False) if args.wide else text_table(table, wrap_column="source"))
            if not args.wide:
                print(
                    "\nhere: it loads on this machine. Any Hugging Face id or local model folder also works."
                )
        elif args.command == "capture":
            _capture(args)
        elif args.command == "report":
            _report(args)
        elif args.command == "verdict":
            _verdict(args)
        elif args.command == "plan":
            _plan(args)
        elif args.command == "train-ladder":
            _train_ladder(args)
        elif args.command == "records":
            _records(args)
    except LatentbookError as exc:
        print(printable(f"latentbook: error: {exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"latentbook: interrupted. {_what_is_safe(args)}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `latentbook models | head`: the reader has what it wanted
        import os

        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        except (AttributeError, OSError, ValueError):  # a stdout without a file descriptor (a test's capture)
            pass
        return 0
    except Exception as exc:  # a full disk (Python or safetensors); after BrokenPipeError, an OSError too
        if _disk_full(exc):
            which = f"holding {exc.filename} " if getattr(exc, "filename", None) else ""
            print(
                f"latentbook: error: the disk {which}is full ({exc}). {_what_is_safe(args)} Free space first.",
                file=sys.stderr,
            )
            return 2
        if args.debug:
            raise
        print(printable(f"latentbook: error: {foreign_error(exc)}"), file=sys.stderr)
        return 2
    return 0


def foreign_error(exc: BaseException) -> str:
    """One line for an error raised by another library (torch, transformers, safetensors, json, the OS): what
    failed, on which file when it names one, and how to see more (``--debug``)."""
    what = " ".join(str(exc).split())[:300] or "no message"
    where = ""
    if isinstance(exc, OSError) and exc.filename:
        where = f" on {exc.filename}"
        what = exc.strerror or what
    more = "rerun with --debug for the traceback"
    if isinstance(exc, (OSError, ValueError, KeyError, TypeError)):  # what an input file or setting can cause
        return f"{type(exc).__name__}{where}: {what}. Check the files and options given; {more}."
    return f"{type(exc).__name__}{where}: {what}. This is not an error latentbook expected: {more} and report it."


def _disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk is full: ``ENOSPC``, or safetensors' "StorageFull" (os error 28)."""
    import errno

    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    return any(sign in str(exc) for sign in ("StorageFull", "No space left on device", "os error 28"))


def _what_is_safe(args: argparse.Namespace) -> str:
    """One line after Ctrl-C or a full disk: what is on disk and how to continue."""
    if args.command == "capture":
        return (
            f"Nothing was written to {args.out}; the last checkpoint ({args.out}.partial, if one was written) is "
            f"intact: rerun the same command with --resume to continue from it."
        )
    if args.command == "train-ladder":
        return "Finished rungs are kept; rerun the same command to continue (complete rungs are skipped)."
    return "Nothing was written."


if __name__ == "__main__":
    sys.exit(main())
