"""ladder.clustered: inference across architectures x seeds, checked on planted ladders whose answer is known,
including the nuisance the module exists for (models of one architecture alike in both capability and diagnostic)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from latentbook.errors import InvalidInputError
from latentbook.ladder import clustered
from latentbook.ladder.rank_correlation import partial_spearman_ci

ARCHITECTURES, SEEDS = 6, 3
LABELS = np.repeat([f"a{i}" for i in range(ARCHITECTURES)], SEEDS)


def planted_ladder(seed: int, within: float = 0.0, shared: float = 2.0):
    """Capability ``x`` and a diagnostic ``y`` over 6 architectures x 3 seeds. Both grow with size (one per
    architecture) and share an architecture effect that size does not explain (``shared``); within an architecture,
    ``y`` follows ``x`` with slope ``within`` (0: the diagnostic says nothing about which seed is more capable)."""
    rng = np.random.default_rng(seed)
    size = np.repeat(np.arange(ARCHITECTURES, dtype=float), SEEDS)
    effect = np.repeat(rng.normal(size=ARCHITECTURES), SEEDS) * shared
    noise_x = rng.normal(size=len(size))
    x = size + effect + noise_x
    y = size + effect + within * noise_x + rng.normal(size=len(size))
    return x, y, size


def test_within_permutations_enumerate_every_order_inside_clusters():
    perms, exact = clustered.within_permutations(LABELS)
    assert exact and perms.shape == (math.factorial(SEEDS) ** ARCHITECTURES, len(LABELS))
    assert len({tuple(row) for row in perms}) == len(perms)
    np.testing.assert_array_equal(perms[0], np.arange(len(LABELS)))
    np.testing.assert_array_equal(LABELS[perms], np.broadcast_to(LABELS, perms.shape))


def test_within_permutations_draw_at_random_beyond_the_exact_limit():
    labels = np.repeat(["a", "b"], 9)  # 9!^2 orders
    perms, exact = clustered.within_permutations(labels, n_random=500, seed=1)
    assert not exact and perms.shape == (501, 18)
    np.testing.assert_array_equal(perms[0], np.arange(18))
    np.testing.assert_array_equal(labels[perms], np.broadcast_to(labels, perms.shape))
    assert len({tuple(row) for row in perms[1:]}) > 490


def test_shared_architecture_effects_fool_the_pooled_test_not_the_clustered_one():
    """The architectures' shared effect makes capability and the diagnostic correlate beyond size across models;
    within an architecture they do not. A permutation over all 18 models calls that significant in most ladders;
    the within-architecture permutation keeps its 5 % level."""
    n = 40
    pooled = within = 0
    for seed in range(n):
        x, y, size = planted_ladder(seed, within=0.0)
        pooled += partial_spearman_ci(x, y, size, n_boot=50, seed=seed).p_value < 0.05
        within += clustered.clustered_partial(x, y, size, LABELS, n_boot=50, seed=seed).p_within < 0.05
    assert pooled / n > 0.4
    assert within / n <= 0.12


def test_a_diagnostic_that_orders_the_seeds_is_found_within_architectures():
    found = [
        clustered.clustered_partial(x, y, size, LABELS, n_boot=50, seed=seed)
        for seed in range(10)
        for x, y, size in [planted_ladder(seed, within=3.0, shared=0.5)]
    ]
    assert np.mean([r.p_within < 0.05 for r in found]) >= 0.8
    assert np.median([r.rho_within for r in found]) > 0.6


def test_an_extra_control_removes_what_the_diagnostic_owes_to_it():
    """``y`` follows a control that also drives capability: given size alone the partial rho is large, given the
    control too it is near 0."""
    rng = np.random.default_rng(3)
    size = np.repeat(np.arange(ARCHITECTURES, dtype=float), SEEDS)
    control = rng.normal(size=len(size))
    x = size + 3 * control + 0.3 * rng.normal(size=len(size))
    y = 3 * control + 0.3 * rng.normal(size=len(size))
    alone = clustered.clustered_partial(x, y, size, LABELS, n_boot=200)
    both = clustered.clustered_partial(x, y, np.column_stack([size, control]), LABELS, n_boot=200)
    assert alone.rho > 0.7 and alone.p_within < 0.01
    assert abs(both.rho) < 0.3 and both.p_within > 0.05


def test_interval_contains_its_estimate_and_lies_in_minus_one_to_one():
    for seed in range(5):
        x, y, size = planted_ladder(seed, within=1.0)
        r = clustered.clustered_partial(x, y, size, LABELS, n_boot=300, seed=seed)
        assert -1 <= r.ci[0] <= r.rho <= r.ci[1] <= 1


def test_cluster_resamples_are_every_draw_of_the_clusters_as_multisets_with_their_counts():
    from collections import Counter
    from itertools import product

    resamples, weights, exact = clustered.cluster_resamples(4)
    drawn = Counter(tuple(sorted(row)) for row in product(range(4), repeat=4))  # all 256 ordered draws
    assert exact and dict(zip(resamples, weights.tolist())) == dict(drawn)
    assert len(resamples) == math.comb(7, 4) and weights.sum() == 4**4
    many, weights, exact = clustered.cluster_resamples(9, n_boot=300, seed=1)  # C(17, 9) = 24310: drawn
    assert not exact and len(many) == 300 and set(weights.tolist()) == {1}


def test_exact_interval_is_the_percentile_of_every_draw_and_ignores_the_models_order():
    """Four architectures of two seeds: the interval equals the widened percentile interval of the statistic over
    all 4**4 ordered draws of whole architectures, each computed on its own; shuffling the models leaves it as is
    (a bootstrap drawn at random in the order the architectures first appear does not)."""
    from itertools import product

    from scipy.stats import rankdata

    from latentbook.analysis.resampling import widened_interval

    labels = np.repeat(["b", "a", "d", "c"], 2)
    rng = np.random.default_rng(3)
    size = np.repeat(rng.normal(size=4), 2)
    x, y = size + rng.normal(size=8), size + rng.normal(size=8)
    r = clustered.clustered_partial(x, y, size, labels, min_clusters=3)
    members = [np.flatnonzero(labels == name) for name in "abcd"]
    draws = []
    for row in product(range(4), repeat=4):
        if len(set(row)) >= 3:
            i = np.concatenate([members[k] for k in row])
            ranks = [rankdata(v[i])[None] for v in (x, y, size)]
            draws.append(clustered._partial_given(ranks[0], ranks[1], ranks[2][..., None])[0])
    draws = np.array(draws)
    assert r.exact_interval
    assert np.allclose(r.ci, widened_interval(draws[np.isfinite(draws)], r.rho, 0.95), atol=1e-12)
    order = rng.permutation(8)
    again = clustered.clustered_partial(x[order], y[order], size[order], labels[order], min_clusters=3)
    assert np.allclose(again.ci, r.ci, rtol=0, atol=1e-12) and again.rho == pytest.approx(r.rho, abs=1e-12)


def test_a_drawn_interval_ignores_the_models_order_too():
    """Nine architectures (C(17, 9) resamples: drawn at random): the clusters are drawn by name, not in the
    order the models come in, so shuffling the models gives the same interval."""
    labels = np.repeat([f"a{i}" for i in range(9)], 2)
    rng = np.random.default_rng(4)
    size = np.repeat(rng.normal(size=9), 2)
    x, y = size + rng.normal(size=18), size + rng.normal(size=18)
    r = clustered.clustered_partial(x, y, size, labels, n_boot=200)
    order = rng.permutation(18)
    again = clustered.clustered_partial(x[order], y[order], size[order], labels[order], n_boot=200)
    assert not r.exact_interval and np.allclose(again.ci, r.ci, rtol=0, atol=1e-12)


def test_clustered_verdict_words():
    x, y, size = planted_ladder(0, within=4.0, shared=0.3)
    r = clustered.clustered_partial(x, y, size, LABELS, n_boot=400)
    assert clustered.clustered_verdict(r, r.p_within, 1, +1, "log parameters")[0] == "predicts capability"
    assert clustered.clustered_verdict(r, r.p_within, 1, -1, "log parameters")[0] == "does not"
    word, why = clustered.clustered_verdict(r, 0.2, 5, +1, "log parameters")
    assert word == "inconclusive" and "Holm-adjusted p is not below" in why
    x, y, size = planted_ladder(1, within=0.0)
    r = clustered.clustered_partial(x, y, size, LABELS, n_boot=400)
    assert clustered.clustered_verdict(r, r.p_within, 1, +1, "log parameters")[0] != "predicts capability"


def test_bad_input_names_the_fix():
    x, y, size = planted_ladder(0)
    with pytest.raises(InvalidInputError, match="at least 4"):
        clustered.clustered_partial(x[:9], y[:9], size[:9], LABELS[:9])
    with pytest.raises(InvalidInputError, match="one value per model"):
        clustered.clustered_partial(x, y[:-1], size, LABELS)
    with pytest.raises(InvalidInputError, match="seeded ladder model"):
        clustered.architecture_of("l4-d64")


def test_the_trained_ladder_gets_a_clustered_entry_for_every_diagnostic():
    from latentbook.ladder.report import DIAGNOSTICS, correlations, load_measurements
    from latentbook.ladder.store import REPO_LADDER_V2

    m = load_measurements(REPO_LADDER_V2 / "measurements.json")
    out = correlations(m)
    assert set(out) == set(DIAGNOSTICS)
    for name, entry in out.items():
        k = entry["clustered"]
        assert k["n_clusters"] == 6 and k["n"] == 18 and k["exact"] and k["exact_interval"]
        assert ("positive control" in k["controls"]) == (name == "stability")
        assert k["p_holm"] >= k["p_within"]
