"""Chapter 8's counts of the verdict table, glued into its summary paragraph (``glue_frame("vd", ...)``).

Usage: ``glue_frame("vd", count_glue(table))`` with ``table`` from ``study.verdict_table.runs_table``.
Introduced in: chapter 8.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...analysis import verdict
from ..verdict_table import scope_counts, scope_sentence

if TYPE_CHECKING:
    import pandas as pd

MEASURED_RUNS = ("trained", "null: random weights", "results file")  # the runs the summary counts
COUNTED = (  # verdict -> the glue name's word
    ("holds", "holds"),
    ("does not hold", "not"),
    ("inconclusive", "inconclusive"),
    ("not testable here", "nt"),
)


def count_glue(table: pd.DataFrame) -> dict[str, object]:
    """The summary's numbers: claims, runs and verdicts of the trained runs (and results files) and of the random
    twins, counted by verdict (``trained_holds``, ``twin_not``, ...; the ladder's ``scaling`` rows left out), the
    largest and smallest run in millions of parameters, the verdicts by scope in words (``scope_in_range``,
    ``scope_below``) and the list of what holds (``holds_list``: "claim (model); ...", or "none")."""
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
    holds = trained.loc[trained["verdict"] == "holds", ["claim", "model"]].itertuples(index=False)
    glued |= {
        "n_twin_verdicts": int(len(twins)),
        "largest_run_m": float(trained["parameters"].max()) / 1e6,
        "smallest_run_m": float(trained["parameters"].min()) / 1e6,
        "scope_in_range": scope_sentence(scoped, [verdict.IN_RANGE, verdict.ANY_SIZE]),
        "scope_below": scope_sentence(scoped, [verdict.BELOW_RANGE]),
        "holds_list": "; ".join(f"{claim} ({model})" for claim, model in holds) or "none",
    }
    return glued
