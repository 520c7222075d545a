"""Layer spectra from the token sample: sink removal, Gaussian reference, prompt bootstrap of the PR, contrasts."""

from __future__ import annotations

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import layer_spectra, spectra, synthetic


def test_mp_fit_handles_a_rank_deficient_heavy_tailed_spectrum():
    """N < d and a power-law spectrum: the zero eigenvalues of the atom never enter the bulk (regression)."""
    rng = np.random.default_rng(0)
    scales = np.arange(1, 401) ** -1.0
    x = rng.standard_normal((300, 400)) * np.sqrt(scales)
    lam = layer_spectra.sample_eigvals(x)
    fit = spectra.mp_fit(lam, 299)
    assert np.all(fit.bulk > 0) and np.isfinite(fit.ks) and fit.sigma2 > 0
    assert np.sum(lam > fit.threshold) > 10  # a power law is nothing like MP: many eigenvalues leave the bulk
    assert fit.n_spikes >= 10  # 17 above the fitted cut; the local edge test confirms the top 10


def test_mp_fit_counts_planted_spikes_when_n_is_below_d():
    planted = synthetic.spiked_covariance(300, 400, [40.0, 30.0, 20.0], seed=1)
    fit = spectra.mp_fit(layer_spectra.sample_eigvals(planted.x), 299)
    assert fit.n_spikes == 3
    assert fit.sigma2 == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize("n", [40, 200])
@pytest.mark.parametrize("centered", [True, False])
def test_sample_eigvals_match_the_covariance_both_sides_of_n_equals_d(n, centered):
    x = np.random.default_rng(n).standard_normal((n, 60)) + 3.0
    y = x - x.mean(0) if centered else x
    expected = np.linalg.eigvalsh(y.T @ y / n)[::-1]
    got = layer_spectra.sample_eigvals(x, centered)
    assert got.shape == (60,)
    np.testing.assert_allclose(got, np.clip(expected, 0, None), atol=1e-9 * expected[0])


def _capture_with_sink(seed: int = 0, n_prompts: int = 60, per_prompt: int = 8, d: int = 20):
    """Gaussian tokens, except position 0 of every prompt, which is 100x larger along one coordinate."""
    rng = np.random.default_rng(seed)
    n = n_prompts * per_prompt
    states = rng.standard_normal((9, n, d))
    positions = np.tile(np.arange(per_prompt), n_prompts)
    states[:, positions == 0, 3] += 100.0 * (1 + rng.random((9, n_prompts)))
    prompt_ids = np.repeat(np.arange(n_prompts), per_prompt)
    return synthetic.as_capture(states, prompt_ids, positions, n_vectors=n)


def test_token_sample_drops_the_sink_and_its_spectrum_is_back_to_noise():
    cap = _capture_with_sink()
    sample = layer_spectra.token_sample(cap, 4)
    assert sample.n == 60 * 7 and np.all(sample.positions > 0)
    # the streamed covariance is owned by the sink: one direction
    assert spectra.participation_ratio(cap.eigvals(4)) < 1.5
    profile = layer_spectra.token_sample_spectrum_profile(cap)
    assert list(profile["n_spikes"]) == [0] * 9
    reference = layer_spectra.gaussian_reference(sample.n, 20, n_rep=3)
    assert profile["participation_ratio"].mean() == pytest.approx(
        reference["participation_ratio"].mean(), rel=0.1
    )
    with_sink = layer_spectra.token_sample_spectrum_profile(cap, exclude_positions=())
    assert (with_sink["n_spikes"] >= 1).all() and (with_sink["participation_ratio"] < 2).all()


def test_token_sample_spectrum_profile_reads_the_mean_share_and_uncentred_spectra():
    rng = np.random.default_rng(3)
    states = rng.standard_normal((3, 400, 10)) + np.array([0.0, 0.0, 3.0])[:, None, None]
    cap = synthetic.as_capture(states, positions=np.arange(400) % 5 + 1, n_vectors=400)
    centred, raw = (
        layer_spectra.token_sample_spectrum_profile(cap),
        layer_spectra.token_sample_spectrum_profile(cap, centered=False),
    )
    # a constant mean 3 in all 10 coordinates: ||mu||^2 = 90 of E||h||^2 = 100
    assert centred["mean_share"].iloc[2] == pytest.approx(0.9, abs=0.02)
    assert centred["mean_share"].iloc[0] < 0.05
    assert raw["n_spikes"].iloc[2] == 1 and centred["n_spikes"].iloc[2] == 0


