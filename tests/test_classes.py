"""Theorem 6.3 spikes, class separability and class stability (TCOs) on planted mixtures."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import latentbook as lb
from latentbook.analysis import classes, synthetic


@pytest.mark.parametrize("k", [2, 3, 5, 8])
def test_well_separated_mixture_has_exactly_k_minus_1_spikes(k):
    mix = synthetic.mixture(n=4000, d=100, k=k, separation=6.0, seed=k)
    found = classes.mixture_spikes(mix.x, labels=mix.labels)
    assert found.n_spikes == k - 1 and found.bound == k - 1 and found.within_bound
    # the spikes sit where a population eigenvalue sigma2 + r^2/k puts them (BBP location)
    expected = lb.mp_law.spike_location(1.0 + mix.signal_eigenvalue, 1.0, 100 / 4000)
    np.testing.assert_allclose(found.spikes, expected, rtol=0.1)


def test_single_gaussian_has_no_spike_and_k_from_n_classes():
    found = classes.mixture_spikes(synthetic.gaussian(4000, 100, seed=1), n_classes=1)
    assert found.n_spikes == 0 and found.within_bound


def test_fisher_ratio_matches_its_population_value_and_grows_with_separation():
    k, d = 4, 20
    ratios = []
    for sep in (1.0, 2.0, 4.0):
        mix = synthetic.mixture(n=40000, d=d, k=k, separation=sep, seed=2)
        ratios.append(classes.fisher_ratio(mix.x, mix.labels))
        expected = (k - 1) * sep**2 / (2 * k * d)
        assert abs(ratios[-1] - expected) < 0.05 * expected + (k - 1) / 40000 * 2
    assert ratios[0] < ratios[1] < ratios[2]


def test_nearest_centroid_accuracy_matches_the_bayes_rate_of_two_classes():
    for sep in (1.0, 2.0, 3.0):
        mix = synthetic.mixture(n=6000, d=10, k=2, separation=sep, seed=3)
        accuracy = classes.nearest_centroid_accuracy(mix.x, mix.labels)
        assert abs(accuracy - stats.norm.cdf(sep / 2)) < 0.02


def test_separability_per_depth_rises_with_a_rising_separation():
    traj = synthetic.class_trajectories(300, 1, 4, d=16, k=3, separation=[0.0, 1.0, 2.5, 5.0], seed=4)
    sep = classes.separability(traj.states, traj.labels, groups=traj.items)
    assert np.all(np.diff(sep.fisher) > 0) and np.all(np.diff(sep.accuracy) > 0)
    assert abs(sep.accuracy[0] - 1 / 3) < 0.07 and sep.accuracy[-1] > 0.97
    assert sep.chance == pytest.approx(1 / 3)


def test_separability_profile_follows_the_planted_separation_step_by_step():
    states = synthetic.class_trajectories(n_items=60, n_steps=2, n_depths=3, d=32, k=3, separation=[0, 2, 10])
    profile = classes.separability_profile(states, step_names=("value", "query"))
    assert profile.accuracy.shape == (2, 3) and profile.step_names == ("value", "query")
    assert np.all(profile.accuracy[:, 0] < 0.6)  # no separation: near chance (1/3)
    assert np.all(profile.accuracy[:, 2] == 1.0)  # 10 noise units apart: perfect
    assert profile.chance == pytest.approx([1 / 3, 1 / 3], abs=0.02)
    for row, step in zip(profile.accuracy, (0, 1)):  # each row is separability() of that step's tokens
        pick = states.steps == step
        expected = classes.separability(states.states[pick], states.labels[pick], states.items[pick])
        np.testing.assert_array_equal(row, expected.accuracy)
    assert classes.separability_profile(states).step_names == ("step 0", "step 1")


def test_stability_is_one_for_persistent_classes_and_chance_when_shuffled():
    kept = synthetic.class_trajectories(240, 4, 3, d=32, k=4, separation=12.0, persistent=True, seed=5)
    result = classes.class_stability(kept.states, kept.labels, kept.steps, kept.items)
    assert result.accuracy.shape == (4, 3)
    np.testing.assert_array_equal(result.steps, [0, 1, 2, 3])
    assert np.all(result.accuracy == 1.0)

    shuffled = synthetic.class_trajectories(600, 4, 3, d=32, k=4, separation=8.0, persistent=False, seed=6)
    result = classes.class_stability(shuffled.states, shuffled.labels, shuffled.steps, shuffled.items)
    assert np.all(result.accuracy[0] == 1.0)  # step 0 shows the class
    assert np.all(np.abs(result.accuracy[1:] - 0.25) < 0.06)  # later steps: chance
    assert result.chance == pytest.approx(0.25)


def test_fit_at_a_later_step():
    traj = synthetic.class_trajectories(200, 3, 2, d=16, k=2, separation=6.0, persistent=True, seed=7)
    result = classes.class_stability(traj.states, traj.labels, traj.steps, traj.items, fit_step=2)
    assert result.fit_step == 2 and np.all(result.accuracy > 0.99)


def test_folds_never_split_an_item():
    groups = np.repeat(np.arange(10), 3)
    folds = classes.group_folds(groups, 5, seed=0)
    assert all(len(set(folds[groups == g])) == 1 for g in range(10))
    assert sorted(np.bincount(folds)) == [6] * 5


def test_bad_inputs_say_what_to_do():
    with pytest.raises(lb.InvalidInputError, match="two classes"):
        classes.fisher_ratio(np.zeros((5, 3)), np.zeros(5))
    with pytest.raises(lb.InvalidInputError, match="n_classes"):
        classes.mixture_spikes(np.random.default_rng(0).normal(size=(50, 4)))
    with pytest.raises(lb.InvalidInputError, match="n_folds"):
        classes.nearest_centroid_accuracy(np.zeros((4, 2)), [0, 1, 0, 1], n_folds=9)
    with pytest.raises(lb.InvalidInputError, match="fit_step"):
        classes.class_stability(np.zeros((4, 2, 3)), [0, 1, 0, 1], [0, 0, 1, 1], fit_step=5)


# --- identities the docstrings state, on data hard enough that every fold counts (mutation testing, issue #20) --


@pytest.fixture(scope="module")
def overlapping():
    """Three classes 1.5 noise units apart, 2 steps and 3 depths: accuracies well below 1, so a wrong split
    or a wrong centroid shows."""
    return synthetic.class_trajectories(
        120, 2, 3, d=16, k=3, separation=[0.5, 1.5, 2.5], persistent=True, seed=8
    )


def test_separability_is_the_fisher_ratio_and_the_grouped_cross_validated_accuracy(overlapping):
    t = overlapping
    sep = classes.separability(t.states, t.labels, groups=t.items, n_folds=4, seed=3)
    np.testing.assert_allclose(sep.fisher, classes.fisher_ratio(t.states, t.labels), rtol=1e-12)
    want = classes.nearest_centroid_accuracy(t.states, t.labels, groups=t.items, n_folds=4, seed=3)
    np.testing.assert_array_equal(sep.accuracy, want)
    assert not np.array_equal(want, classes.nearest_centroid_accuracy(t.states, t.labels, n_folds=4, seed=3))
    assert not np.array_equal(
        want, classes.nearest_centroid_accuracy(t.states, t.labels, groups=t.items, n_folds=4, seed=0)
    )
    assert np.all(sep.accuracy < 0.95) and np.all(np.diff(sep.fisher) > 0)
    again = classes.separability(t.states, t.labels, groups=t.items, n_folds=4, seed=3)
    np.testing.assert_array_equal(again.accuracy, sep.accuracy)  # the seed fixes the folds
    default = classes.separability(t.states, t.labels, groups=t.items)
    np.testing.assert_array_equal(
        default.accuracy, classes.separability(t.states, t.labels, groups=t.items, n_folds=5, seed=0).accuracy
    )


def test_the_fit_step_row_of_stability_is_the_ordinary_cross_validated_accuracy(overlapping):
    """Cross-fitted by item, the ``fit_step`` row is nearest-centroid accuracy on that step's tokens with folds by
    item; the other rows use centroids of the fit step only (never of the step tested)."""
    t = overlapping
    for fit_step in (0, 1):
        result = classes.class_stability(
            t.states, t.labels, t.steps, t.items, fit_step=fit_step, n_folds=4, seed=2
        )
        at = t.steps == fit_step
        want = classes.nearest_centroid_accuracy(
            t.states[at], t.labels[at], groups=t.items[at], n_folds=4, seed=2
        )
        np.testing.assert_array_equal(result.accuracy[fit_step], want)
        assert np.all(result.accuracy < 0.95)
    default = classes.class_stability(t.states, t.labels, t.steps, t.items)
    np.testing.assert_array_equal(
        default.accuracy,
        classes.class_stability(t.states, t.labels, t.steps, t.items, n_folds=5, seed=0).accuracy,
    )
    # without items every token is its own group: other folds, other numbers, still a valid accuracy
    alone = classes.class_stability(t.states, t.labels, t.steps, n_folds=4, seed=2)
    assert alone.accuracy.shape == (2, 3) and not np.array_equal(alone.accuracy, result.accuracy)


def test_stacked_states_must_be_three_dimensional_and_entries_one_per_token(overlapping):
    t = overlapping
    for bad in (t.states[:, 0], t.states[..., None]):  # (n, d) or (n, depths, d, 1)
        with pytest.raises(
            lb.InvalidInputError, match=r"^Token states must be \(n, d\) or \(n, n_depths, d\)"
        ):
            classes.separability(bad, t.labels)
        with pytest.raises(lb.InvalidInputError, match="Token states must be"):
            classes.class_stability(bad, t.labels, t.steps)
    n = len(t.labels)
    with pytest.raises(
        lb.InvalidInputError,
        match=rf"^labels and steps need one entry per token \({n}\); got \({n},\), \({n - 1},\)\.$",
    ):
        classes.class_stability(t.states, t.labels, t.steps[:-1])


def test_nearest_centroid_is_euclidean_not_the_largest_inner_product():
    """Class 0 near the origin with a few tokens at 1.6, class 1 near 4: every token is nearer its own centroid
    (Euclidean), though the tokens at 1.6 have a larger inner product with class 1's centroid. Accuracy 1, a float
    for (n, d) input."""
    rng = np.random.default_rng(9)
    zero = np.column_stack([rng.normal(0, 0.05, 40), rng.normal(0, 0.05, 40)])
    zero[::8, 0] = 1.6
    one = np.column_stack([rng.normal(4, 0.05, 40), rng.normal(0, 0.05, 40)])
    x, labels = np.vstack([zero, one]), np.repeat([0, 1], 40)
    accuracy = classes.nearest_centroid_accuracy(x, labels)
    assert isinstance(accuracy, float) and accuracy == 1.0
    stacked = classes.nearest_centroid_accuracy(np.stack([x, x[:, ::-1]], axis=1), labels)
    assert stacked.shape == (2,) and stacked[0] == 1.0


def test_mixture_spikes_are_the_mp_fit_of_the_tokens_covariance():
    """The spectrum is that of the biased covariance (1/n) X_c^T X_c, fitted by ``bulk_fit.mp_fit`` with the given
    effective sample size (default n) and alpha; the result carries k, the bound and the fit itself."""
    mix = synthetic.mixture(n=400, d=40, k=3, separation=6.0, seed=10)
    found = classes.mixture_spikes(mix.x, labels=mix.labels, alpha=0.2)
    eig = np.linalg.eigvalsh(np.cov(mix.x, rowvar=False, bias=True))[::-1]
    want = lb.bulk_fit.mp_fit(eig, 400, alpha=0.2)
    assert found.n_classes == 3 and found.bound == 2 and found.fit.n_spikes == found.n_spikes == want.n_spikes
    np.testing.assert_allclose(found.spikes, want.spikes, rtol=1e-12)
    np.testing.assert_allclose(found.spikes, eig[: found.n_spikes], rtol=1e-12)  # biased: divided by n
    fewer = classes.mixture_spikes(mix.x, n_classes=3, n_samples=60.0, alpha=0.2)
    assert fewer.n_spikes == lb.bulk_fit.mp_fit(eig, 60.0, alpha=0.2).n_spikes
    assert fewer.fit.sigma2 == pytest.approx(lb.bulk_fit.mp_fit(eig, 60.0, alpha=0.2).sigma2, rel=1e-12)
    assert fewer.fit.sigma2 != pytest.approx(found.fit.sigma2, rel=1e-6)


def test_fisher_ratio_per_depth_is_each_depths_ratio_in_float64():
    t = synthetic.class_trajectories(60, 1, 3, d=8, k=3, separation=[0.5, 2.0, 4.0], seed=11)
    per_depth = classes.fisher_ratio(t.states, t.labels)
    assert per_depth.shape == (3,)
    for j in range(3):
        single = classes.fisher_ratio(t.states[:, j], t.labels)
        assert isinstance(single, float) and per_depth[j] == pytest.approx(single, rel=1e-12)
    x32 = t.states[:, 1].astype(np.float32)
    assert classes.fisher_ratio(x32, t.labels) == pytest.approx(
        classes.fisher_ratio(x32.astype(np.float64), t.labels), rel=1e-12
    )
    # a hand case: two classes of two points, centres -1 and +1 on one axis, spread 0.5 around them
    x = np.array([[-1.5], [-0.5], [0.5], [1.5]])
    assert classes.fisher_ratio(x, [0, 0, 1, 1]) == pytest.approx(1.0 / 0.25)


def test_folds_by_group_from_two_up_to_one_per_group_drawn_by_the_seed():
    groups = np.repeat(np.arange(6), 2)
    two = classes.group_folds(groups, 2)
    assert sorted(np.bincount(two)) == [6, 6]
    each = classes.group_folds(groups, 6, seed=4)  # leave one group out
    assert sorted(each[::2]) == list(range(6)) and np.array_equal(each[::2], each[1::2])
    draws = {tuple(classes.group_folds(groups, 3, seed=s)) for s in range(6)}
    assert len(draws) > 1  # the seed draws the assignment
    np.testing.assert_array_equal(
        classes.group_folds(groups, 3, seed=5), classes.group_folds(groups, 3, seed=5)
    )
    for bad in (1, 7):
        with pytest.raises(lb.InvalidInputError, match=rf"^n_folds must be in \[2, 6\] .*got {bad}\.$"):
            classes.group_folds(groups, bad)


def test_token_arrays_need_two_tokens_finite_values_and_labels_for_each():
    two = np.array([[0.0, 1.0], [1.0, 0.0]])
    assert classes.fisher_ratio(np.array([[0.0], [1.0], [2.0], [3.0]]), [0, 0, 1, 1]) > 0  # d = 1 is fine
    with np.errstate(divide="ignore"):
        assert np.isinf(classes.fisher_ratio(two, [0, 1]))  # two tokens are enough (no spread within classes)
    with pytest.raises(
        lb.InvalidInputError,
        match=r"^Token states must be \(n, d\) or \(n, n_depths, d\) with n >= 2; got \(1, 2\)\.$",
    ):
        classes.fisher_ratio(two[:1], [0])
    with pytest.raises(
        lb.InvalidInputError, match=r"^Token states contain NaN or Inf: drop those tokens first\.$"
    ):
        classes.fisher_ratio(np.array([[0.0, np.nan], [1.0, 0.0]]), [0, 1])
    with pytest.raises(
        lb.InvalidInputError, match=r"^labels must have one entry per token \(2\), got shape \(3,\)\.$"
    ):
        classes.fisher_ratio(two, [0, 1, 1])
    with pytest.raises(lb.InvalidInputError, match=r"^Need at least two classes among the labels\.$"):
        classes.fisher_ratio(two, [1, 1])
    with pytest.raises(
        lb.InvalidInputError, match=r"^mixture_spikes takes the tokens of one depth, shape \(n, d\)\.$"
    ):
        classes.mixture_spikes(np.zeros((4, 2, 3)), n_classes=2)
    with pytest.raises(
        lb.InvalidInputError, match=r"^Give labels, or n_classes \(the number of prototypes k >= 1\)\.$"
    ):
        classes.mixture_spikes(np.random.default_rng(0).normal(size=(50, 4)), n_classes=0)


def test_separability_profile_is_the_grouped_accuracy_of_each_steps_tokens():
    """Row ``s``: nearest-centroid accuracy of the tokens of step ``s`` at every depth, folds by item (five, or one
    per item when fewer); chance is the step's most frequent class; rows are named by ``step_names``."""
    t = synthetic.class_trajectories(
        40, 2, 3, d=16, k=4, separation=[0.0, 1.5, 3.0], persistent=False, seed=12
    )
    profile = classes.separability_profile(t, step_names=("first", "second"))
    assert profile.accuracy.shape == (2, 3) and profile.step_names == ("first", "second")
    for s in (0, 1):
        pick = t.steps == s
        want = classes.nearest_centroid_accuracy(t.states[pick], t.labels[pick], t.items[pick], n_folds=5)
        np.testing.assert_array_equal(profile.accuracy[s], want)
        counts = np.unique(t.labels[pick], return_counts=True)[1]
        assert profile.chance[s] == pytest.approx(counts.max() / pick.sum())
    assert classes.separability_profile(t).step_names == ("step 0", "step 1")
    few = synthetic.class_trajectories(4, 1, 2, d=8, k=2, separation=5.0, seed=13)  # 4 items: 4 folds
    want = classes.nearest_centroid_accuracy(few.states, few.labels, few.items, n_folds=4)
    np.testing.assert_array_equal(classes.separability_profile(few).accuracy[0], want)


