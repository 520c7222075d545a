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
    expected = lb.spectra.spike_location(1.0 + mix.signal_eigenvalue, 1.0, 100 / 4000)
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
