"""Chapter 8's counts of the verdict table, glued into its summary paragraph (``glue_frame("vd", ...)``).

Usage: ``glue_frame("vd", count_glue(table))`` with ``table`` from ``study.verdict_table.runs_table``, and
``glue_frame("vd", first_screen(table, gemma_capture, gemma_landmarks, end_to_end_table))`` for its first screen.
Introduced in: chapter 8.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...analysis import transition, verdict
from ..verdict_table import scope_counts, scope_sentence

if TYPE_CHECKING:
    import pandas as pd

    from ...capturing.results import Capture
    from ..run_landmarks import DepthLandmarks

MEASURED_RUNS = ("trained", "null: random weights", "results file")  # the runs the summary counts
COUNTED = (  # verdict -> the glue name's word
    ("holds", "holds"),
    ("uninformative", "uninformative"),
    ("does not hold", "not"),
    ("inconclusive", "inconclusive"),
    ("not testable here", "nt"),
)


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
    cells (``e2e_cells_met`` of ``e2e_cells``, ``e2e_n`` cases each: ``planted_calibration.load_record(...).table``)."""
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
        "e2e_cells": int(len(end_to_end)),
        "e2e_cells_met": int(end_to_end["meets"].sum()),
        "e2e_n": int(end_to_end["n"].min()),
    }