def test_group_folds_draw_the_partitions_of_sklearns_shuffled_group_kfold():
    """``group_folds`` against ``sklearn.model_selection.GroupKFold``: no group is split (a fold split by token
    fails); every fold holds ``floor(G / k)`` or ``ceil(G / k)`` whole groups, the counts of
    ``GroupKFold(shuffle=True)``, whose default instead balances tokens (largest group first into the lightest
    fold: an assignment by coin, not a permutation, fails); and the partition is uniformly random like
    GroupKFold's shuffled one: over seeds, two given groups share a fold at the same rate (a draw that ignores
    the seed fails). The folds differ draw for draw (numpy's Generator here, the legacy RandomState there)."""
    import inspect

    from sklearn.model_selection import GroupKFold

    if "shuffle" not in inspect.signature(GroupKFold).parameters:
        pytest.skip("GroupKFold(shuffle=True) needs scikit-learn >= 1.6")
    sizes = np.array([9, 1, 1, 2, 7, 3, 3, 1, 5, 2, 4])  # 11 groups of unequal size, 5 folds
    groups = np.repeat(np.arange(len(sizes)) * 3 + 1, sizes)  # labels need not be 0..G-1
    x = np.zeros((len(groups), 1))
    n_folds, together, together_sklearn = 5, 0, 0
    for seed in range(400):
        folds = classes.group_folds(groups, n_folds, seed)
        sklearn_folds = np.empty(len(groups), dtype=int)
        for j, (train, test) in enumerate(
            GroupKFold(n_folds, shuffle=True, random_state=seed).split(x, x, groups)
        ):
            assert not set(groups[train]) & set(groups[test])
            sklearn_folds[test] = j
        for f in (folds, sklearn_folds):
            assert all(len(set(f[groups == g])) == 1 for g in np.unique(groups))
            assert sorted(len(set(groups[f == j])) for j in range(n_folds)) == [2, 2, 2, 2, 3]
        together += folds[0] == folds[-1]
        together_sklearn += sklearn_folds[0] == sklearn_folds[-1]
    # two given groups share a fold with probability sum_j c_j (c_j - 1) / (G (G - 1)) = 10 / 110
    for count in (together, together_sklearn):
        assert count / 400 == pytest.approx(10 / 110, abs=4 * np.sqrt(10 / 110 * 100 / 110 / 400))
    # the unshuffled GroupKFold balances tokens (the 9-token group alone, then 8, 7, 7, 7), ours balances groups
    assert sorted(len(test) for _, test in GroupKFold(n_folds).split(x, x, groups)) == [7, 7, 7, 8, 9]
    assert sorted(np.bincount(classes.group_folds(groups, n_folds, 0))) == [3, 5, 6, 10, 14]
