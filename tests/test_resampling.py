"""The shared resampling helpers: prompt-bootstrap weights, intervals from draws, and the Wilson interval."""

from __future__ import annotations

import math

import numpy as np
import pytest

from latentbook.analysis import resampling
from latentbook.errors import InvalidInputError


def test_cluster_weights_are_the_multinomial_draw_of_the_same_seed():
    weights = resampling.cluster_weights(np.random.default_rng(7), 9, 200)
    expected = np.random.default_rng(7).multinomial(9, np.full(9, 1 / 9), size=200)
    assert weights.shape == (200, 9) and weights.dtype == np.float64
    np.testing.assert_array_equal(weights, expected)
    np.testing.assert_array_equal(weights.sum(1), 9.0)  # every draw holds n_groups groups
    assert np.all(weights == np.round(weights)) and weights.min() >= 0


def test_cluster_weights_consume_the_generator_as_one_multinomial_call():
    """What a caller draws next from the same generator is unchanged: the book's later numbers stay."""
    rng, reference = np.random.default_rng(3), np.random.default_rng(3)
    resampling.cluster_weights(rng, 5, 40)
    reference.multinomial(5, np.full(5, 1 / 5), size=40)
    assert rng.random() == reference.random()


def test_percentile_interval_of_known_draws():
    # 0..10 at level 0.9: the 5th and 95th percentiles, by linear interpolation at ranks 0.5 and 9.5
    np.testing.assert_allclose(resampling.percentile_interval(np.arange(11.0), 0.9), [0.5, 9.5])
    columns = np.column_stack([np.arange(11.0), 10 * np.arange(11.0)])
    np.testing.assert_allclose(
        resampling.percentile_interval(columns, 0.9, axis=0), [[0.5, 5.0], [9.5, 95.0]]
    )


def test_widened_interval_contains_the_estimate_and_is_nan_without_finite_draws():
    draws = np.arange(11.0)
    assert resampling.widened_interval(draws, 5.0, 0.9) == pytest.approx((0.5, 9.5))
    assert resampling.widened_interval(draws, 12.0, 0.9) == pytest.approx((0.5, 12.0))
    assert resampling.widened_interval(draws, -1.0, 0.9) == pytest.approx((-1.0, 9.5))
    for bad_draws, estimate in ((draws, math.nan), (np.empty(0), 1.0), (np.array([1.0, math.nan]), 1.0)):
        assert all(math.isnan(v) for v in resampling.widened_interval(bad_draws, estimate, 0.9))


def test_recentred_interval_moves_by_the_median_bias_and_respects_the_floor():
    draws = np.arange(11.0) + 3  # median 8, 5th and 95th percentiles 3.5 and 12.5
    assert resampling.recentred_interval(2.0, draws, 0.9) == pytest.approx((2.0 + 3.5 - 8, 2.0 + 12.5 - 8))
    assert resampling.recentred_interval(2.0, draws, 0.9, floor=0.0) == pytest.approx((0.0, 6.5))
    rng = np.random.default_rng(0)
    for _ in range(200):
        draws = rng.lognormal(rng.normal(0, 2), rng.uniform(0.1, 2), size=int(rng.integers(5, 60)))
        point = float(rng.lognormal(0, 3))
        low, high = resampling.recentred_interval(point, draws, 0.95, floor=0.0)
        assert 0.0 <= low <= point <= high


def test_wilson_interval_of_7_in_20_by_hand():
    z, n, p = 1.959964, 20, 7 / 20
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)  # (0.35 + 0.0960) / 1.1921 = 0.3742
    half = z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)  # 0.1930
    low, high = resampling.wilson_interval(p, n)
    assert (low, high) == pytest.approx((centre - half, centre + half), rel=1e-12)
    assert (low, high) == pytest.approx((0.1812, 0.5671), abs=1e-4)  # the published 95 % Wilson interval
    assert resampling.wilson_interval(p, n, resampling.Z95) == pytest.approx((low, high), abs=1e-8)
    wider = resampling.wilson_interval(p, n, z=2.575829)  # 99 %: wider on both sides
    assert wider[0] < low and wider[1] > high


@pytest.mark.parametrize("n", [1, 2, 7, 20, 333])
def test_wilson_interval_edges_stay_inside_0_1_and_contain_p(n):
    assert resampling.wilson_interval(0.0, n)[0] == 0.0
    assert 0.0 < resampling.wilson_interval(0.0, n)[1] <= 1.0
    assert resampling.wilson_interval(1.0, n)[1] == 1.0
    assert 0.0 <= resampling.wilson_interval(1.0, n)[0] < 1.0
    for hits in range(n + 1):
        low, high = resampling.wilson_interval(hits / n, n, resampling.Z95)
        assert 0.0 <= low <= hits / n <= high <= 1.0
        mirror = resampling.wilson_interval(1 - hits / n, n, resampling.Z95)
        assert (low, high) == pytest.approx((1 - mirror[1], 1 - mirror[0]), abs=1e-12)


def test_wilson_interval_refuses_no_units_and_a_p_outside_0_1():
    for p, n in ((0.5, 0), (-0.1, 10), (1.1, 10)):
        with pytest.raises(InvalidInputError, match="Need n >= 1"):
            resampling.wilson_interval(p, n)


def test_token_weights_give_every_token_its_prompts_draw_count():
    from latentbook.analysis.resampling import cluster_weights, token_weights

    groups = np.array(["b", "a", "b", "c", "a", "b"])
    weights = token_weights(np.random.default_rng(3), groups, 50)
    assert weights.shape == (50, 6)
    assert np.array_equal(weights[:, 0], weights[:, 2]) and np.array_equal(weights[:, 1], weights[:, 4])
    by_prompt = cluster_weights(np.random.default_rng(3), 3, 50)  # the same draws: a, b, c in sorted order
    assert np.array_equal(weights[:, [1, 0, 3]], by_prompt)


def test_widened_intervals_hold_their_estimates_column_by_column():
    from latentbook.analysis.resampling import widened_intervals

    draws = np.tile(np.arange(101.0)[:, None], (1, 3))  # percentiles 2.5 and 97.5 of 0..100
    intervals = widened_intervals(draws, np.array([50.0, -4.0, 120.0]), 0.95)
    assert np.allclose(intervals, [[2.5, 97.5], [-4.0, 97.5], [2.5, 120.0]])