def test_weighted_pr_with_unit_weights_is_the_plain_pr():
    x = np.random.default_rng(4).standard_normal((50, 80)) * np.linspace(0.2, 2, 80)
    for centered in (True, False):
        plain = spectra.participation_ratio(layer_spectra.sample_eigvals(x, centered))
        weighted = layer_spectra.weighted_participation_ratio(x @ x.T, np.ones(50), centered)
        assert weighted == pytest.approx(plain, rel=1e-10)
    # integer weights = duplicated rows
    w = np.random.default_rng(5).integers(0, 3, 50)
    duplicated = np.repeat(x, w, axis=0)
    assert layer_spectra.weighted_participation_ratio(x @ x.T, w) == pytest.approx(
        spectra.participation_ratio(layer_spectra.sample_eigvals(duplicated)), rel=1e-10
    )


def test_prompt_bootstrap_spread_matches_the_spread_across_independent_captures():
    """The prompt bootstrap's s.d. of the PR is within 0.8-1.25 of its s.d. over fresh samples with the same
    prompt correlation (60 prompts of 8 tokens, intra-prompt correlation 0.7); resampling tokens instead, as if
    they were independent, gives about half (measured: 1.11 and 0.51 here, 1.03-1.11 and 0.49-0.52 over five
    blocks of seeds). Draws are paired across depths: the second depth is the first scaled, so its PR draws are the same."""
    n_prompts, per_prompt, d, rho = 60, 8, 8, 0.7
    scale = np.linspace(0.5, 1.5, d)

    def tokens(seed):
        clustered = synthetic.clustered_tokens(n_prompts, per_prompt, d, rho=rho, seed=seed)
        return clustered.x * scale, clustered

    def capture(seed, by_token=False):
        x, clustered = tokens(seed)
        ids = np.arange(len(x)) if by_token else clustered.prompt_ids
        states = np.stack([x, 0.5 * x])
        return synthetic.as_capture(states, ids, clustered.positions + 1, n_vectors=len(x))

    fresh = np.std(
        [spectra.participation_ratio(layer_spectra.sample_eigvals(tokens(s)[0])) for s in range(1000, 1600)],
        ddof=1,
    )
    boot = [layer_spectra.participation_ratio_draws(capture(s), n_boot=200, seed=s) for s in range(10)]
    ratio = np.mean([b.draws[:, 0].std(ddof=1) for b in boot]) / fresh
    assert 0.8 <= ratio <= 1.25, ratio
    by_token = [
        layer_spectra.participation_ratio_draws(capture(s, True), n_boot=200, seed=s) for s in range(4)
    ]
    assert np.mean([b.draws[:, 0].std(ddof=1) for b in by_token]) / fresh < 0.7  # too narrow
    b = boot[0]
    assert b.n_prompts == n_prompts and b.draws.shape == (200, 2)
    assert b.estimate[0] == pytest.approx(
        spectra.participation_ratio(layer_spectra.sample_eigvals(tokens(0)[0]))
    )
    np.testing.assert_allclose(b.estimate[1], b.estimate[0])  # PR is scale-free
    np.testing.assert_allclose(b.draws[:, 1], b.draws[:, 0])  # the same prompts drawn at both depths


def test_depth_contrast_recovers_a_planted_ratio_and_refuses_one_sided_windows():
    gamma = np.arange(11) / 10
    values = np.where(gamma > 0.42, 20.0, 40.0)
    values[0], values[-1] = 1e6, 1e-6  # edge depths are left out
    contrast = layer_spectra.depth_contrast(gamma, values)
    assert contrast.ratio == pytest.approx(0.5) and (contrast.n_before, contrast.n_after) == (4, 5)
    draws = values * np.exp(np.random.default_rng(0).normal(0, 0.05, (200, 11)))
    assert contrast.ci == pytest.approx((0.5, 0.5))
    low, high = layer_spectra.depth_contrast(gamma, values, draws).ci
    assert low < 0.5 < high and high - low < 0.2
    with pytest.raises(lb.InvalidInputError, match="both sides"):
        layer_spectra.depth_contrast(gamma, values, split=0.95)


def test_position_share_sees_the_sink_owning_the_variance():
    cap = _capture_with_sink()
    share = layer_spectra.position_share(cap, 2)
    assert share > 0.8  # 1 token in 8 owns most of the variance (the rest: the others' offset from the mean)
    assert layer_spectra.position_share(cap, 2, positions=(3,)) < 0.05


