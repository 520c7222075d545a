"""The verdict table: every claim of book/paper.md against every model run, each decided by ``analysis.verdict``.

Usage:

1. ``runs = {label: measure(cap, label) for label, cap in captures.items()}`` (``study.measure``; the label
   ``"random:<name>"`` marks the random-weight twin of ``<name>``, whose numbers are the null the trained model
   must beat, and ``"<name> (shuffled)"`` the same model on shuffled words);
2. optionally ``tco = {label: tco.score_token_states(token_states, written)}`` for class stability
   (``analysis.tco``; token states need a second forward pass, so only chapter 8 adds them);
3. ``table = runs_table(runs, tco, results_dir=find_results_dir())``: one row per claim and model run
   (``study.rows``), plus rows for every capture file in ``results/`` (``load_results``: from ``latentbook
   capture`` on a GPU box, picked up automatically), the ladder's rows (``study.ladder_rows``, chapter 7) and
   "not testable here" rows, with the command that would test them, for what needs 1.5B-30B weights.

``verdict_table(results_dir, book=True, capture_missing=False)`` does all of it for the book's runs whose
captures are cached (``measured_runs``, ``measured_landmarks``: each run measured once and kept on disk beside its
capture by ``study.measurement_cache``, so chapter 8, chapter 9 and the command line share them);
``latentbook verdict [--csv PATH]`` calls it and writes ``to_csv_frame(table)``. ``interval_problems`` lists the
rows whose estimate lies outside its interval (none should), ``summary`` the verdicts at a glance.
Introduced in: chapter 8.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..analysis.verdict import CLAIMS, COLUMNS, Row, TCOSummary
from ..errors import CaptureFileError, InvalidInputError, LatentbookError
from .capture_report import (
    SPECTRAL_CLAIMS,
    cooling_problem_of,
    results_label,
    untestable_row,
)
from .evidence import is_encoder, weigh
from .ladder_rows import ladder_rows
from .measure import Measurements
from .measurement_cache import landmarks_of, measurements_of, results_file_measurements, spreads_of
from .paths import find_results_dir
from .rows import (
    claim_rows,
    landmark_row,
    massive_step_row,
    not_testable_rows,
    run_kind,
    scaling_row,
)
from .run_landmarks import DepthLandmarks
from .runs import Run, book_runs

if TYPE_CHECKING:
    import pandas as pd

    from ..capturing.results import Capture

CSV_COLUMNS = ("claim", "model", "run", "estimate", "ci_low", "ci_high", "verdict", "scope", "reason")


def check_results_folder(folder: str | Path) -> None:
    """Refuse a results folder that is not one (missing, or a capture file given instead), naming the fix."""
    if not Path(folder).is_dir():
        raise InvalidInputError(
            f"The results folder {folder} {'is a file' if Path(folder).exists() else 'does not exist'}: give a "
            "folder of captures (for one capture file, `latentbook report FILE` judges it)."
        )


def load_results(folder: str | Path | None) -> tuple[dict[str, Capture], list[str]]:
    """Every ``*.safetensors`` capture in ``folder`` (not recursive), by label ``"<model> (<file>)"``, and a
    message for each file that is not a readable capture or not named ``*.safetensors`` (it is skipped, never
    silently; folders and hidden files are passed over). A ``folder`` that is not one is refused."""
    files, problems = results_files(folder)
    return {label: cap for label, (cap, _) in files.items()}, problems


def results_files(folder: str | Path | None) -> tuple[dict[str, tuple[Capture, Path]], list[str]]:
    """``load_results`` with the file each capture was read from: ``{label: (capture, path)}`` and the problems."""
    from ..capturing.results import load_capture

    captures, problems = {}, []
    if folder is None:
        return captures, problems
    check_results_folder(folder)
    for path in sorted(Path(folder).iterdir()):
        if path.name.startswith(".") or path.is_dir():
            continue
        if path.suffix != ".safetensors":
            problems.append(f"{path.name}: not a .safetensors file, so not read as a capture")
            continue
        try:
            cap = load_capture(path)
        except CaptureFileError as exc:
            problems.append(f"{path.name}: {exc}")
            continue
        captures[results_label(cap, path.name)] = cap, path
    return captures, problems


def _twin_of(label: str, runs: Mapping[str, Measurements]) -> Measurements | None:
    """The run labelled ``"random:" + label``, else a run of the model ``"random:" + model_name`` (results)."""
    if label.startswith("random:") or "shuffled" in label:
        return None
    if "random:" + label in runs:
        return runs["random:" + label]
    wanted = "random:" + runs[label].model_name
    return next((m for m in runs.values() if m.model_name == wanted), None)


def _shuffled_of(label: str, runs: Mapping[str, Measurements]) -> Measurements | None:
    """The run labelled ``label + " (shuffled)"`` (the same model on shuffled words), if measured."""
    if label.startswith("random:") or "shuffled" in label:
        return None
    return runs.get(f"{label} (shuffled)")


def runs_table(
    runs: Mapping[str, Measurements],
    tco: Mapping[str, TCOSummary] | None = None,
    results_dir: str | Path | None = None,
    ladder: bool = True,
    n_boot: int = 200,
    landmarks: Mapping[str, DepthLandmarks] | None = None,
    spreads: Mapping[str, Sequence[float]] | None = None,
) -> pd.DataFrame:
    """Every claim against every run: ``runs`` (from ``measure``), capture files in ``results_dir`` (measured
    here, labelled "results file"), the ladder's rows, and "not testable here" rows for the paper's scale.
    ``landmarks`` (``study.run_landmarks.book_landmarks`` of each run) adds each run's landmark row; a results file's
    landmarks are read from the file (without the logit lens, which needs the model). ``spreads``: each run's
    ``bimodality_power.band_spreads``, for the bimodality row's power; by default those of the book's cached
    captures (``book_spreads``) and of the results files.

    Files in ``results_dir`` that are not readable captures are listed in ``table.attrs["problems"]``.
    """
    import pandas as pd

    runs, landmarks = dict(runs), dict(landmarks or {})
    spreads = dict(spreads if spreads is not None else book_spreads(runs))
    kinds = {label: run_kind(label) for label in runs}
    files, problems = results_files(results_dir)
    results = {label: cap for label, (cap, _) in files.items()}
    cooling_problems = {}  # attention a results file holds but the cooling claim cannot read: that row only
    spectra_missing: dict[str, str] = {}  # a results file too shallow for the spectra: those rows only
    for label, cap in results.items():
        if problem := cooling_problem_of(cap):
            cap, cooling_problems[label] = replace(cap, attention=None), problem
        try:  # each measured once and kept on disk, keyed on the file's content
            measured = results_file_measurements(cap, files[label][1], label, n_boot=n_boot)
            runs[label], spectra_missing[label], landmarks[label], spreads[label] = measured
        except LatentbookError as exc:  # one capture that cannot be measured costs its rows, not the table
            problems.append(f"{label}: could not be measured: {exc}")
            continue
        kinds[label] = "results file"
    tco = tco or {}
    judged: dict[str, list[Row]] = {}
    for label, m in runs.items():
        twin = _twin_of(label, runs)
        twin_tco = tco.get(twin.label) if twin is not None else None
        judged[label] = claim_rows(
            m, twin, tco.get(label), twin_tco, run=kinds[label], shuffled=_shuffled_of(label, runs)
        )
    rows: list[Row] = []
    for label, m in runs.items():
        twin = _twin_of(label, runs)
        family = results[label].provenance.get("model_family") if label in results else None
        weighed = weigh(
            judged[label],
            m,
            twin,
            judged.get(twin.label) if twin is not None else None,
            encoder=is_encoder(m.model_name, family),
            spreads=spreads.get(label),
        )
        if spectra_missing.get(label):  # claim_rows' order: ... bimodality, spectra, cooling
            gap = [untestable_row(claim, m, spectra_missing[label]) for claim in SPECTRAL_CLAIMS]
            weighed = weighed[:-1] + gap + weighed[-1:]
        if label in cooling_problems:
            weighed = [
                untestable_row(row.claim, m, cooling_problems[label])
                if row.claim == "attention_cooling"
                else row
                for row in weighed
            ]
        rows += weighed
        if label in landmarks:
            rows.append(landmark_row(m, landmarks[label], run=kinds[label]))
            rows.append(massive_step_row(m, landmarks[label], run=kinds[label]))
    rows.append(scaling_row({k: v for k, v in runs.items() if kinds[k] in ("trained", "results file")}))
    trained_sizes = [m.parameters for k, m in runs.items() if kinds[k] in ("trained", "results file")]
    rows += not_testable_rows(max(trained_sizes, default=0.0))
    if ladder:
        rows += ladder_rows()
    table = pd.DataFrame([asdict(row) for row in rows], columns=list(COLUMNS))
    table.attrs["problems"] = problems
    return table


def book_spreads(runs: Mapping[str, Measurements]) -> dict[str, list[float]]:
    """``bimodality_power.band_spreads`` of each book run in ``runs`` whose capture is cached (what the verdict page
    and ``measured_runs`` measured), at the split it was measured at (``measurement_cache.spreads_of``: kept on
    disk)."""
    found = {}
    for run in book_runs():
        spreads = spreads_of(run, runs[run.label].split) if run.label in runs else None
        if spreads is not None:
            found[run.label] = spreads
    return found


def measured_runs(
    capture_missing: bool = False, progress: Callable[[str], None] | None = None
) -> tuple[dict[str, Measurements], list[str]]:
    """``measure`` of every book run whose capture is cached (all of them with ``capture_missing``), and the
    labels of those skipped: each run's measurements computed once and kept on disk beside its capture
    (``measurement_cache.measurements_of``; a shuffled-words run, a null for bimodality, without spectra)."""
    runs, skipped = {}, []
    for run in book_runs():
        if not capture_missing and not run.capture_path().is_file():
            skipped.append(run.label)
            continue
        if progress is not None:
            progress(run.label)
        runs[run.label] = measurements_of(run, capture_missing=capture_missing)
    return runs, skipped


def measured_landmarks(runs: Iterable[Run] | None = None) -> dict[str, DepthLandmarks]:
    """``run_landmarks.book_landmarks`` of each of ``runs`` (default: every book run), by label, each computed once
    and kept on disk beside its capture (``measurement_cache.landmarks_of``): chapters 8 and 9 share them."""
    return {run.label: landmarks_of(run) for run in (book_runs() if runs is None else runs)}


def verdict_table(
    results_dir: str | Path | None = None,
    book: bool = True,
    capture_missing: bool = False,
    ladder: bool = True,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """The verdict table of the book's runs (``book``; only cached captures unless ``capture_missing``) and of
    every capture in ``results_dir`` (default: ``paths.find_results_dir``; a folder that is not one is refused before
    anything is measured, and without the book's runs a missing one too). ``table.attrs["skipped"]`` lists the book
    runs left out because they were not cached."""
    folder = results_dir if results_dir is not None else find_results_dir()
    if folder is not None:
        check_results_folder(
            folder
        )  # before the book's runs are measured, whether given or from the environment
    elif not book:
        raise InvalidInputError(
            "Nothing to judge: the book's runs are left out and no results folder was found (no LATENTBOOK_RESULTS, "
            "and the working folder is not inside the book's repository). Pass --results FOLDER."
        )
    runs, skipped = measured_runs(capture_missing, progress) if book else ({}, [])
    landmarks = measured_landmarks(run for run in book_runs() if run.label in runs)
    table = runs_table(runs, results_dir=folder, ladder=ladder, landmarks=landmarks)
    table.attrs["skipped"] = skipped
    return table


def to_csv_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The table in the columns of ``latentbook verdict --csv``: ``claim, model, run, estimate, ci_low, ci_high,
    verdict, scope, reason`` (numbers as numbers, NaN where a claim has no single number)."""
    return table.rename(columns={"value": "estimate"})[list(CSV_COLUMNS)]


def interval_problems(table: pd.DataFrame) -> pd.DataFrame:
    """Rows whose interval does not contain its estimate, or whose interval's ends are not ordered (none should)."""
    has = table["ci_low"].notna() & table["ci_high"].notna() & table["value"].notna()
    bad = has & ~((table["ci_low"] <= table["value"]) & (table["value"] <= table["ci_high"]))
    return table[bad]


MIXED = "mixed"


def cell_verdict(verdicts) -> str:
    """One cell of the table at a glance from the verdicts of the rows that share it (the ladder has one row per
    diagnostic): their common word, or ``"mixed: 1 holds, 4 inconclusive"``, never one row standing for all."""
    import pandas as pd

    counts = pd.Series(list(verdicts)).value_counts()
    if len(counts) == 1:
        return str(counts.index[0])
    return f"{MIXED}: " + ", ".join(f"{n} {word}" for word, n in counts.items())


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Claims as rows, model runs as columns, verdicts as cells (the table at a glance; ``cell_verdict`` where
    several rows share a cell)."""
    return table.pivot_table(index="claim", columns="model", values="verdict", aggfunc=cell_verdict).reindex(
        [c for c in CLAIMS if c in set(table["claim"])]
    )


def scope_counts(table: pd.DataFrame, runs: tuple[str, ...] = ("trained", "results file")) -> pd.DataFrame:
    """Verdicts of the ``runs`` kinds by scope (``analysis.verdict.SCOPES`` as rows, ``VERDICTS`` as columns,
    counts): what the summary counts, so that a claim the paper makes for large models is never counted
    against it on a small model."""
    import pandas as pd

    from ..analysis.verdict import SCOPES, VERDICTS

    chosen = table[table["run"].isin(runs)]
    counts = pd.crosstab(chosen["scope"], chosen["verdict"])
    return counts.reindex(index=list(SCOPES), columns=list(VERDICTS), fill_value=0).astype(int)


def scope_sentence(counts: pd.DataFrame, scopes: list[str]) -> str:
    """The verdicts counted under ``scopes`` (rows of ``scope_counts``) in words: "3 holds, 5 does not hold"."""
    total = counts.loc[scopes].sum()
    return ", ".join(f"{int(n)} {word}" for word, n in total.items() if n) or "no verdicts"


def transition_words(trans) -> str:
    """A ``transition.Transition`` in words, for prose beside a verdict: where and how large, or why there is none."""
    if trans is None:
        return "too few depths for a fit"
    if not trans.has_transition:
        return f"no transition ({trans.reason})"
    low, high = trans.ci
    return (
        f"a transition at gamma_c = {trans.gamma_c:.2f} [{low:.2f}, {high:.2f}], jump {trans.amplitude:+.3f} "
        f"[{trans.amplitude_ci[0]:+.3f}, {trans.amplitude_ci[1]:+.3f}]"
    )
