"""Chapter 6's tables and glued numbers (``study.chapters.mixtures_tables``), on synthetic mixtures and hand-made TCO
scores: every value checked against Theorem 6.3, the mixture's planted signal or a hand computation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbook.analysis import tco, verdict
from latentbook.analysis.classes import Separability
from latentbook.analysis.tco import Rate, TCOScores
from latentbook.study.chapters import glue_keys
from latentbook.study.chapters import mixtures_tables as tables


def _scores(control, control_ci, stability, bag, first, n=40, best=0.9) -> TCOScores:
    """TCO scores with the given control, stability and baselines (k-way numbers offset so each is its own)."""
    rate = lambda a, ci=(0.0, 1.0): Rate(a, ci, n)  # noqa: E731
    return TCOScores(
        control=rate(control, control_ci),
        stability=rate(stability, (stability - 0.1, stability + 0.1)),
        control_bag=rate(bag),
        control_first=rate(first),
        stability_bag=rate(0.0),
        stability_first=rate(0.0),
        control_kway=rate(control / 2),
        stability_kway=rate(0.0),
        control_kway_bag=rate(bag / 2),
        control_kway_first=rate(0.0),
        depths=(5, 6),
        best_depth_control=best,
    )


def test_label_key():
    assert tables.label_key("smollm2-135m") == "smollm2"
    assert tables.label_key("random:gemma3-270m") == "random_gemma3"


def test_spike_table_finds_the_planted_spikes_within_the_bound():
    n, d = 1000, 40
    spikes = tables.spike_table(n, d, np.array([2, 4]), [0.5, 8.0])
    assert list(spikes.columns) == ["separation", "k", "spikes", "bound k-1", "theta", "above BBP"]
    assert spikes[["separation", "k"]].values.tolist() == [[0.5, 2], [0.5, 4], [8.0, 2], [8.0, 4]]
    assert (spikes["bound k-1"] == spikes["k"] - 1).all()
    theta = spikes["separation"] ** 2 / (2 * spikes["k"])  # the excess eigenvalue s^2 / 2k over sigma2
    np.testing.assert_allclose(spikes["theta"], theta)
    assert (spikes["above BBP"] == (theta > np.sqrt(d / n))).all()
    strong = spikes[spikes["separation"] == 8.0]
    assert (strong["spikes"] == strong["bound k-1"]).all()  # well-separated prototypes: exactly k - 1
    assert (spikes["spikes"] <= spikes["bound k-1"]).all()


def test_spike_glue_reads_the_strong_and_weak_rows():
    spikes = pd.DataFrame(
        {
            "separation": [1.0, 1.0, 4.0, 4.0, 4.0],
            "k": [2, 3, 2, 3, 4],
            "spikes": [0, 1, 1, 2, 2],
            "bound k-1": [1, 2, 1, 2, 3],
            "theta": [1.25, 1.17, 5.0, 3.7, 3.0],
        }
    )
    assert tables.spike_glue(spikes, n=400, d=100) == {
        "max_excess": 0,
        "strong_exact": 2,
        "strong_n": 3,
        "weak_max": 1,
        "weak_theta_max": 1.25,
        "bbp": 0.5,
    }


def test_query_glue_reads_each_models_best_depth_and_counts_those_above_the_bag():
    accuracy = {
        "smollm2-135m": [0.2, 0.6, 0.4],  # best at the middle depth, two depths above the band
        "random:smollm2-135m": [0.5, 0.3, 0.3],  # the bag's own accuracy is not above it
        "gemma3-270m": [0.3, 0.35],  # two depths: its own gamma grid
        "random:gemma3-270m": [0.1, 0.7],
    }
    separation = {k: Separability(np.ones(len(v)), np.array(v), 0.25) for k, v in accuracy.items()}
    gammas = {k: np.linspace(0, 1, len(v)) for k, v in accuracy.items()}
    glued = tables.query_glue(separation, gammas, 0.34, 0.5, ["smollm2-135m", "gemma3-270m"])
    assert glued["query_best_smollm2"] == 0.6 and glued["query_best_gamma_smollm2"] == 0.5
    assert glued["query_above_smollm2"] == 2 and glued["query_depths_smollm2"] == 3
    assert glued["query_best_random_smollm2"] == 0.5 and glued["query_best_gamma_random_smollm2"] == 0
    assert glued["query_above_gemma3"] == 1 and glued["query_depths_gemma3"] == 2
    assert glued["query_best_gamma_random_gemma3"] == 1.0
    assert glued["n_trained_above_bag"] == 1  # smollm2 (0.6), not gemma3 (0.35)
    assert glued["n_twins_above_bag"] == 1  # gemma3's twin (0.7), not smollm2's (0.5, a tie)
    assert len(glued) == 4 * 4 + 2


def test_tco_table_has_one_row_per_model_with_its_own_numbers():
    scores = {
        "a-1": _scores(0.9, (0.8, 0.95), 0.7, 0.6, 0.55, best=0.97),
        "random:a-1": _scores(0.5, (0.4, 0.6), 0.5, 0.5, 0.5),
    }
    table = tables.tco_table(scores)
    assert list(table.index) == ["a-1", "random:a-1"]
    row = table.loc["a-1"]
    assert row["control"] == 0.9 and row["control CI low"] == 0.8 and row["control CI high"] == 0.95
    assert row["bag of values"] == 0.6 and row["first value"] == 0.55
    assert row["stability"] == 0.7 and row["stability CI low"] == pytest.approx(0.6)
    assert row["stability CI high"] == pytest.approx(0.8)
    assert row["k-way control"] == 0.45 and row["k-way bag"] == 0.3
    assert row["best single depth (control)"] == 0.97
    assert table.loc["random:a-1", "control"] == 0.5


def test_tco_glue_counts_the_models_that_clear_the_bar():
    bar = 0.6  # max(bag 0.6, first 0.55)
    scores = {
        "smollm2-135m": _scores(0.9, (bar + verdict.TCO_MARGIN + 0.01, 0.95), 0.7, 0.6, 0.55, n=48),
        "random:smollm2-135m": _scores(0.7, (bar + verdict.TCO_MARGIN - 0.01, 0.8), 0.5, 0.6, 0.55),
        "gemma3-270m": _scores(0.9, (0.9, 0.95), 0.7, 0.55, 0.85),  # first value 0.85: the bar is 0.85
        "random:gemma3-270m": _scores(0.9, (0.7, 0.95), 0.7, 0.6, 0.55),
    }
    glued = tables.tco_glue(scores, ["smollm2-135m", "gemma3-270m"])
    assert glued["tco_n_pass"] == 1 and glued["tco_n_twins_pass"] == 1
    assert glued["tco_control_smollm2"] == 0.9
    assert glued["tco_control_random_smollm2_lo"] == pytest.approx(bar + verdict.TCO_MARGIN - 0.01)
    assert glued["tco_control_gemma3_hi"] == 0.95
    assert glued["tco_stability_random_gemma3"] == 0.7
    assert glued["tco_first_smollm2"] == 0.55 and glued["tco_bag_two_way"] == 0.6
    assert glued["tco_n_programs"] == 48
    assert glued["tco_margin"] == verdict.TCO_MARGIN
    assert glued["two_way_chance"] == tco.TWO_WAY_CHANCE and glued["tco_folds"] == tco.N_FOLDS
    assert set(glue_keys("mx", glued)) >= {"mx_tco_n_pass", "mx_tco_control_random_gemma3_hi"}