def test_pr_contrast_sees_a_planted_concentration_after_the_split():
    """Depths after gamma = 0.42 put half the variance in 2 of 16 directions: the PR falls; the null does not."""
    rng = np.random.default_rng(6)
    n_prompts, per_prompt, d = 80, 4, 16
    base = rng.standard_normal((9, n_prompts * per_prompt, d))
    gamma = np.arange(9) / 8
    concentrated = base.copy()
    concentrated[gamma > 0.42, :, :2] *= 4.0
    ids, positions = (
        np.repeat(np.arange(n_prompts), per_prompt),
        np.tile(np.arange(1, per_prompt + 1), n_prompts),
    )
    planted = layer_spectra.pr_contrast(synthetic.as_capture(concentrated, ids, positions, n_vectors=320))
    null = layer_spectra.pr_contrast(synthetic.as_capture(base, ids, positions, n_vectors=320))
    assert planted.ci[1] < 0.5  # PR of 16 -> about (14 + 32)^2 / (14 + 512) ~ 4
    assert null.ci[0] < 1.0 < null.ci[1]


def test_batched_pr_matches_one_draw_at_a_time():
    x = np.random.default_rng(7).standard_normal((30, 50)) * np.linspace(0.1, 3, 50) + 1.0
    weights = np.random.default_rng(8).integers(0, 4, (6, 30)).astype(float)
    gram = x @ x.T
    for centered in (True, False):
        batched = layer_spectra._batched_participation_ratio(gram, weights, centered)
        single = [layer_spectra.weighted_participation_ratio(gram, w, centered) for w in weights]
        np.testing.assert_allclose(batched, single, rtol=1e-9)


def test_profile_reads_a_dominant_coordinate_and_the_uncentred_pr():
    rng = np.random.default_rng(9)
    states = rng.standard_normal((2, 300, 12)) + 2.0
    states[1, :, 5] *= 30.0
    cap = synthetic.as_capture(states, positions=np.arange(300) % 3 + 1, n_vectors=300)
    profile = layer_spectra.token_sample_spectrum_profile(cap)
    assert profile["top_coordinate"].iloc[1] == pytest.approx(900, rel=0.3)
    assert profile["top_coordinate"].iloc[0] < 2
    raw = layer_spectra.token_sample_spectrum_profile(cap, centered=False)
    np.testing.assert_allclose(profile["pr_uncentred"], raw["participation_ratio"], rtol=1e-9)


# --- jackknife contrasts and spike counts with intervals -------------------------------------------------


def _paired_capture(seed: int, scales_after: np.ndarray, n_prompts: int, per_prompt: int, rho: float):
    """Prompt-clustered tokens, isotropic at depths gamma <= 0.42 and scaled by ``sqrt(scales_after)`` after:
    the same tokens at every depth, so the population PR (effective rank) ratio is known exactly."""
    d = len(scales_after)
    clustered = synthetic.clustered_tokens(n_prompts, per_prompt, d, rho, seed=seed)
    gamma = np.arange(9) / 8
    states = np.stack([clustered.x * (np.sqrt(scales_after) if g > 0.42 else 1.0) for g in gamma])
    n = n_prompts * per_prompt
    return synthetic.as_capture(states, clustered.prompt_ids, clustered.positions + 1, n_vectors=n)


def _population_pr(s: np.ndarray) -> float:
    return float(s.sum() ** 2 / np.sum(s**2))


def test_jackknife_pr_interval_covers_the_population_ratio_at_the_nominal_rate():
    scales = np.r_[4.0, 4.0, np.ones(10)]
    truth = _population_pr(scales) / 12.0  # 324 / 42 / 12 = 0.643
    covered, inside = 0, 0
    for seed in range(60):
        contrast = layer_spectra.pr_contrast(_paired_capture(seed, scales, 60, 8, rho=0.3))
        covered += contrast.ci[0] <= truth <= contrast.ci[1]
        inside += contrast.ci[0] <= contrast.ratio <= contrast.ci[1]
    assert inside == 60
    assert 0.85 <= covered / 60 <= 1.0


