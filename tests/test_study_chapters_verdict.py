"""Chapter 8's counts of the verdict table (``study.chapters.verdict_tables``) and its heatmap, on a table written here."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402

from latentbook.analysis import verdict  # noqa: E402
from latentbook.study.chapters.verdict_tables import count_glue  # noqa: E402
from latentbook.view import plots  # noqa: E402


def _row(claim, model, run, verdict_word, parameters, scope):
    return {
        "claim": claim,
        "model": model,
        "run": run,
        "verdict": verdict_word,
        "parameters": parameters,
        "scope": scope,
    }


TABLE = pd.DataFrame(
    [
        _row("omega_jump", "small", "trained", "does not hold", 135e6, verdict.BELOW_RANGE),
        _row("attention_cooling", "small", "trained", "holds", 135e6, verdict.ANY_SIZE),
        _row("omega_jump", "big", "results file", "holds", 7e9, verdict.IN_RANGE),
        _row("stays_liquid", "big", "results file", "inconclusive", 7e9, verdict.ANY_SIZE),
        _row(
            "omega_jump", "random:small", "null: random weights", "does not hold", 135e6, verdict.BELOW_RANGE
        ),
        _row(
            "attention_cooling",
            "random:small",
            "null: random weights",
            "not testable here",
            135e6,
            verdict.ANY_SIZE,
        ),
        _row("scaling", "ladder", "trained", "holds", 1e6, verdict.ANY_SIZE),  # the ladder's: not counted
        _row("omega_jump", "small (shuffled)", "null: shuffled words", "holds", 135e6, verdict.BELOW_RANGE),
    ]
)


def test_count_glue_counts_trained_runs_and_twins_apart_and_leaves_out_scaling_and_other_nulls():
    glued = count_glue(TABLE)
    assert (
        glued["n_claims_measured"] == 3 and glued["n_trained_runs"] == 2 and glued["n_trained_verdicts"] == 4
    )
    assert (
        glued["trained_holds"],
        glued["trained_not"],
        glued["trained_inconclusive"],
        glued["trained_nt"],
    ) == (
        2,
        1,
        1,
        0,
    )
    assert (glued["twin_holds"], glued["twin_not"], glued["twin_nt"], glued["n_twin_verdicts"]) == (
        0,
        1,
        1,
        2,
    )
    assert glued["largest_run_m"] == 7000.0 and glued["smallest_run_m"] == 135.0
    assert glued["holds_list"] == "attention_cooling (small); omega_jump (big)"
    # by scope: a small model's large-model claim is never counted in range (the ladder's scaling row is)
    assert glued["scope_in_range"] == "3 holds, 1 inconclusive"
    assert glued["scope_below"] == "1 does not hold"


def test_count_glue_says_none_when_nothing_holds():
    glued = count_glue(TABLE[TABLE["verdict"] != "holds"])
    assert glued["holds_list"] == "none" and glued["trained_holds"] == 0


def test_the_heatmap_labels_each_cell_by_its_verdict_and_a_disagreeing_cell_mixed():
    glance = pd.DataFrame(
        {
            "small": ["holds", "does not hold"],
            "big": ["mixed: 1 holds, 1 does not hold", "not testable here"],
        },
        index=["omega_jump", "stays_liquid"],
    )
    fig = plots.verdict_heatmap(glance)
    texts = sorted(t.get_text() for t in fig.axes[0].texts)
    assert texts == ["holds", "mixed", "n/t", "no"]
    matplotlib.pyplot.close(fig)
