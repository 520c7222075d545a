"""The verdict table from the book's captures and any ``results/`` folder, without building the book.

``verdict_table(results_dir, book=True, capture_missing=False)`` measures every run (``analysis.verdict.measure``)
and judges every claim (``analysis.verdict.verdict_table``); ``latentbook verdict [--csv PATH]`` and chapter 8
call it. Class stability (token states, a second forward pass) is chapter 8's own addition.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..analysis import verdict as judged
from .runs import book_runs

if TYPE_CHECKING:
    import pandas as pd


def measured_runs(
    capture_missing: bool = False, progress: Callable[[str], None] | None = None
) -> tuple[dict, list[str]]:
    """``analysis.verdict.measure`` of every book run whose capture is cached (all of them with
    ``capture_missing``), and the labels of those skipped."""
    runs, skipped = {}, []
    for run in book_runs():
        cap = run.capture(cached_only=not capture_missing)
        if cap is None:
            skipped.append(run.label)
            continue
        if progress is not None:
            progress(run.label)
        attention = run.capture(cached_only=True, attention=True) if run.kind != "shuffled words" else None
        shuffled = run.kind == "shuffled words"  # a null for bimodality: its spectra are not judged
        gains = run.gains(cached_only=not capture_missing)
        runs[run.label] = judged.measure(
            cap, run.label, attention=attention, spectra=not shuffled, gains=gains
        )
    return runs, skipped


def verdict_table(
    results_dir: str | Path | None = None,
    book: bool = True,
    capture_missing: bool = False,
    ladder: bool = True,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """The verdict table of the book's runs (``book``; only cached captures unless ``capture_missing``) and of
    every capture in ``results_dir`` (default: the repository's ``results/``). ``table.attrs["skipped"]`` lists
    the book runs left out because they were not cached."""
    runs, skipped = measured_runs(capture_missing, progress) if book else ({}, [])
    folder = results_dir if results_dir is not None else judged.find_results_dir()
    table = judged.verdict_table(runs, results_dir=folder, ladder=ladder)
    table.attrs["skipped"] = skipped
    return table
