"""Omega, its reference values, the profile's intervals and the bimodality tests against planted answers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import latentbook as lb
from latentbook.analysis import bimodality, omega, omega_profiles, standardisation, synthetic

# --- Omega and reference values --------------------------------------------------------------------------


def test_omega_on_known_vectors_numpy_and_torch_agree():
    d = 16
    assert lb.omega is omega.omega
    np.testing.assert_allclose(omega.omega(np.eye(d)), 1 - 1 / np.sqrt(d))
    np.testing.assert_allclose(omega.omega(np.array([[3.0, -3.0, 3.0, -3.0]])), 0.0, atol=1e-15)
    assert omega.omega(np.zeros(5)) == 0.0
    sparse = np.zeros(d)
    sparse[[1, 4, 9, 11]] = [2.0, -2.0, 2.0, 2.0]
    assert omega.omega(sparse) == pytest.approx(omega.reference_values(d, k=4)["k_sparse"])
    x = np.random.default_rng(0).standard_normal((3, 7, d))
    values = omega.omega(x)
    assert values.shape == (3, 7) and values.dtype == np.float64
    np.testing.assert_allclose(omega.omega(torch.from_numpy(x)).numpy(), values, rtol=1e-5)
    assert omega.omega(torch.zeros(2, 4)).tolist() == [0.0, 0.0]
    with pytest.raises(lb.errors.InvalidInputError, match="last axis"):
        omega.omega(np.float64(3.0))


def test_gaussian_reference_is_the_exact_finite_d_expectation():
    ref = omega.reference_values(8)
    assert ref["gaussian_limit"] == pytest.approx(1 - np.sqrt(2 / np.pi))
    values = omega.omega(np.random.default_rng(1).standard_normal((200_000, 8)))
    se = values.std() / np.sqrt(len(values))
    assert abs(values.mean() - ref["gaussian"]) < 4 * se
    assert abs(values.mean() - ref["gaussian_limit"]) > 50 * se  # the limit is wrong at d = 8
    assert omega.gaussian_omega(1) == pytest.approx(0.0, abs=1e-12)
    correction = ref["gaussian_limit"] - omega.gaussian_omega(576)  # sqrt(2/pi) / (4d) to leading order
    assert correction == pytest.approx(np.sqrt(2 / np.pi) / (4 * 576), rel=0.01)
    assert ref["one_hot"] == pytest.approx(1 - 1 / np.sqrt(8)) and ref["constant"] == 0.0
    with pytest.raises(lb.errors.InvalidInputError, match="k must"):
        omega.reference_values(8, k=9)


# --- the profile ---------------------------------------------------------------------------------------------


def test_profile_draws_are_prompt_weighted_means_and_the_arms_are_stretched_by_t_over_z():
    """Hand calculation of the documented bootstrap: a draw gives each prompt a multinomial weight (one
    ``cluster_weights`` call on ``default_rng(seed)``), the draw is the weighted token mean
    ``sum_g w_g S_g / sum_g w_g n_g`` (prompts of 1..6 tokens: a plain mean of prompt means differs), and the
    percentile arms at ``level`` are stretched by ``t_{G-1} / z`` around the sample mean."""
    from scipy.stats import norm, t

    from latentbook.analysis import resampling

    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(6), [1, 2, 3, 4, 5, 6]) + 10  # ids need not start at 0
    values = 0.25 + 0.05 * rng.normal(size=(2, len(ids))) + np.array([[0.0], [0.5]])  # inside [0, 1]
    p = omega_profiles.profile(values, ids, n_boot=500, seed=3, level=0.9)
    weights = resampling.cluster_weights(np.random.default_rng(3), 6, 500)
    sums = np.stack([np.bincount(ids - 10, weights=v) for v in values])
    draws = (weights @ sums.T) / (weights @ np.bincount(ids - 10))[:, None]
    np.testing.assert_allclose(p.draws, draws, rtol=1e-12, atol=1e-15)
    m = values.mean(1)
    low, high = np.percentile(draws, [5, 95], axis=0)
    stretch = t.ppf(0.95, 5) / norm.ppf(0.95)  # 2.015 / 1.645: six prompts
    np.testing.assert_allclose(p.low, m - stretch * (m - low), rtol=1e-12)
    np.testing.assert_allclose(p.high, m + stretch * (high - m), rtol=1e-12)
    np.testing.assert_allclose(p.m, m, rtol=1e-12)
    assert p.by == "prompt" and p.n_prompts == 6 and p.n_tokens == 21 and p.level == 0.9
    np.testing.assert_allclose(p.gamma, [0.0, 1.0])
    # by token: every token its own cluster, the t of n - 1 = 20 degrees of freedom
    p = omega_profiles.profile(values, ids, by="token", n_boot=500, seed=3, level=0.9)
    weights = resampling.cluster_weights(np.random.default_rng(3), len(ids), 500)
    draws = weights @ values.T / len(ids)
    np.testing.assert_allclose(p.draws, draws, rtol=1e-12)
    low, high = np.percentile(draws, [5, 95], axis=0)
    stretch = t.ppf(0.95, 20) / norm.ppf(0.95)
    np.testing.assert_allclose(p.low, m - stretch * (m - low), rtol=1e-12)
    np.testing.assert_allclose(p.high, m + stretch * (high - m), rtol=1e-12)
    assert p.by == "token" and p.n_prompts is None
    assert omega_profiles.profile(values, n_boot=100).by == "token"  # no prompt ids: tokens
    # the same seed gives the same draws, another seed others
    np.testing.assert_array_equal(
        omega_profiles.profile(values, ids, seed=4).draws, omega_profiles.profile(values, ids, seed=4).draws
    )
    assert not np.allclose(
        omega_profiles.profile(values, ids, seed=4).draws, omega_profiles.profile(values, ids, seed=5).draws
    )


def test_profile_refuses_what_it_cannot_resample():
    values = np.random.default_rng(0).normal(size=(3, 10))
    ids = np.repeat(np.arange(5), 2)
    for kwargs, match in (
        ({"by": "prompts"}, "by must be"),
        ({"level": 0.5}, "0.5 < level < 1"),
        ({"level": 1.0}, "0.5 < level < 1"),
        ({"n_boot": 99}, "n_boot >= 100"),
        ({"gamma": np.linspace(0, 1, 4)}, "one value per depth"),
    ):
        with pytest.raises(lb.errors.InvalidInputError, match=match):
            omega_profiles.profile(values, ids, **kwargs)
    omega_profiles.profile(values, ids, level=0.51, n_boot=100)  # the edges just inside are fine
    with pytest.raises(lb.errors.InvalidInputError, match="needs prompt_ids"):
        omega_profiles.profile(values, by="prompt")
    with pytest.raises(lb.errors.InvalidInputError, match="needs prompt_ids"):
        omega_profiles.profile(values, ids[:-1], by="prompt")
    with pytest.raises(lb.errors.InvalidInputError, match="one prompt"):
        omega_profiles.profile(values, np.zeros(10))
    omega_profiles.profile(values, np.r_[np.zeros(9), 1.0])  # two prompts are enough
    for bad in (np.zeros(10), np.zeros((3, 1))):
        with pytest.raises(lb.errors.InvalidInputError, match="n_depths, n_tokens"):
            omega_profiles.profile(bad)
    assert omega_profiles.profile(values[:, :2], n_boot=100).n_tokens == 2  # two tokens are enough
    with pytest.raises(lb.errors.InvalidInputError, match="Capture"):
        omega_profiles.profile(values, drop_top_dims=1)


def _prompt_correlated_omega(n_prompts: int, per_prompt: int, means: np.ndarray, rho: float, seed: int):
    """Omega-like values at each depth: depth mean + prompt effect + token noise (variance 0.01, ICC rho)."""
    rng = np.random.default_rng(seed)
    prompt = np.repeat(rng.standard_normal((len(means), n_prompts)), per_prompt, axis=1)
    token = rng.standard_normal((len(means), n_prompts * per_prompt))
    values = means[:, None] + 0.1 * (np.sqrt(rho) * prompt + np.sqrt(1 - rho) * token)
    return values, np.repeat(np.arange(n_prompts), per_prompt)


def test_intervals_by_prompt_cover_the_truth_and_token_intervals_are_too_narrow():
    means = np.array([0.2, 0.3, 0.5])
    covered = {"prompt": 0, "token": 0}
    for seed in range(100):
        values, prompts = _prompt_correlated_omega(40, 20, means, rho=0.3, seed=seed)
        for by in covered:
            p = omega_profiles.profile(values, prompts, by=by, n_boot=400, seed=seed)
            covered[by] += np.sum((p.low <= means) & (means <= p.high))
    assert covered["prompt"] / 300 >= 0.9
    assert covered["token"] / 300 < 0.7  # design effect 1 + 19 * 0.3: expected coverage ~ 0.55
    p = omega_profiles.profile(values, prompts, n_boot=400)
    assert p.by == "prompt" and p.n_prompts == 40 and p.n_tokens == 800
    np.testing.assert_allclose(p.m, values.mean(1))
    np.testing.assert_allclose(p.gamma, [0.0, 0.5, 1.0])
    assert list(p.to_frame().columns) == ["gamma", "m", "low", "high"]


def test_profile_of_a_capture_is_centred_on_the_exact_mean():
    c = synthetic.clustered_tokens(60, 30, 32, 0.3, seed=2)
    cap = synthetic.as_capture(
        np.stack([c.x, np.abs(c.x) ** 3]), c.prompt_ids, c.positions, n_omega_samples=600
    )
    p = omega_profiles.profile(cap, n_boot=300)
    np.testing.assert_allclose(p.m, cap.omega_mean())
    assert np.all(p.low < p.m) and np.all(p.m < p.high)
    assert p.by == "prompt" and p.n_tokens == 600
    assert p.m[1] > p.m[0] + 0.1  # cubing makes the vectors sparser
    assert omega_profiles.profile(cap, n_boot=300, drop_first=True).n_tokens < 600
    with pytest.raises(lb.errors.InvalidInputError, match="Capture"):
        omega_profiles.profile(np.zeros((2, 10)), drop_first=True)


# --- bimodality -------------------------------------------------------------------------------------------


def test_two_separated_modes_are_bimodal_by_all_three_tests():
    rng = np.random.default_rng(3)
    for weight in (0.5, 0.2):
        n_high = int(4000 * weight)
        values = np.r_[rng.normal(0.3, 0.03, 4000 - n_high), rng.normal(0.55, 0.03, n_high)]
        result = bimodality.bimodality(values)
        assert result.verdict == "bimodal", result
        assert all(result.votes.values())


@pytest.mark.parametrize("seed", range(4))
def test_a_single_gaussian_is_bimodal_by_none(seed):
    result = bimodality.bimodality(np.random.default_rng(seed).normal(0.3, 0.05, 4000))
    assert result.verdict == "unimodal" and not any(result.votes.values())
    assert result.coefficient == pytest.approx(1 / 3, abs=0.05)  # Sarle's BC of a Gaussian


def test_a_skewed_unimodal_sample_is_not_called_bimodal():
    values = np.random.default_rng(5).gamma(2.0, 0.05, 4000)
    result = bimodality.bimodality(values)
    assert result.delta_bic > 10  # BIC alone would prefer two Gaussians
    assert not result.votes["mixture"] and result.verdict != "bimodal"


def test_bimodality_refuses_tiny_samples_and_calls_a_point_mass_unimodal():
    with pytest.raises(lb.errors.InvalidInputError, match="at least 20"):
        bimodality.bimodality(np.arange(5.0))
    with pytest.raises(lb.errors.InvalidInputError, match="one id per value"):
        bimodality.bimodality(np.ones(50), prompt_ids=np.zeros(3))
    # exact one-hot tokens share one Omega: one mode, no vote, and no number made up for the moments
    point = bimodality.bimodality(
        np.full(50, omega.reference_values(64)["one_hot"]), prompt_ids=np.arange(50) // 5
    )
    assert point.verdict == "unimodal" and not any(point.votes.values())
    assert (point.n, point.n_distinct, point.dip, point.dip_p) == (50, 1, 0.0, 1.0)
    assert np.isnan(point.coefficient) and np.isnan(point.delta_bic) and np.isnan(point.ashman_d)
    assert bimodality.holm_adjusted([point, point])[0].verdict == "unimodal"


# --- bimodality at its decision boundaries -----------------------------------------------------------------


def _mixture_quantiles(n: int, weight: float, delta: float) -> np.ndarray:
    """The ``n`` quantiles ``F^{-1}((i - 1/2) / n)`` of ``(1 - weight) N(0, 1) + weight N(delta, 1)``: a sample
    with no sampling noise, so each vote sits where the law puts it."""
    from scipy.stats import norm

    grid = np.linspace(-8.0, delta + 8.0, 200_001)
    cdf = (1 - weight) * norm.cdf(grid) + weight * norm.cdf(grid - delta)
    return np.interp((np.arange(n) + 0.5) / n, cdf, grid)


def test_sarles_coefficient_at_small_n_matches_a_hand_calculation():
    """x = 0, 0, 0, 1, 1, 1, 1, 2 (n = 8, mean 3/4): central moments m2 = 7/16, m3 = 3/32, m4 = 109/256;
    G1^2 = n(n-1)/(n-2)^2 m3^2/m2^3 = 8/49; G2 = (n-1)/((n-2)(n-3)) ((n+1) m4/m2^2 - 3(n-1)) = -8/35;
    BC = (G1^2 + 1) / (G2 + 3(n-1)^2/((n-2)(n-3))) = (57/49) / (-8/35 + 49/10) = 190/763."""
    x = np.array([0.0, 0, 0, 1, 1, 1, 1, 2])
    assert bimodality.bimodality_coefficient(x) == pytest.approx(190 / 763, rel=1e-12)
    # without the sample-size correction the denominator is G2 + 3 (0.420) or the moments are biased (0.497)
    assert abs(190 / 763 - 57 / 49 / (-8 / 35 + 3)) > 0.15
    # a second sample, checked against the same formula in exact arithmetic
    from fractions import Fraction

    values = [0, 1, 2, 3, 10]
    n, mean = len(values), Fraction(sum(values), len(values))
    m2, m3, m4 = (sum((Fraction(v) - mean) ** k for v in values) / n for k in (2, 3, 4))
    g1_squared = Fraction(n * (n - 1), (n - 2) ** 2) * m3**2 / m2**3
    g2 = Fraction(n - 1, (n - 2) * (n - 3)) * ((n + 1) * m4 / m2**2 - 3 * (n - 1))
    exact = (g1_squared + 1) / (g2 + Fraction(3 * (n - 1) ** 2, (n - 2) * (n - 3)))
    assert bimodality.bimodality_coefficient(np.array(values, dtype=float)) == pytest.approx(
        float(exact), rel=1e-12
    )


def test_a_minority_mode_the_dip_test_misses_gets_two_votes_and_is_inconclusive():
    """15 % of the mass 5 s.d. away: skewness lifts Sarle's coefficient and two Gaussians win by far, but the dip
    test (built for balanced modes) sees nothing. Two votes of three are not "bimodal"."""
    b = bimodality.bimodality(_mixture_quantiles(400, 0.15, 5.0))
    assert b.votes == {"coefficient": True, "dip": False, "mixture": True}
    assert b.verdict == "inconclusive"
    assert b.coefficient > bimodality.BC_THRESHOLD + 0.05 and b.dip_p > 0.5  # measured: 0.659 and 0.71
    assert b.delta_bic > 100 and b.ashman_d > 4.5


def test_balanced_modes_that_sarles_coefficient_misses_get_two_votes_and_are_inconclusive():
    """Two equal modes 3.5 s.d. apart: a clear dip and mixture, but excess kurtosis -1.1 leaves Sarle's
    coefficient below 5/9 (two modes need kurtosis below -1.2 to pass it when balanced)."""
    b = bimodality.bimodality(_mixture_quantiles(400, 0.5, 3.5))
    assert b.votes == {"coefficient": False, "dip": True, "mixture": True}
    assert b.verdict == "inconclusive"
    assert 0.5 < b.coefficient < bimodality.BC_THRESHOLD and b.dip_p < 0.01  # measured: 0.533 and 0.004


def test_the_bic_margin_decides_the_mixture_vote_of_separated_modes():
    """Two equal modes 3 s.d. apart (Ashman's D = 3 > 2): with 150 values two Gaussians beat one by a BIC of only
    4.4 (< 10, not "very strong"), so the mixture does not vote; with 300 by 21, and it does."""
    few = bimodality.bimodality(_mixture_quantiles(150, 0.5, 3.0))
    assert 0 < few.delta_bic < bimodality.BIC_MARGIN and few.ashman_d > bimodality.ASHMAN_D
    assert few.votes == {"coefficient": False, "dip": False, "mixture": False} and few.verdict == "unimodal"
    many = bimodality.bimodality(_mixture_quantiles(300, 0.5, 3.0))
    assert many.delta_bic > 2 * bimodality.BIC_MARGIN and many.ashman_d > bimodality.ASHMAN_D
    assert many.votes == {"coefficient": False, "dip": False, "mixture": True}
    assert many.verdict == "inconclusive"


def test_holm_adjustment_can_take_the_dip_vote_away_and_leave_two_votes_inconclusive():
    b = bimodality.bimodality(_mixture_quantiles(400, 0.15, 5.0))
    results = [
        dataclasses.replace(b, dip_p=p, votes={**b.votes, "dip": True}, verdict="bimodal")
        for p in (0.03, 0.04)
    ]
    adjusted = bimodality.holm_adjusted(results)  # Holm: 2 x 0.03 = 0.06, max(0.06, 0.04) = 0.06
    assert [r.dip_p for r in adjusted] == pytest.approx([0.06, 0.06])
    assert [r.verdict for r in adjusted] == ["inconclusive", "inconclusive"]
    assert all(r.votes == {"coefficient": True, "dip": False, "mixture": True} for r in adjusted)
    strong = bimodality.holm_adjusted([dataclasses.replace(r, dip_p=0.001) for r in results])
    assert [r.verdict for r in strong] == ["bimodal", "bimodal"]
    alone = bimodality.holm_adjusted(
        [dataclasses.replace(results[0], votes={**b.votes, "coefficient": False})]
    )
    assert alone[0].verdict == "inconclusive" and alone[0].votes["dip"]  # one test: p unchanged, 2 votes


# --- confounds: massive activations and the first position ---------------------------------------------


def test_dropping_the_massive_coordinate_restores_the_gaussian_value():
    x = np.random.default_rng(6).standard_normal((3000, 64))
    x[:, 17] = 80.0
    assert omega.omega(x).mean() > 0.6
    np.testing.assert_array_equal(omega.top_dims(x, 1), [17])
    cleaned = omega.omega_without_top_dims(x, 1)
    assert cleaned.mean() == pytest.approx(omega.gaussian_omega(63), abs=0.003)


def _sink_capture(seed: int = 7):
    """Gaussian tokens; the token at position 0 of each prompt carries a massive coordinate (an attention sink)."""
    c = synthetic.clustered_tokens(300, 8, 64, 0.0, seed=seed)
    x = c.x.copy()
    x[c.positions == 0, 5] = 60.0
    return synthetic.as_capture(
        np.stack([c.x, x]), c.prompt_ids, c.positions, n_vectors=2400, n_omega_samples=2400
    )


def test_a_sink_token_bimodality_disappears_when_either_confound_is_removed():
    cap = _sink_capture()
    table = bimodality.bimodality_checks(cap, 1, k=1).set_index("sample")
    assert table.loc["all tokens", "verdict"] == "bimodal"
    assert table.loc["first position removed", "verdict"] == "unimodal"
    assert table.loc["top-1 dims removed", "verdict"] == "unimodal"
    assert table.loc["both removed", "verdict"] == "unimodal"
    assert table.loc["first position removed", "n"] == 2100
    assert table.loc["all tokens", "n_distinct"] > 2390  # float32 Omega: a chance tie or two
    values, prompts = omega.samples(cap, 1, drop_top_dims=1)
    assert (
        values.mean() == pytest.approx(omega.gaussian_omega(63), abs=0.005) and len(np.unique(prompts)) == 300
    )
    assert bimodality.bimodality_checks(cap, 0, k=1)["verdict"].eq("unimodal").all()


def test_distributions_are_densities_per_depth():
    cap = _sink_capture()
    edges, density = omega_profiles.distributions(cap)
    assert density.shape == (2, len(edges) - 1)
    np.testing.assert_allclose((density * np.diff(edges)).sum(1), 1.0)


# --- nulls, width, clustering and multiple depths (issue 13) --------------------------------------------------


def test_omega_propagates_nan_and_inf_never_a_number():
    x = np.ones((3, 8))
    x[1, 2] = np.nan
    x[2, 5] = np.inf
    values = lb.omega(x)
    assert values[0] == pytest.approx(0.0) and np.isnan(values[1]) and np.isnan(values[2])
    import torch

    assert torch.isnan(lb.omega(torch.tensor(x, dtype=torch.float32))[1:]).all()


def test_the_permutation_null_reproduces_massive_coordinates_but_not_one_hot_tokens():
    rng = np.random.default_rng(0)
    massive = rng.standard_normal((2000, 256))
    massive[:, 0] *= 100.0  # one coordinate 100 sigma on every token: a scale, not a structure
    assert omega.permutation_null(massive).mean() == pytest.approx(lb.omega(massive).mean(), abs=0.003)
    one_hot = 0.01 * rng.standard_normal((2000, 256))
    one_hot[np.arange(2000), rng.integers(0, 256, 2000)] = 1.0  # one large coordinate per token
    real, null = lb.omega(one_hot).mean(), omega.permutation_null(one_hot).mean()
    assert real > 0.75 and null < real - 0.15  # Poisson(1) large coordinates per permuted token
    assert omega.permutation_null(massive, seed=1).shape == (2000,)
    # each coordinate keeps its values
    permuted = np.random.default_rng(3).permuted(one_hot, axis=0)
    assert np.allclose(np.sort(permuted, 0), np.sort(one_hot, 0))


def test_the_gaussian_null_matches_the_sample_covariance():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((300, 40)) @ rng.standard_normal((40, 40))
    values = omega.gaussian_null(x)
    assert values.shape == (300,)
    assert values.mean() == pytest.approx(
        lb.omega(rng.multivariate_normal(x.mean(0), np.cov(x.T), 20000)).mean(), abs=0.01
    )
    with pytest.raises(lb.errors.InvalidInputError):
        omega.gaussian_null(np.ones(5))


def test_hoyer_and_levels_across_widths():
    assert omega.hoyer(np.eye(64)[:1])[0] == pytest.approx(1.0)
    assert omega.hoyer(np.ones((1, 64)))[0] == pytest.approx(0.0)
    assert omega.level_at_width(0.69, 5120) == pytest.approx(0.69)
    at_576 = omega.level_at_width(0.69, 576)
    assert at_576 == pytest.approx(0.69 * (1 - 1 / 24) / (1 - 1 / np.sqrt(5120)))
    # the numbers: one coordinate at 100 sigma gives 0.774 at d = 576 but 0.524 at d = 5120
    assert omega.massive_omega(576, 100.0) == pytest.approx(0.774, abs=0.003)
    assert omega.massive_omega(5120, 100.0) == pytest.approx(0.524, abs=0.003)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((500, 576))
    x[:, 0] = 100.0
    assert lb.omega(x).mean() == pytest.approx(omega.massive_omega(576, 100.0), abs=0.003)
    assert omega.level_at_width(0.524, 576, structure="massive") == pytest.approx(0.774, abs=0.005)
    with pytest.raises(lb.errors.InvalidInputError):
        omega.level_at_width(0.69, 576, structure="fraction")


def test_holm_adjusts_like_its_definition():
    p = np.array([0.01, 0.04, 0.03, 0.2])
    # sorted 0.01, 0.03, 0.04, 0.2 -> 4*0.01, max(0.04, 3*0.03), max(0.09, 2*0.04), max(0.09, 0.2)
    assert np.allclose(bimodality.holm(p), [0.04, 0.09, 0.09, 0.2])
    with pytest.raises(lb.errors.InvalidInputError):
        bimodality.holm(np.array([0.1, np.nan]))


def test_design_effect_of_prompt_offsets_and_of_independent_tokens():
    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(200), 20)
    independent = rng.standard_normal(len(ids))
    assert bimodality.design_effect(independent, ids) == pytest.approx(1.0, abs=0.15)
    clustered = rng.standard_normal(200)[ids] * np.sqrt(0.3) + rng.standard_normal(len(ids)) * np.sqrt(0.7)
    assert bimodality.design_effect(clustered, ids) == pytest.approx(1 + 19 * 0.3, rel=0.2)


def test_two_gaussians_finds_the_maximum_likelihood_of_sklearn():
    from sklearn.mixture import GaussianMixture

    rng = np.random.default_rng(2)
    for shift in (0.5, 2.0, 5.0):
        x = np.r_[rng.normal(0, 1, 700), rng.normal(shift, 0.7, 300)]
        score, mu, _ = bimodality.two_gaussians(x)
        best = GaussianMixture(2, n_init=10, tol=1e-8, max_iter=2000, random_state=0).fit(x[:, None])
        assert score >= best.score(x[:, None]) - 1e-4


def test_prompt_clustering_stops_the_dip_test_from_finding_modes_in_prompt_offsets():
    """Few prompts with large offsets make a lumpy unimodal sample; as independent tokens it looks bimodal."""
    from latentbook.analysis import calibration

    naive, clustered, naive_dips = 0, 0, 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        ids = np.repeat(np.arange(12), 150)
        values = 3.0 * rng.standard_normal(12)[ids] + rng.standard_normal(len(ids))
        as_tokens = bimodality.bimodality(values)
        naive += as_tokens.verdict != "unimodal"
        naive_dips += as_tokens.votes["dip"]
        clustered += bimodality.bimodality(values, prompt_ids=ids).verdict != "unimodal"
    assert naive >= 9 and naive_dips >= 2 and clustered <= 1  # measured: 11, 3 and 1 of 12
    values, ids = calibration.planted_omega_samples(np.random.default_rng(0), 48, 24, True, 5.0, 0.4)
    b = bimodality.bimodality(values, prompt_ids=ids)
    assert b.verdict == "bimodal" and b.n_effective < len(values)


def _null_capture():
    """Four depths of 200 prompts x 8 positions, d = 64, each with a known answer for the nulls:

    0. every token a signed permutation of one vector whose Omega is the Gaussian value exactly;
    1. Gaussian tokens with one coordinate at 60 on every token (a scale, no structure within tokens);
    2. one large coordinate per token at a random place (structure within tokens);
    3. Gaussian tokens; the token at position 0 has coordinates 5 and 9 at 60 together (a sink)."""
    from scipy.optimize import brentq

    d, n_prompts, per = 64, 200, 8
    n = n_prompts * per
    ids, positions = np.repeat(np.arange(n_prompts), per), np.tile(np.arange(per), n_prompts)
    a = brentq(lambda a: omega.omega(np.r_[a, np.ones(d - 1)]) - omega.gaussian_omega(d), 1.0, 100.0)
    rng = np.random.default_rng(0)
    exact = rng.permuted(np.tile(np.r_[a, np.ones(d - 1)], (n, 1)), axis=1) * rng.choice([-1, 1], (n, d))
    scale = rng.standard_normal((n, d))
    scale[:, 5] = 60.0
    one_hot = 0.01 * rng.standard_normal((n, d))
    one_hot[np.arange(n), rng.integers(0, d, n)] = 1.0
    sink = rng.standard_normal((n, d))
    sink[positions == 0, 5] = sink[positions == 0, 9] = 60.0
    states = np.stack([exact, scale, one_hot, sink])
    return synthetic.as_capture(states, ids, positions, n_vectors=n, n_omega_samples=n)


def test_null_profiles_against_known_answers():
    cap = _null_capture()
    g = omega.gaussian_omega(64)
    table = omega_profiles.null_profiles(cap)
    assert list(table.columns) == [
        "gamma",
        "sample",
        "permutation",
        "gaussian",
        "share_permutation",
        "standardised",
        "standardised_permutation",
        "scale",
        "sparsity",
        "structure",
    ]
    np.testing.assert_allclose(table["gamma"], cap.gamma)
    for index, layer in enumerate(cap.depths.tolist()):
        x = cap.token_vectors(layer).astype(np.float64)
        assert table["sample"][index] == pytest.approx(omega.omega(x).mean(), rel=1e-12)
    exact, scale, one_hot, sink = (table.iloc[i] for i in range(4))
    # 0: the sample sits on the Gaussian value (within 1e-3: no share), and so does its Gaussian null
    assert exact["sample"] == pytest.approx(g, abs=1e-6) and np.isnan(exact["share_permutation"])
    assert exact["gaussian"] == pytest.approx(g, abs=0.005)
    # 1: a coordinate's scale: the permutation reproduces the sample (share 1), the Gaussian null nearly
    assert scale["permutation"] == pytest.approx(scale["sample"], abs=1e-3)
    assert scale["share_permutation"] == pytest.approx(1.0, abs=0.005)
    assert scale["gaussian"] == pytest.approx(scale["sample"], abs=0.005)
    # 2: structure within tokens: neither null reproduces it; the Gaussian null is near the Gaussian value
    assert one_hot["permutation"] < one_hot["sample"] - 0.15 and one_hot["gaussian"] == pytest.approx(
        g, abs=0.01
    )
    share = (one_hot["permutation"] - g) / (one_hot["sample"] - g)
    assert one_hot["share_permutation"] == pytest.approx(share, rel=1e-12) and 0.4 < share < 0.8
    # 3: the sink's two coordinates move together; permuted they part: the null's Omega is higher
    assert sink["permutation"] > sink["sample"] + 0.04
    # the decomposition: parts add up to sample - g; a coordinate's scale is all "scale" (standardised it is
    # Gaussian), one large coordinate per token is "sparsity" (heavy tails a permutation keeps) and
    # "structure" (exactly one per token, where the permutation gives each token Poisson(1) of them)
    for r in (exact, scale, one_hot, sink):
        assert r["scale"] + r["sparsity"] + r["structure"] == pytest.approx(r["sample"] - g, abs=1e-12)
    assert exact["standardised"] == pytest.approx(g, abs=0.005)
    assert scale["standardised"] == pytest.approx(g, abs=0.01)
    assert scale["scale"] == pytest.approx(scale["sample"] - g, abs=0.01) and scale["scale"] > 0.3
    assert abs(one_hot["scale"]) < 0.1 and one_hot["sparsity"] > 0.25 and one_hot["structure"] > 0.1
    # without the first position the sink is gone: every null is the Gaussian value, share a ratio of noise
    first = omega_profiles.null_profiles(cap, drop_first=True)
    keep = cap.vectors.positions > 0
    x = cap.token_vectors(3).astype(np.float64)[keep]
    assert first["sample"][3] == pytest.approx(omega.omega(x).mean(), rel=1e-12)
    for column in ("sample", "permutation", "gaussian"):
        assert first[column][3] == pytest.approx(g, abs=0.005)
    # seeded: the same seed gives the same table, another seed other nulls
    again, other = omega_profiles.null_profiles(cap), omega_profiles.null_profiles(cap, seed=1)
    assert again.equals(table)
    assert not np.allclose(other["permutation"], table["permutation"])
    assert not np.allclose(other["gaussian"], table["gaussian"])
    np.testing.assert_array_equal(other["sample"], table["sample"])


def test_excess_profile_is_zero_without_structure_within_tokens():
    cap = _null_capture()
    p = omega_profiles.excess_profile(cap, n_boot=200)
    assert p.by == "prompt" and p.n_prompts == 200 and p.n_tokens == 1600 and p.level == 0.95
    assert p.draws.shape == (200, 4)
    np.testing.assert_allclose(p.gamma, cap.gamma)
    assert abs(p.m[1]) < 1e-3 and p.low[1] <= 0.0 <= p.high[1]  # a scale: nothing within tokens
    assert p.m[2] > 0.2 and p.low[2] > 0.15  # one large coordinate per token
    assert p.m[3] < -0.05 and p.high[3] < -0.04  # the sink's two coordinates, parted by the permutation
    assert np.all(p.low <= p.m) and np.all(p.m <= p.high)
    # removing either confound of the sink removes its excess (and changes nothing at the scale depth)
    for kwargs in ({"drop_first": True}, {"drop_top_dims": 2}):
        cleaned = omega_profiles.excess_profile(cap, n_boot=200, **kwargs)
        assert abs(cleaned.m[3]) < 0.003 and cleaned.low[3] <= 0.0 <= cleaned.high[3], kwargs
        assert cleaned.m[2] > 0.2
    assert omega_profiles.excess_profile(cap, n_boot=200, drop_first=True).n_tokens == 1400
    # the level, the draws and the seed are passed on to the profile
    narrow = omega_profiles.excess_profile(cap, n_boot=300, level=0.6)
    assert narrow.level == 0.6 and narrow.draws.shape == (300, 4)
    assert np.all(narrow.high - narrow.low < p.high - p.low)
    np.testing.assert_array_equal(omega_profiles.excess_profile(cap, n_boot=200).m, p.m)
    other = omega_profiles.excess_profile(cap, n_boot=200, seed=1)
    assert not np.allclose(other.m, p.m) and not np.allclose(other.draws, p.draws)


def test_omega_is_scale_free_and_refuses_bad_widths():
    x = np.random.default_rng(4).standard_normal((5, 12))
    for scale in (1e-3, 0.5, 7.0):
        np.testing.assert_allclose(omega.omega(scale * x), omega.omega(x), rtol=1e-12)
    np.testing.assert_allclose(omega.hoyer(1e-3 * x), omega.hoyer(x), rtol=1e-12)
    assert omega.omega(np.array([0.5, 0.0, 0.0, 0.0])) == pytest.approx(0.5)  # one-hot at d = 4, norm 1/2
    assert omega.omega(np.array([3.0, 4.0])) == pytest.approx(1 - 7 / (np.sqrt(2) * 5))
    with pytest.raises(lb.errors.InvalidInputError, match="last axis"):
        omega.omega(np.zeros((3, 0)))
    assert omega.hoyer(np.array([1.0, 0.0]))[()] == pytest.approx(1.0)  # d = 2 is enough
    with pytest.raises(lb.errors.InvalidInputError, match="d >= 2"):
        omega.hoyer(np.ones((3, 1)))


def test_reference_values_refuse_bad_sizes():
    for d in (0, 2.0, "8"):
        with pytest.raises(lb.errors.InvalidInputError, match="d must"):
            omega.reference_values(d)
    assert omega.reference_values(1)["one_hot"] == 0.0
    assert omega.reference_values(np.int64(16), k=np.int64(4))["k_sparse"] == pytest.approx(0.5)
    assert omega.reference_values(16, k=1)["k_sparse"] == pytest.approx(0.75)
    assert omega.reference_values(16, k=16)["k_sparse"] == pytest.approx(0.0)
    assert "k_sparse" not in omega.reference_values(16)
    for k in (0, 17, 2.0):
        with pytest.raises(lb.errors.InvalidInputError, match="k must"):
            omega.reference_values(16, k=k)


def test_levels_refused_outside_omegas_range_and_the_massive_structure_by_hand():
    # massive_omega by hand at d = 5, c = 2: 1 - (2 + 4 sqrt(2/pi)) / (sqrt(5) sqrt(8))
    assert omega.massive_omega(5, 2.0) == pytest.approx(
        1 - (2 + 4 * np.sqrt(2 / np.pi)) / (np.sqrt(5) * np.sqrt(8))
    )
    # the massive structure: c solved at d_from, its Omega read at d (the two widths are not interchangeable)
    c = 30.0
    level = omega.massive_omega(5120, c)
    assert omega.level_at_width(level, 576, structure="massive") == pytest.approx(omega.massive_omega(576, c))
    back = omega.level_at_width(omega.massive_omega(576, c), 5120, d_from=576, structure="massive")
    assert back == pytest.approx(level)
    assert omega.level_at_width(0.5, 100, d_from=400) == pytest.approx(0.5 * 0.9 / 0.95)
    for bad in (0.0, 1.0, 1 - 1 / np.sqrt(5120)):
        with pytest.raises(lb.errors.InvalidInputError, match="level must"):
            omega.level_at_width(bad, 576)
    with pytest.raises(lb.errors.InvalidInputError, match="below a Gaussian"):
        omega.level_at_width(omega.massive_omega(5120, 0.0), 576, structure="massive")
    with pytest.raises(lb.errors.InvalidInputError, match="'hoyer' or 'massive'"):
        omega.level_at_width(0.5, 576, structure="fraction")


def test_top_dims_and_dropping_given_dims():
    x = np.zeros((4, 6))
    x[0, 2], x[1, 4], x[2, 0], x[3, 1] = -9.0, 7.0, 3.0, 2.0
    np.testing.assert_array_equal(omega.top_dims(x, 2), [2, 4])  # by |h|, returned sorted
    np.testing.assert_array_equal(omega.top_dims(x, 3), [0, 2, 4])
    assert len(omega.top_dims(x, 0)) == 0
    for k in (-1, 6):
        with pytest.raises(lb.errors.InvalidInputError, match="0 <= k < d"):
            omega.top_dims(x, k)
    with pytest.raises(lb.errors.InvalidInputError, match="0 <= k < d"):
        omega.top_dims(np.zeros(6), 1)
    y = np.array([[5.0, 1.0, 1.0, 1.0, 1.0], [1.0, 5.0, 1.0, 1.0, 1.0]])
    np.testing.assert_allclose(omega.omega_without_top_dims(y, 2), 0.0, atol=1e-15)  # four equal coordinates
    np.testing.assert_allclose(omega.omega_without_top_dims(y, 1, dims=[4]), omega.omega(y[:, :4]))
    with pytest.raises(lb.errors.InvalidInputError, match="2 dims to drop but k=1"):
        omega.omega_without_top_dims(y, 1, dims=[3, 4])


def test_nulls_refuse_what_is_not_a_token_sample():
    for null in (omega.permutation_null, omega.gaussian_null):
        for bad in (np.ones(5), np.ones((1, 5)), np.ones((2, 3, 4))):
            with pytest.raises(lb.errors.InvalidInputError, match="n >= 2"):
                null(bad)
        assert null(np.random.default_rng(0).standard_normal((2, 5))).shape == (2,)
        x = np.random.default_rng(1).standard_normal((50, 8))
        np.testing.assert_array_equal(null(x, seed=3), null(x, seed=3))
        assert not np.allclose(null(x, seed=3), null(x))


def test_gaussian_null_of_two_tokens_is_exactly_on_their_line():
    """With n = 2 the sample covariance has rank 1: every null token is mean + e (h_1 - h_2) / 2 for a
    standard normal e (the formula's sqrt(n - 1) = 1), so its Omega is that of a point on the line."""
    h = np.array([[3.0, 1.0, 0.0, 0.0], [1.0, 1.0, 2.0, 0.0]])
    e = np.random.default_rng(0).standard_normal((2, 2))
    centred = h - h.mean(0)
    np.testing.assert_allclose(omega.gaussian_null(h), omega.omega(h.mean(0) + e @ centred), rtol=1e-12)


def test_holm_edges_and_refusals():
    assert bimodality.holm(np.array([])).size == 0
    assert bimodality.holm(np.array([0.3]))[0] == 0.3  # one test: unchanged
    np.testing.assert_allclose(bimodality.holm(np.array([0.6, 0.5])), [1.0, 1.0])  # capped at 1
    np.testing.assert_allclose(bimodality.holm(np.array([0.0, 1.0])), [0.0, 1.0])  # both ends allowed
    for bad in ([-0.1, 0.5], [0.5, 1.1]):
        with pytest.raises(lb.errors.InvalidInputError, match="lie in"):
            bimodality.holm(np.array(bad))


def test_design_effect_by_hand_and_at_its_edges():
    """Three prompts of sizes 1, 2, 3 (n = 6), values 0 | 1, 3 | 2, 2, 5: means 0, 2, 3, grand mean 13/6.
    Between MS = (1 (13/6)^2 + 2 (1/6)^2 + 3 (5/6)^2) / 2 = 41/12; within MS = (0 + 2 + 6) / 3 = 8/3;
    n0 = (6 - 14/6) / 2 = 11/6; rho = (41/12 - 8/3) / (41/12 + (5/6)(8/3)) = (27/36) / (203/36) = 27/203;
    deff = 1 + (14/6 - 1) rho = 1 + (4/3)(27/203) = 239/203."""
    x = np.array([0.0, 1.0, 3.0, 2.0, 2.0, 5.0])
    ids = np.array([7, 8, 8, 9, 9, 9])
    assert bimodality.design_effect(x, ids) == pytest.approx(239 / 203, rel=1e-12)
    assert bimodality.design_effect(x, np.zeros(6)) == 1.0  # one prompt: no clustering to correct
    assert bimodality.design_effect(x, np.arange(6)) == 1.0  # a prompt per token
    assert (
        bimodality.design_effect(np.array([0.0, 0.0, 1.0, 1.0]), np.array([0, 1, 0, 1])) == 1.0
    )  # rho < 0: floored
    assert bimodality.design_effect(np.ones(4), np.array([0, 0, 1, 1])) == 1.0  # no variance at all
    assert bimodality.design_effect(np.array([0.0, 0.0, 1.0, 1.0]), np.array([0, 0, 1, 1])) == pytest.approx(
        2.0
    )


def test_bimodality_uses_the_effective_size_and_refuses_bad_samples():
    rng = np.random.default_rng(8)
    ids = np.repeat(np.arange(40), 10)
    values = rng.standard_normal(40)[ids] + 0.5 * rng.standard_normal(400)
    deff = bimodality.design_effect(values, ids)
    b = bimodality.bimodality(values, prompt_ids=ids)
    assert b.n_effective == pytest.approx(400 / deff) and deff > 3
    assert (b.dip, b.dip_p) == pytest.approx(bimodality.dip_test(values, 400 / deff))
    assert (b.delta_bic, b.ashman_d) == pytest.approx(bimodality.mixture_comparison(values, 400 / deff))
    assert b.n == 400 and b.n_distinct == 400
    plain = bimodality.bimodality(values)
    assert plain.n_effective == 400.0 and (plain.dip, plain.dip_p) == pytest.approx(
        bimodality.dip_test(values)
    )
    assert plain.dip_p < b.dip_p  # fewer independent values: a weaker test
    with pytest.raises(lb.errors.InvalidInputError, match="one id per value"):
        bimodality.bimodality(values, prompt_ids=ids[:-1])
    bad = values.copy()
    bad[3] = np.nan
    with pytest.raises(lb.errors.InvalidInputError, match="at least 20 finite"):
        bimodality.bimodality(bad)
    assert bimodality.bimodality(values[:20]).n == 20  # 20 values are enough


def test_mixture_comparison_by_hand_of_two_point_clusters():
    """Values near -1 and 1, half each (s.d. 0.1): one Gaussian has variance ~1 (mean log-likelihood
    -(log 2 pi var + 1) / 2); two fit the clusters' means and variances (the histogram's bins, 0.02 wide, add
    ~w^2 / 12 to a variance); Ashman's D is sqrt(2) |mu_1 - mu_2| / sqrt(s_1^2 + s_2^2)."""
    rng = np.random.default_rng(0)
    x = np.r_[-1 + 0.1 * rng.standard_normal(500), 1 + 0.1 * rng.standard_normal(500)]
    one = -0.5 * (np.log(2 * np.pi * x.var()) + 1.0)
    two, mu, var = bimodality.two_gaussians(x)
    np.testing.assert_allclose(np.sort(mu), [x[:500].mean(), x[500:].mean()], atol=1e-3)
    np.testing.assert_allclose(var[np.argsort(mu)], [x[:500].var(), x[500:].var()], rtol=0.05)
    # the exact log-likelihood of the fitted mixture, recomputed by hand
    from scipy.stats import norm

    share = np.array([0.5, 0.5])
    density = sum(w * norm.pdf(x, m, np.sqrt(v)) for w, m, v in zip(share, mu, var))
    assert two == pytest.approx(np.log(density).mean(), abs=1e-3)
    delta, ashman = bimodality.mixture_comparison(x)
    assert delta == pytest.approx(2 * 1000 * (two - one) - 3 * np.log(1000), rel=1e-9)
    assert ashman == pytest.approx(np.sqrt(2) * abs(mu[0] - mu[1]) / np.sqrt(var.sum()), rel=1e-12)
    half, _ = bimodality.mixture_comparison(x, n_effective=500)
    assert half == pytest.approx(2 * 500 * (two - one) - 3 * np.log(500), rel=1e-9)


def test_the_dip_vote_is_strictly_below_its_level():
    b = bimodality.bimodality(_mixture_quantiles(400, 0.5, 3.5))  # dip p ~ 0.004
    assert not bimodality.bimodality(_mixture_quantiles(400, 0.5, 3.5), dip_alpha=b.dip_p).votes["dip"]
    assert bimodality.bimodality(_mixture_quantiles(400, 0.5, 3.5), dip_alpha=b.dip_p * 1.01).votes["dip"]
    at = dataclasses.replace(b, dip_p=0.05)
    assert not bimodality.holm_adjusted([at])[0].votes["dip"]  # p = alpha: no vote
    assert bimodality.holm_adjusted([at], alpha=0.06)[0].votes["dip"]
    assert bimodality.holm_adjusted([dataclasses.replace(b, dip_p=0.049)])[0].votes["dip"]
    assert bimodality.holm_adjusted([]) == []


def test_bimodality_checks_table_is_the_samples_and_their_tests():
    cap = _sink_capture()
    table = bimodality.bimodality_checks(cap, 1, k=1)
    assert list(table["sample"]) == [
        "all tokens",
        "first position removed",
        "top-1 dims removed",
        "both removed",
    ]
    cases = [(0, False), (0, True), (1, False), (1, True)]
    for row, (k, first) in zip(table.to_dict("records"), cases):
        values, prompts = omega.samples(cap, 1, k, first)
        b = bimodality.bimodality(values, prompt_ids=prompts)
        assert row["n"] == b.n == len(values) and row["n_distinct"] == b.n_distinct
        assert row["n_prompts"] == len(np.unique(prompts)) == 300
        assert row["mean"] == pytest.approx(float(values.mean()), rel=1e-12)
        assert (row["coefficient"], row["dip_p"]) == pytest.approx((b.coefficient, b.dip_p), rel=1e-12)
        assert (row["delta_bic"], row["ashman_d"]) == pytest.approx((b.delta_bic, b.ashman_d), rel=1e-12)
        assert row["verdict"] == b.verdict
    # dropping the massive coordinate: Omega of the vector sample recomputed without it
    values, _ = omega.samples(cap, 1, drop_top_dims=1)
    x = cap.token_vectors(1).astype(np.float64)
    np.testing.assert_allclose(values, omega.omega(np.delete(x, 5, axis=1)), rtol=1e-12)
    assert omega.top_dims(x, 1)[0] == 5
    first, _ = omega.samples(cap, 1, drop_first=True)
    np.testing.assert_array_equal(first, cap.omega_samples(1)[cap.omega_sample.positions > 0])


def _token_codes(kind: str, n_prompts: int = 100, per: int = 10, d: int = 128, seed: int = 0):
    """Prompt-correlated Gaussian tokens (a prompt offset, unequal coordinate scales) plus one kind of structure:
    ``sparse`` (8 coordinates chosen by each token's word, 200 words), ``massive`` (one coordinate, large on
    every token, its size varying), ``rogue`` (3 coordinates with 20x the variance), ``rotated`` (the sparse
    codes in a random basis), ``class`` (the 200 words in 6 classes, each writing its class's 8-sparse code) or
    ``none``; returns the vectors and the prompt of each token."""
    rng = np.random.default_rng(seed)
    n = n_prompts * per
    ids = np.repeat(np.arange(n_prompts), per)
    x = (
        rng.standard_normal((n, d)) * rng.uniform(0.5, 2.0, d)
        + 0.7 * rng.standard_normal((n_prompts, d))[ids]
    )
    codes = np.zeros((200, d))
    for row in codes:
        row[rng.choice(d, 8, replace=False)] = rng.choice([-1.0, 1.0], 8) * 6.0
    words = rng.integers(0, 200, n)
    if kind in ("sparse", "rotated"):
        add = codes[words]
        x = x + (add @ np.linalg.qr(rng.standard_normal((d, d)))[0] if kind == "rotated" else add)
    elif kind == "massive":
        x[:, 7] += 80.0 * np.exp(0.3 * rng.standard_normal(n))
    elif kind == "rogue":
        x[:, [3, 50, 90]] *= 20.0
    elif kind == "class":
        x = x + codes[:6][words % 6]
    return x, ids


def test_standardised_omega_sees_sparse_codes_and_not_coordinate_scales():
    g = omega.gaussian_omega(128)
    levels = {}
    for kind in ("none", "sparse", "massive", "rogue", "rotated"):
        x, _ = _token_codes(kind)
        raw, z = float(omega.omega(x).mean()), float(omega.omega(standardisation.standardise(x)).mean())
        levels[kind] = (raw, z)
    # raw Omega rises with a massive or rogue coordinate as much as with sparse codes ...
    assert levels["massive"][0] > levels["none"][0] + 0.2 and levels["rogue"][0] > levels["none"][0] + 0.1
    assert levels["sparse"][0] > levels["none"][0] + 0.07
    # ... standardised, only the sparse codes stay: the scales go, the rotated codes are Gaussian (Omega counts
    # coordinates), and prompt offsets and unequal scales leave the Gaussian value
    assert levels["sparse"][1] > g + 0.08
    for kind in ("none", "massive", "rogue", "rotated"):
        assert levels[kind][1] == pytest.approx(g, abs=0.02), kind


def test_robust_standardise_sees_class_codes_that_the_standard_deviation_squeezes():
    g = omega.gaussian_omega(128)
    robust = {}
    for kind in ("none", "sparse", "class", "massive", "rogue", "rotated"):
        x, _ = _token_codes(kind)
        robust[kind] = float(omega.omega(standardisation.robust_standardise(x)).mean())
    # a code shared by a sixth of the tokens: the SD makes each code coordinate two-valued, of order 1 ...
    x, _ = _token_codes("class")
    assert float(omega.omega(standardisation.standardise(x)).mean()) < g + 0.025
    # ... the median and MAD of the typical token leave it large where the class writes it
    assert robust["class"] > g + 0.05 and robust["sparse"] > g + 0.08
    for kind in ("none", "massive", "rogue", "rotated"):
        assert robust[kind] == pytest.approx(g, abs=0.02), kind


def test_robust_standardise_uses_the_median_and_mad_and_falls_back_to_the_sd():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((401, 5)) * [1, 2, 3, 4, 5] + [10, -3, 0, 0, 1e6]
    x[:, 2] = 7.0  # constant: 0, never divided by 0
    x[:, 3] = np.where(np.arange(401) < 300, 0.0, rng.standard_normal(401))  # MAD 0: the SD scales it
    z = standardisation.robust_standardise(x)
    for i in (0, 1, 4):
        centred = x[:, i] - np.median(x[:, i])
        mad = np.median(np.abs(centred)) * standardisation.MAD_TO_SD
        np.testing.assert_allclose(z[:, i], centred / mad, rtol=1e-12)
        assert np.median(z[:, i]) == pytest.approx(0.0, abs=1e-12)
        assert z[:, i].std() == pytest.approx(1.0, abs=0.12)  # the MAD of a Gaussian, scaled, is its SD
    assert np.all(z[:, 2] == 0)
    np.testing.assert_allclose(z[:, 3], x[:, 3] / x[:, 3].std(), rtol=1e-12)
    y = x.copy()
    y[:, 0] = 1e4 * y[:, 0] - 5  # invariant to a coordinate's scale and offset
    np.testing.assert_allclose(standardisation.robust_standardise(y), z, atol=1e-8)
    with pytest.raises(lb.errors.InvalidInputError):
        standardisation.robust_standardise(np.ones(5))


def test_standardise_centres_and_scales_each_coordinate():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((50, 6)) * [1, 2, 3, 4, 5, 6] + [10, -3, 0, 0, 0, 1e6]
    x[:, 4] = 7.0  # constant: set to 0, never divided by 0
    z = standardisation.standardise(x)
    np.testing.assert_allclose(z.mean(0), 0, atol=1e-9)
    np.testing.assert_allclose(z[:, [0, 1, 2, 3, 5]].std(0), 1, rtol=1e-9)
    assert np.all(z[:, 4] == 0)
    # invariant to a coordinate's scale and offset: a massive coordinate is an ordinary one
    y = x.copy()
    y[:, 0] = 1e4 * y[:, 0] - 5
    np.testing.assert_allclose(standardisation.standardise(y), z, atol=1e-8)
    with pytest.raises(lb.errors.InvalidInputError):
        standardisation.standardise(np.ones(5))


def test_standardised_profile_resamples_prompts_and_drops_the_confounds():
    depths = []
    for kind in ("none", "none", "sparse", "sparse"):
        x, ids = _token_codes(kind, seed=2)
        depths.append(x)
    positions = np.tile(np.arange(10), 100)
    states = np.stack(depths)
    states[:, positions == 0, 11] += 500.0  # a sink coordinate on the first token
    cap = synthetic.as_capture(states, ids, positions, n_vectors=1000)
    prof = omega_profiles.standardised_profile(cap, n_boot=200)
    keep = cap.vectors.positions >= 0
    expected = [
        omega.omega(
            standardisation.robust_standardise(cap.token_vectors(layer)[keep].astype(np.float64))
        ).mean()
        for layer in cap.depths.tolist()
    ]
    np.testing.assert_allclose(prof.m, expected, rtol=1e-12)
    assert prof.n_prompts == 100 and np.all(prof.low <= prof.m) and np.all(prof.m <= prof.high)
    assert prof.m[2] > prof.m[1] + 0.08 and prof.low[2] > prof.high[1]
    clean = omega_profiles.standardised_profile(cap, n_boot=200, drop_first=True, drop_top_dims=2)
    assert clean.n_tokens == 900
    # the sink lifts the first position's Omega: dropping it lowers m at the Gaussian depths
    assert clean.m[0] < prof.m[0]


def test_standardisers_take_two_tokens_in_float64_and_zero_only_what_is_constant_at_the_data_scale():
    """Both standardisers: two tokens suffice (one is refused, naming the shape it needs); integers and float32 come
    back float64; the threshold for "constant" is relative to the largest spread, so at a scale of 1e6 a
    coordinate that moves by 1e-8 is constant (0) while one that moves by 1 is standardised."""
    two = np.array([[0.0, 1.0], [2.0, 5.0]])
    for standardise in (standardisation.standardise, standardisation.robust_standardise):
        assert standardise(two).shape == (2, 2) and np.all(np.isfinite(standardise(two)))
        with pytest.raises(lb.InvalidInputError, match=r"shape \(n >= 2, d\), got \(1, 2\)"):
            standardise(two[:1])
        assert standardise(np.arange(12, dtype=np.int64).reshape(6, 2) ** 2).dtype == np.float64
        assert standardise(two.astype(np.float32)).dtype == np.float64
        rng = np.random.default_rng(0)
        x = np.column_stack(
            [1e6 * rng.standard_normal(40), 1e-8 * rng.standard_normal(40), rng.standard_normal(40)]
        )
        z = standardise(x)
        assert np.all(z[:, 1] == 0.0), standardise.__name__
        assert np.std(z[:, 2]) > 0.5 and np.std(z[:, 0]) > 0.5