def test_effective_rank_contrast_covers_its_population_ratio():
    scales = np.r_[4.0, 4.0, np.ones(10)]
    p = scales / scales.sum()
    truth = float(np.exp(-np.sum(p * np.log(p)))) / 12.0
    covered = 0
    for seed in range(30):
        contrast = layer_spectra.effective_rank_contrast(_paired_capture(seed, scales, 60, 8, rho=0.3))
        assert contrast.ci[0] <= contrast.ratio <= contrast.ci[1]
        covered += contrast.ci[0] <= truth <= contrast.ci[1]
    assert covered >= 25  # nominal 95 %: 28.5 of 30


def test_contrasts_contain_their_estimate_when_n_is_close_to_d():
    """120 tokens in 100 dimensions: the prompt bootstrap's draws run below the PR; the jackknife is centred."""
    scales = np.r_[np.full(5, 6.0), np.ones(95)]
    for seed in range(3):
        cap = _paired_capture(seed, scales, 30, 4, rho=0.2)
        for contrast in (
            layer_spectra.pr_contrast(cap),
            layer_spectra.effective_rank_contrast(cap, n_groups=None),
        ):
            assert contrast.ci[0] < contrast.ratio < contrast.ci[1] and contrast.ratio < 1
            assert (contrast.n_before, contrast.n_after) == (3, 4) and contrast.level == 0.95
    with pytest.raises(lb.InvalidInputError, match="n_groups"):
        layer_spectra.effective_rank_contrast(cap, n_groups=2)


def test_jackknife_contrast_of_exact_values_is_a_point_and_bad_shapes_are_refused():
    gamma = np.arange(11) / 10
    values = np.where(gamma > 0.42, 20.0, 40.0)
    contrast = layer_spectra.jackknife_contrast(gamma, values, np.tile(values, (5, 1)))
    assert contrast.ratio == pytest.approx(0.5) and contrast.ci == pytest.approx((0.5, 0.5))
    with pytest.raises(lb.InvalidInputError, match="leave_out"):
        layer_spectra.jackknife_contrast(gamma, values, values[None, :])


@pytest.mark.parametrize("centered", [True, False])
def test_weighted_eigvals_are_those_of_the_sample_with_repeated_rows(centered):
    x = np.random.default_rng(11).standard_normal((40, 25)) * np.linspace(0.5, 2, 25) + 1.0
    w = np.random.default_rng(12).integers(0, 3, 40)
    got = layer_spectra.weighted_eigvals(x @ x.T, w.astype(float), 25, centered)
    expected = layer_spectra.sample_eigvals(np.repeat(x, w, axis=0), centered)
    np.testing.assert_allclose(got, expected, atol=1e-9 * expected[0])


def _spiked_after(seed: int, spikes: list[float], d: int = 60, scales: np.ndarray | None = None):
    rng = np.random.default_rng(seed)
    clustered = synthetic.clustered_tokens(100, 4, d, 0.1, seed=seed)
    u = synthetic.random_orthonormal(d, len(spikes), rng)
    planted = clustered.x + (rng.standard_normal((400, len(spikes))) * np.sqrt(spikes)) @ u.T
    base = clustered.x if scales is None else clustered.x * np.sqrt(scales)
    states = np.stack([planted if g > 0.42 else base for g in np.arange(9) / 8])
    return synthetic.as_capture(states, clustered.prompt_ids, clustered.positions + 1, n_vectors=400)


def test_spike_contrast_counts_planted_spikes_after_the_split_with_intervals_around_the_counts():
    result = layer_spectra.spike_contrast(_spiked_after(0, [30.0, 20.0, 12.0]), n_boot=20)
    assert (result.before, result.after) == (0.0, 3.0) and result.settled and result.unsettled == 0
    assert result.before_ci[0] <= result.before <= result.before_ci[1]
    assert result.after_ci[0] <= result.after <= result.after_ci[1] and result.after_ci[1] < 6
    assert np.isnan(result.counts[0]) and np.isnan(result.counts[-1]) and result.counts[5] == 3
    low, high = result.difference_ci  # paired draws: after - before, around the estimate 3
    assert 0 < low <= 3.0 <= high < 6
    assert (result.n_before, result.n_after, result.n_boot) == (3, 4, 20)
    ci = (
        result.counts_ci
    )  # every interior depth's count has its interval, around its count; the edges have none
    assert ci.shape == (9, 2) and np.isnan(ci[[0, -1]]).all()
    inside = slice(1, -1)
    assert (ci[inside, 0] <= result.counts[inside]).all() and (result.counts[inside] <= ci[inside, 1]).all()
    assert (ci[inside, 0] >= 0).all() and (ci[5:8, 0] >= 1).all() and (ci[1:4, 1] < 3).all()


