"""Chapter 8's measurements of the book's runs and the numbers it glues from the verdict table (``glue_frame("vd",
...)``).

Usage: ``tco = binding_tco(book_runs())`` beside ``runs_table``; then ``source_counts(table)`` (the files read
from ``results/``), ``count_glue(table)`` (its summary paragraph), ``first_screen(table, gemma_capture,
gemma_landmarks, end_to_end_table)`` (its first screen) and ``grid(table)`` (the heatmap's cells, in run order).
The rows the prose reads one by one are ``study.chapters.verdict_reading``.
Introduced in: chapter 8.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ...analysis import transition, verdict
from ..verdict_table import interval_problems, scope_counts, scope_sentence, summary
from .criteria_planted import calibrated_cells, learned_cells

if TYPE_CHECKING:
    import pandas as pd

    from ...analysis.tco import TCOScores
    from ...capturing.results import Capture
    from ..run_landmarks import DepthLandmarks
    from ..runs import Run

MEASURED_RUNS = ("trained", "null: random weights", "results file")  # the runs the summary counts
COUNTED = (  # verdict -> the glue name's word
    ("holds", "holds"),
    ("uninformative", "uninformative"),
    ("does not hold", "not"),
    ("inconclusive", "inconclusive"),
    ("not testable here", "nt"),
)


GRID_FIRST = ("trained", "null: random weights")  # the heatmap's first columns: the book's models and twins


def binding_tco(runs: Iterable[Run]) -> dict[str, TCOScores]:
    """Chapter 6's class stability of each run on the book's ``binding`` prompts (``tco.score_token_states`` on
    ``Run.binding_states``), by label; a shuffled-words run is left out (its labelled prompts are not shuffled)."""
    from ...analysis import tco
    from ...capturing.state_cache import BOOK_REASONING_ITEMS
    from ...prompts import reasoning
    from ..runs import CLASS_SET

    written = tco.written_values(reasoning.load(CLASS_SET, n_items=BOOK_REASONING_ITEMS).items)
    return {
        run.label: tco.score_token_states(run.binding_states(), written)
        for run in runs
        if run.kind != "shuffled words"
    }


def results_files(table: pd.DataFrame) -> list[str]:
    """The capture files of ``results/`` the table judged (its "results file" runs), sorted."""
    return sorted(table.loc[table["run"] == "results file", "model"].unique())


def source_counts(table: pd.DataFrame) -> dict[str, int]:
    """How many capture files of ``results/`` the table read (``n_results``), how many it skipped as unreadable
    (``n_problems``, ``table.attrs["problems"]``) and how many rows lie outside their own interval
    (``n_interval_problems``, ``verdict_table.interval_problems``: none should)."""
    return {
        "n_results": len(results_files(table)),
        "n_problems": len(table.attrs.get("problems", [])),
        "n_interval_problems": int(len(interval_problems(table))),
    }


def grid(table: pd.DataFrame) -> pd.DataFrame:
    """The verdicts at a glance (``verdict_table.summary``) as the heatmap shows them: claims by their titles
    (``verdict.CLAIM_TITLES``), the measured runs first (trained models and random twins, in the table's order),
    then every other column (results files, shuffled words, the ladder) as ``summary`` orders them."""
    glance = summary(table)
    measured = table[table["run"].isin(GRID_FIRST) & (table["claim"] != "scaling")]
    first = [model for model in dict.fromkeys(measured["model"]) if model in glance.columns]
    order = first + [column for column in glance.columns if column not in first]
    return glance[order].rename(index=verdict.CLAIM_TITLES)


def count_glue(table: pd.DataFrame) -> dict[str, object]:
    """The summary's numbers: claims, runs and verdicts of the trained runs (and results files) and of the random
    twins, counted by verdict (``trained_holds``, ``twin_not``, ...; the ladder's ``scaling`` rows left out), the
    largest and smallest run in millions of parameters, the verdicts by scope in words (``scope_in_range``,
    ``scope_below``, ``scope_other``), how many are in the paper's range (``n_in_range``), how many jump rows the
    judge's power made "inconclusive" (``n_weighed_by_power``) and the list of what holds (``holds_list``: "claim
    (model); ...", ``holds_titles`` in ``verdict.CLAIM_TITLES``' words, or "none")."""
    measured = table[table["run"].isin(MEASURED_RUNS) & (table["claim"] != "scaling")]
    trained = measured[measured["run"] != "null: random weights"]
    twins = measured[measured["run"] == "null: random weights"]
    trained_counts, twin_counts = trained["verdict"].value_counts(), twins["verdict"].value_counts()
    glued: dict[str, object] = {
        "n_claims_measured": int(trained["claim"].nunique()),
        "n_trained_runs": int(trained["model"].nunique()),
        "n_trained_verdicts": int(len(trained)),
    }
    for word, key in COUNTED:
        glued[f"trained_{key}"] = int(trained_counts.get(word, 0))
        glued[f"twin_{key}"] = int(twin_counts.get(word, 0))
    scoped = scope_counts(table)
    held = list(trained.loc[trained["verdict"] == "holds", ["claim", "model"]].itertuples(index=False))
    glued |= {
        "n_twin_verdicts": int(len(twins)),
        "largest_run_m": float(trained["parameters"].max()) / 1e6,
        "smallest_run_m": float(trained["parameters"].min()) / 1e6,
        "scope_in_range": scope_sentence(scoped, [verdict.IN_RANGE, verdict.ANY_SIZE]),
        "scope_below": scope_sentence(scoped, [verdict.BELOW_RANGE]),
        "scope_other": scope_sentence(scoped, [verdict.OTHER_KIND]),
        "n_in_range": int(scoped.loc[verdict.IN_RANGE].sum()),
        "n_weighed_by_power": int(
            trained["reason"].str.contains("no evidence of absence", regex=False).sum()
        ),
        "holds_list": "; ".join(f"{claim} ({model})" for claim, model in held) or "none",
        "holds_titles": "; ".join(f"{verdict.CLAIM_TITLES[claim]}, {model}" for claim, model in held)
        or "none",
    }
    return glued


def first_screen(
    table: pd.DataFrame, gemma: Capture, landmarks: DepthLandmarks, end_to_end: pd.DataFrame
) -> dict:
    """The numbers of chapter 8's first screen: how far below the paper's range the largest run is
    (``below_factor``), where Gemma 3's raw ``m`` (``Capture.omega_mean``, the paper's statistic) first reaches the
    solid level at its width (``gemma_cross_gamma``, ``gemma_cross_m``, ``gemma_solid``; NaN where it never does),
    its cleaned row's highest ``m`` (``gemma_clean_m``), its massive-activation onset (``gemma_onset``) and whether
    that onset is the depth where raw ``m`` rises most (``gemma_onset_words``, from ``landmarks.raw_step``), and the end-to-end calibration's
    cells (``e2e_cells_met`` of ``e2e_cells``, ``e2e_n`` cases each: ``planted_calibration.load_record(...).table``)
    and its learned-basis row: the share of planted atom codes it finds (``e2e_lb_found``) and the largest Wilson
    upper bound of its false holds on the families without one (``e2e_lb_false_high``)."""
    import numpy as np

    trained = table[table["run"].isin(("trained", "results file"))]
    largest = float(trained["parameters"].max())
    m, gamma = gemma.omega_mean(), np.asarray(gemma.gamma)
    solid = verdict.solid_threshold(gemma.d_model)
    interior = np.arange(transition.SKIP[0], len(m) - transition.SKIP[1])
    crossing = interior[m[interior] >= solid]
    first = int(crossing[0]) if len(crossing) else None
    step = (
        landmarks.raw_step
    )  # the largest rise of raw m (landmarks.raw_step), as the massive-step row reads it
    onset = next((g for name, g, _ in landmarks.found() if name == "massive onset"), float("nan"))
    if not np.isfinite(onset):
        onset_words = "no onset found"
    elif abs(onset - step.gamma) <= verdict.LANDMARK_TOLERANCE:
        onset_words = f"the depth where raw m rises most, by {step.size:+.3f}"
    else:
        onset_words = f"apart from the depth where raw m rises most, gamma = {step.gamma:.2f}"
    cleaned = trained[(trained["claim"] == "stays_liquid_cleaned") & (trained["model"] == "gemma3-270m")]
    return {
        "below_factor": verdict.SMALL_MODEL / largest,
        "gemma_cross_gamma": float(gamma[first]) if first is not None else float("nan"),
        "gemma_cross_m": float(m[first]) if first is not None else float("nan"),
        "gemma_solid": solid,
        "gemma_clean_m": float(cleaned["value"].iloc[0]) if len(cleaned) else float("nan"),
        "gemma_onset": float(onset),
        "gemma_onset_words": onset_words,
        **calibrated_cells(end_to_end),
        "e2e_n": int(end_to_end["n"].min()),
        **learned_cells(end_to_end),
    }