def test_spike_contrast_refuses_too_few_draws_and_one_sided_windows():
    cap = _spiked_after(1, [30.0])
    with pytest.raises(lb.InvalidInputError, match="n_boot"):
        layer_spectra.spike_contrast(cap, n_boot=5)
    with pytest.raises(lb.InvalidInputError, match="both sides"):
        layer_spectra.spike_contrast(cap, split=0.95, n_boot=10)


def test_spike_contrast_of_samples_refuses_samples_that_do_not_match_their_prompt_ids():
    from latentbook.errors import InvalidInputError

    rng = np.random.default_rng(0)
    samples = rng.standard_normal((6, 40, 8))
    ids = np.repeat(np.arange(10), 4)
    gamma = np.arange(6) / 5
    with pytest.raises(InvalidInputError, match="one per prompt id"):
        layer_spectra.spike_contrast_of_samples(samples, ids[:-1], gamma, n_boot=10)
    with pytest.raises(InvalidInputError, match="at least 3|3 or more"):
        layer_spectra.spike_contrast_of_samples(samples, np.repeat([0, 1], 20), gamma, n_boot=10)
    result = layer_spectra.spike_contrast_of_samples(samples, ids, gamma, n_boot=10)
    assert result.before_ci[0] <= result.before <= result.before_ci[1]
    assert result.after_ci[0] <= result.after <= result.after_ci[1]


# --- the cross-prompt participation ratio ------------------------------------------------------------------


def _brute_cross_prompt_pr(x: np.ndarray, ids: np.ndarray) -> float:
    """The two sums over pairs of tokens of different prompts, one pair at a time."""
    numerator = denominator = 0.0
    for i in range(len(x)):
        for j in range(len(x)):
            if ids[i] != ids[j]:
                numerator += (x[i] @ x[i]) * (x[j] @ x[j])
                denominator += (x[i] @ x[j]) ** 2
    return numerator / denominator


def test_cross_prompt_pr_and_its_leave_one_out_values_equal_the_pair_sums():
    rng = np.random.default_rng(3)
    ids = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 4, 4])
    x = rng.standard_normal((12, 5)) * [3.0, 1.0, 1.0, 0.5, 0.2] + 2.0
    centred = x - x.mean(0)
    assert layer_spectra.cross_prompt_participation_ratio(x, ids) == pytest.approx(
        _brute_cross_prompt_pr(centred, ids), rel=1e-12
    )
    assert layer_spectra.cross_prompt_participation_ratio(x, ids, centered=False) == pytest.approx(
        _brute_cross_prompt_pr(x, ids), rel=1e-12
    )
    _, leave_out = layer_spectra._cross_prompt_pr(x, ids, True)
    for g in range(5):  # each prompt left out, the centring that of the whole sample
        keep = ids != g
        assert leave_out[g] == pytest.approx(_brute_cross_prompt_pr(centred[keep], ids[keep]), rel=1e-12)


def test_cross_prompt_pr_is_unbiased_where_the_plug_in_pr_falls():
    """n = 120 tokens (30 prompts of 4, prompt share 0.2) in d = 100 with a power-law spectrum, PR ~ 40: the
    plug-in PR reads about PR / (1 + PR / n) (a quarter low), the cross-prompt PR the population's."""
    d, lam = 100, np.arange(1, 101) ** -0.7
    truth = lam.sum() ** 2 / np.sum(lam**2)
    plug_in, cross = [], []
    for seed in range(40):
        c = synthetic.clustered_tokens(30, 4, d, 0.2, seed=seed)
        x = c.x * np.sqrt(lam)
        plug_in.append(spectra.participation_ratio(spectra.sample_eigvals(x)))
        cross.append(layer_spectra.cross_prompt_participation_ratio(x, c.prompt_ids))
    assert np.mean(plug_in) / truth < 0.8
    assert np.mean(cross) / truth == pytest.approx(1.0, abs=0.05)
    with pytest.raises(lb.InvalidInputError, match="3 or more"):
        layer_spectra.cross_prompt_participation_ratio(x[:8], np.repeat([0, 1], 4))
    with pytest.raises(lb.InvalidInputError, match="one per prompt id"):
        layer_spectra.cross_prompt_participation_ratio(x[:10], c.prompt_ids)
