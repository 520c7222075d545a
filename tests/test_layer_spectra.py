"""Layer spectra from the token sample: sink removal, Gaussian reference, prompt bootstrap of the PR, contrasts."""

from __future__ import annotations

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import bulk_fit, layer_spectra, ranks, spectral_contrasts, synthetic
from latentbook.analysis.standardisation import standardise as omega_standardise


def test_mp_fit_handles_a_rank_deficient_heavy_tailed_spectrum():
    """N < d and a power-law spectrum: the zero eigenvalues of the atom never enter the bulk (regression)."""
    rng = np.random.default_rng(0)
    scales = np.arange(1, 401) ** -1.0
    x = rng.standard_normal((300, 400)) * np.sqrt(scales)
    lam = layer_spectra.sample_eigvals(x)
    fit = bulk_fit.mp_fit(lam, 299)
    assert np.all(fit.bulk > 0) and np.isfinite(fit.ks) and fit.sigma2 > 0
    assert np.sum(lam > fit.threshold) > 10  # a power law is nothing like MP: many eigenvalues leave the bulk
    assert fit.n_spikes >= 10  # 17 above the fitted cut; the local edge test confirms the top 10


def test_mp_fit_counts_planted_spikes_when_n_is_below_d():
    planted = synthetic.spiked_covariance(300, 400, [40.0, 30.0, 20.0], seed=1)
    fit = bulk_fit.mp_fit(layer_spectra.sample_eigvals(planted.x), 299)
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
    assert ranks.participation_ratio(cap.eigvals(4)) < 1.5
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
        plain = ranks.participation_ratio(layer_spectra.sample_eigvals(x, centered))
        weighted = layer_spectra.weighted_participation_ratio(x @ x.T, np.ones(50), centered)
        assert weighted == pytest.approx(plain, rel=1e-10)
    # integer weights = duplicated rows
    w = np.random.default_rng(5).integers(0, 3, 50)
    duplicated = np.repeat(x, w, axis=0)
    assert layer_spectra.weighted_participation_ratio(x @ x.T, w) == pytest.approx(
        ranks.participation_ratio(layer_spectra.sample_eigvals(duplicated)), rel=1e-10
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
        [ranks.participation_ratio(layer_spectra.sample_eigvals(tokens(s)[0])) for s in range(1000, 1600)],
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
        ranks.participation_ratio(layer_spectra.sample_eigvals(tokens(0)[0]))
    )
    np.testing.assert_allclose(b.estimate[1], b.estimate[0])  # PR is scale-free
    np.testing.assert_allclose(b.draws[:, 1], b.draws[:, 0])  # the same prompts drawn at both depths


def test_depth_contrast_recovers_a_planted_ratio_and_refuses_one_sided_windows():
    gamma = np.arange(11) / 10
    values = np.where(gamma > 0.42, 20.0, 40.0)
    values[0], values[-1] = 1e6, 1e-6  # edge depths are left out
    contrast = spectral_contrasts.depth_contrast(gamma, values)
    assert contrast.ratio == pytest.approx(0.5) and (contrast.n_before, contrast.n_after) == (4, 5)
    draws = values * np.exp(np.random.default_rng(0).normal(0, 0.05, (200, 11)))
    assert contrast.ci == pytest.approx((0.5, 0.5))
    low, high = spectral_contrasts.depth_contrast(gamma, values, draws).ci
    assert low < 0.5 < high and high - low < 0.2
    with pytest.raises(lb.InvalidInputError, match="both sides"):
        spectral_contrasts.depth_contrast(gamma, values, split=0.95)


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
    planted = spectral_contrasts.pr_contrast(
        synthetic.as_capture(concentrated, ids, positions, n_vectors=320)
    )
    null = spectral_contrasts.pr_contrast(synthetic.as_capture(base, ids, positions, n_vectors=320))
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
        contrast = spectral_contrasts.pr_contrast(_paired_capture(seed, scales, 60, 8, rho=0.3))
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
        contrast = spectral_contrasts.effective_rank_contrast(_paired_capture(seed, scales, 60, 8, rho=0.3))
        assert contrast.ci[0] <= contrast.ratio <= contrast.ci[1]
        covered += contrast.ci[0] <= truth <= contrast.ci[1]
    assert covered >= 25  # nominal 95 %: 28.5 of 30


def test_contrasts_contain_their_estimate_when_n_is_close_to_d():
    """120 tokens in 100 dimensions: the prompt bootstrap's draws run below the PR; the jackknife is centred."""
    scales = np.r_[np.full(5, 6.0), np.ones(95)]
    for seed in range(3):
        cap = _paired_capture(seed, scales, 30, 4, rho=0.2)
        for contrast in (
            spectral_contrasts.pr_contrast(cap),
            spectral_contrasts.effective_rank_contrast(cap, n_groups=None),
        ):
            assert contrast.ci[0] < contrast.ratio < contrast.ci[1] and contrast.ratio < 1
            assert (contrast.n_before, contrast.n_after) == (3, 4) and contrast.level == 0.95
    with pytest.raises(lb.InvalidInputError, match="n_groups"):
        spectral_contrasts.effective_rank_contrast(cap, n_groups=2)


def test_jackknife_contrast_of_exact_values_is_a_point_and_bad_shapes_are_refused():
    gamma = np.arange(11) / 10
    values = np.where(gamma > 0.42, 20.0, 40.0)
    contrast = spectral_contrasts.jackknife_contrast(gamma, values, np.tile(values, (5, 1)))
    assert contrast.ratio == pytest.approx(0.5) and contrast.ci == pytest.approx((0.5, 0.5))
    with pytest.raises(lb.InvalidInputError, match="leave_out"):
        spectral_contrasts.jackknife_contrast(gamma, values, values[None, :])


@pytest.mark.parametrize("centered", [True, False])
def test_weighted_eigvals_are_those_of_the_sample_with_repeated_rows(centered):
    x = np.random.default_rng(11).standard_normal((40, 25)) * np.linspace(0.5, 2, 25) + 1.0
    w = np.random.default_rng(12).integers(0, 3, 40)
    got = spectral_contrasts.weighted_eigvals(x @ x.T, w.astype(float), 25, centered)
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
    result = spectral_contrasts.spike_contrast(_spiked_after(0, [30.0, 20.0, 12.0]), n_boot=20)
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
        spectral_contrasts.spike_contrast(cap, n_boot=5)
    with pytest.raises(lb.InvalidInputError, match="both sides"):
        spectral_contrasts.spike_contrast(cap, split=0.95, n_boot=10)


def test_spike_contrast_of_samples_refuses_samples_that_do_not_match_their_prompt_ids():
    from latentbook.errors import InvalidInputError

    rng = np.random.default_rng(0)
    samples = rng.standard_normal((6, 40, 8))
    ids = np.repeat(np.arange(10), 4)
    gamma = np.arange(6) / 5
    with pytest.raises(InvalidInputError, match="one per prompt id"):
        spectral_contrasts.spike_contrast_of_samples(samples, ids[:-1], gamma, n_boot=10)
    with pytest.raises(InvalidInputError, match="at least 3|3 or more"):
        spectral_contrasts.spike_contrast_of_samples(samples, np.repeat([0, 1], 20), gamma, n_boot=10)
    result = spectral_contrasts.spike_contrast_of_samples(samples, ids, gamma, n_boot=10)
    assert result.before_ci[0] <= result.before <= result.before_ci[1]
    assert result.after_ci[0] <= result.after <= result.after_ci[1]


# --- the cross-prompt participation ratio ------------------------------------------------------------------


def _pair_sums_cross_prompt_pr(x: np.ndarray, ids: np.ndarray) -> float:
    """``_brute_cross_prompt_pr`` with the pair sums as masked array sums."""
    different = ids[:, None] != ids[None, :]
    norms = np.sum(x * x, axis=1)
    return float(np.sum(np.outer(norms, norms)[different]) / np.sum(((x @ x.T) ** 2)[different]))


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
    assert spectral_contrasts.cross_prompt_participation_ratio(x, ids) == pytest.approx(
        _brute_cross_prompt_pr(centred, ids), rel=1e-12
    )
    assert spectral_contrasts.cross_prompt_participation_ratio(x, ids, centered=False) == pytest.approx(
        _brute_cross_prompt_pr(x, ids), rel=1e-12
    )
    _, leave_out = spectral_contrasts._cross_prompt_pr(x, ids, True)
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
        plug_in.append(ranks.participation_ratio(ranks.sample_eigvals(x)))
        cross.append(spectral_contrasts.cross_prompt_participation_ratio(x, c.prompt_ids))
    assert np.mean(plug_in) / truth < 0.8
    assert np.mean(cross) / truth == pytest.approx(1.0, abs=0.05)
    with pytest.raises(lb.InvalidInputError, match="3 or more"):
        spectral_contrasts.cross_prompt_participation_ratio(x[:8], np.repeat([0, 1], 4))
    with pytest.raises(lb.InvalidInputError, match="one per prompt id"):
        spectral_contrasts.cross_prompt_participation_ratio(x[:10], c.prompt_ids)


# --- explicit recomputations and validation boundaries ------------------------------------------------------


def _small_capture(seed: int = 0, n_prompts: int = 12, per_prompt: int = 4, d: int = 6, n_depths: int = 5):
    """Gaussian tokens with a mean offset, positions 0..per_prompt-1, position 0 ten times larger."""
    rng = np.random.default_rng(seed)
    n = n_prompts * per_prompt
    states = rng.standard_normal((n_depths, n, d)) * np.linspace(0.5, 2.0, d) + 1.5
    positions = np.tile(np.arange(per_prompt), n_prompts)
    states[:, positions == 0] *= 10.0
    return synthetic.as_capture(states, np.repeat(np.arange(n_prompts), per_prompt), positions, n_vectors=n)


def test_spectrum_summary_reports_the_fit_and_the_ranks_under_their_names():
    """Three planted spikes: both counts find them; every value is the named estimator's, at the alpha given."""
    planted = synthetic.spiked_covariance(200, 60, [8.0, 5.0, 3.5], seed=2)
    lam = layer_spectra.sample_eigvals(planted.x)
    got = layer_spectra.spectrum_summary(lam, 150.0)
    assert got["settled"] and got["n_spikes"] == 3 and got["kn_spikes"] == 3
    for alpha in (0.01, 0.3):
        fit = bulk_fit.mp_fit(lam, 150.0, alpha=alpha)
        got = layer_spectra.spectrum_summary(lam, 150.0, alpha)
        assert (got["sigma2"], got["edge"], got["ks"]) == (fit.sigma2, fit.edges[1], fit.ks)
        assert got["n_eff"] == fit.n_samples <= 150.0 and got["n_spikes"] == fit.n_spikes
        assert got["kn_spikes"] == ranks.kritchman_nadler(lam, fit.n_samples, alpha).n_spikes
    assert got["effective_rank"] == ranks.effective_rank(lam)
    assert got["participation_ratio"] == ranks.participation_ratio(lam)
    assert got["stable_rank"] == ranks.stable_rank(lam)
    assert (
        got["top_over_edge"] == pytest.approx(lam.max() / got["edge"], rel=1e-12) and got["top_over_edge"] > 1
    )
    assert layer_spectra.spectrum_summary(lam, 150.0) == layer_spectra.spectrum_summary(lam, 150.0, 0.01)
    assert {type(v) for v in got.values()} <= {bool, int, float}


def test_gaussian_reference_is_the_summary_of_independent_gaussian_samples():
    n, d = 120, 30
    for centered in (True, False):
        for alpha in (0.01, 0.3):
            frame = layer_spectra.gaussian_reference(n, d, n_rep=2, centered=centered, alpha=alpha, seed=7)
            assert list(frame.columns[:3]) == ["rep", "n", "d"] and len(frame) == 2
            for rep in range(2):
                x = synthetic.gaussian(n, d, seed=7 + rep)
                expected = layer_spectra.spectrum_summary(
                    layer_spectra.sample_eigvals(x, centered), n - 1 if centered else n, alpha
                )
                row = frame.iloc[rep]
                assert (row["rep"], row["n"], row["d"]) == (rep, n, d)
                for key, value in expected.items():
                    assert row[key] == pytest.approx(value, rel=1e-12), (centered, alpha, key)
    default = layer_spectra.gaussian_reference(n, d)
    explicit = layer_spectra.gaussian_reference(n, d, n_rep=5, centered=True, alpha=0.01)  # seed: any
    assert len(default) == 5 and default.equals(explicit)
    assert default["ks"].nunique() == 5  # each replicate its own sample
    assert len(layer_spectra.gaussian_reference(n, d, n_rep=1)) == 1
    for bad in (0, 1.5):
        with pytest.raises(lb.InvalidInputError, match="n_rep must be a positive integer"):
            layer_spectra.gaussian_reference(n, d, n_rep=bad)


def test_gaussian_reference_uses_the_degrees_of_freedom_of_the_covariance():
    """Uncentred a sample's covariance has n degrees of freedom, centred n - 1: fits bounded by them."""
    n, d = 60, 50
    frame = layer_spectra.gaussian_reference(n, d, n_rep=3, seed=1)
    raw = layer_spectra.gaussian_reference(n, d, n_rep=3, centered=False, seed=1)
    assert (frame["n_eff"] <= n - 1 + 1e-9).all() and (raw["n_eff"] <= n + 1e-9).all()
    for rep in range(3):
        x = synthetic.gaussian(n, d, seed=1 + rep)
        assert frame["n_eff"].iloc[rep] == bulk_fit.mp_fit(layer_spectra.sample_eigvals(x), n - 1).n_samples
        assert frame["sigma2"].iloc[rep] == bulk_fit.mp_fit(layer_spectra.sample_eigvals(x), n - 1).sigma2


def test_token_sample_spectrum_profile_rows_are_explicit_summaries_of_the_sink_free_sample():
    cap = _small_capture(3, n_prompts=30, per_prompt=4, d=8, n_depths=3)
    keep = cap.vectors.positions != 0
    for centered in (True, False):
        for alpha in (0.01, 0.4):
            profile = layer_spectra.token_sample_spectrum_profile(cap, centered=centered, alpha=alpha)
            assert list(profile.columns[:4]) == ["layer", "gamma", "n", "d"]
            for index in range(3):
                x = np.asarray(cap.token_vectors(index), dtype=np.float64)[keep]
                lam = layer_spectra.sample_eigvals(x, centered)
                expected = layer_spectra.spectrum_summary(lam, len(x) - 1 if centered else len(x), alpha)
                row = profile.iloc[index]
                assert (row["layer"], row["gamma"], row["n"], row["d"]) == (index, index / 2, 90, 8)
                for key, value in expected.items():
                    assert row[key] == pytest.approx(value, rel=1e-9), (centered, alpha, key)
                variances = x.var(axis=0)
                assert row["top_coordinate"] == pytest.approx(
                    variances.max() / np.median(variances), rel=1e-9
                )
                second = x.T @ x / len(x)
                assert row["pr_uncentred"] == pytest.approx(
                    np.trace(second) ** 2 / np.sum(second**2), rel=1e-9
                )


def test_token_sample_keeps_prompt_ids_and_layer():
    cap = _small_capture(1)
    sample = layer_spectra.token_sample(cap, 2)
    keep = cap.vectors.positions != 0
    np.testing.assert_array_equal(sample.prompt_ids, np.asarray(cap.vectors.prompt_ids)[keep])
    assert sample.layer == 2 and sample.n_dof == sample.n - 1 == keep.sum() - 1


def test_sample_mask_accepts_three_tokens_and_refuses_two():
    positions = np.array([0, 1, 2, 3, 4, 5])
    cap = synthetic.as_capture(
        np.random.default_rng(0).standard_normal((2, 6, 3)), np.arange(6), positions, n_vectors=6
    )
    keep = layer_spectra.sample_mask(cap, (0, 1, 2))
    np.testing.assert_array_equal(keep, cap.vectors.positions > 2)  # the reservoir's order
    with pytest.raises(
        lb.InvalidInputError,
        match=r"^Only 2 sampled tokens remain after excluding positions \[0, 1, 2, 3\]: "
        r"capture with a larger n_vectors or exclude fewer positions\.$",
    ):
        layer_spectra.sample_mask(cap, (0, 1, 2, 3))


def test_position_share_is_the_explicit_variance_share():
    cap = _small_capture(4)
    x = np.asarray(cap.token_vectors(1), dtype=np.float64)
    spread = np.sum((x - x.mean(0)) ** 2, axis=1)
    positions = cap.vectors.positions
    for chosen in ((0,), (1, 3), ()):
        expected = spread[np.isin(positions, chosen)].sum() / spread.sum()
        assert layer_spectra.position_share(cap, 1, chosen) == pytest.approx(expected, rel=1e-12, abs=0)


def test_depth_windows_put_the_split_depth_before():
    before, after = spectral_contrasts.depth_windows(np.array([0.0, 0.25, 0.5, 0.75, 1.0]), 0.5)
    np.testing.assert_array_equal(before, [1, 2])
    np.testing.assert_array_equal(after, [3])


def test_depth_contrast_with_one_depth_each_side_and_its_validation():
    gamma = np.array([0.0, 0.25, 0.75, 1.0])
    values = np.array([5.0, 2.0, 3.0, 7.0])
    contrast = spectral_contrasts.depth_contrast(gamma, values, split=0.5, level=0.8)
    assert contrast.ratio == pytest.approx(1.5) and (contrast.n_before, contrast.n_after) == (1, 1)
    assert contrast.split == 0.5 and contrast.level == 0.8
    for bad in (np.array([5.0, 0.0, 3.0, 7.0]), np.array([5.0, -2.0, 3.0, 7.0]), np.ones(3)):
        with pytest.raises(lb.InvalidInputError, match="values must be positive, one per depth"):
            spectral_contrasts.depth_contrast(gamma, bad, split=0.5)
    gamma = np.arange(7) / 6
    values = np.exp(np.random.default_rng(1).normal(size=7))
    draws = values * np.exp(np.random.default_rng(2).normal(0, 0.3, (50, 7)))
    before, after = gamma <= 0.42, gamma > 0.42
    before[0], after[-1] = False, False
    ratios = np.exp(np.log(draws[:, after]).mean(1) - np.log(draws[:, before]).mean(1))
    got = spectral_contrasts.depth_contrast(gamma, values, draws, level=0.9)
    assert got.ci == pytest.approx(tuple(np.percentile(ratios, [5, 95])), rel=1e-12)
    assert got.ratio == pytest.approx(np.exp(np.log(values[after]).mean() - np.log(values[before]).mean()))


def _jackknife_by_hand(gamma, values, leave_out, split, level, bias_corrected=False):
    from scipy import stats

    before = (gamma > 0) & (gamma < gamma.max()) & (gamma <= split)
    after = (gamma > 0) & (gamma < gamma.max()) & (gamma > split)
    theta = np.log(values[after]).mean() - np.log(values[before]).mean()
    thetas = np.log(leave_out[:, after]).mean(1) - np.log(leave_out[:, before]).mean(1)
    g = len(thetas)
    se = np.sqrt((g - 1) / g * np.sum((thetas - thetas.mean()) ** 2))
    half = stats.t.ppf((1 + level) / 2, g - 1) * se
    if bias_corrected:
        theta = g * theta - (g - 1) * thetas.mean()
    return np.exp(theta), (np.exp(theta - half), np.exp(theta + half))


def test_jackknife_contrast_equals_the_interval_computed_by_hand():
    rng = np.random.default_rng(5)
    gamma = np.arange(9) / 8
    values = np.exp(rng.normal(size=9))
    for g, level, split in ((3, 0.95, 0.42), (4, 0.8, 0.6)):
        leave_out = values * np.exp(rng.normal(0, 0.2, (g, 9))) * 0.1  # values below 1 are fine
        got = spectral_contrasts.jackknife_contrast(gamma, values, leave_out, split, level)
        ratio, ci = _jackknife_by_hand(gamma, values, leave_out, split, level)
        assert got.ratio == pytest.approx(ratio, rel=1e-12) and got.ci == pytest.approx(ci, rel=1e-12)
        corrected = spectral_contrasts.jackknife_contrast(
            gamma, values, leave_out, split, level, bias_corrected=True
        )
        ratio, ci = _jackknife_by_hand(gamma, values, leave_out, split, level, bias_corrected=True)
        assert corrected.ratio == pytest.approx(ratio, rel=1e-12) and corrected.ci == pytest.approx(
            ci, rel=1e-12
        )
        assert corrected.ratio != pytest.approx(got.ratio, rel=1e-3)  # the leave-outs are far from the values
        assert np.log(corrected.ci[1] / corrected.ci[0]) == pytest.approx(np.log(got.ci[1] / got.ci[0]))
        assert (got.split, got.level) == (split, level)
        assert (got.n_before, got.n_after) == (
            int(np.sum((gamma > 0) & (gamma <= split))),
            8 - 1 - (int(np.sum((gamma > 0) & (gamma <= split)))),
        )


def test_the_bias_correction_removes_a_bias_that_falls_like_one_over_n_exactly():
    """A statistic whose log reads ``theta_l + c_l / n`` on ``n`` tokens: the plain ratio carries the bias,
    Quenouille's ``G theta - (G - 1) mean theta_(-)`` over leave-a-group-out samples of ``n (G - 1) / G`` removes it."""
    gamma = np.arange(9) / 8
    truth = np.log(np.where(gamma > 0.42, 12.0, 30.0))
    c = np.linspace(-4.0, 9.0, 9)  # a bias of another size at every depth, so it does not cancel in the ratio
    n, g = 200, 10
    leave_n = np.full((g, 1), n * (g - 1) / g)  # equal groups
    values = np.exp(truth + c / n)
    leave_out = np.exp(truth + c / leave_n)
    plain = spectral_contrasts.jackknife_contrast(gamma, values, leave_out)
    corrected = spectral_contrasts.jackknife_contrast(gamma, values, leave_out, bias_corrected=True)
    assert corrected.ratio == pytest.approx(12.0 / 30.0, rel=1e-12)
    assert plain.ratio != pytest.approx(12.0 / 30.0, rel=1e-2)
    assert corrected.ci == pytest.approx((corrected.ratio, corrected.ratio))  # equal leave-outs: no spread


def test_jackknife_contrast_refuses_bad_levels_and_leave_out_values():
    gamma = np.arange(9) / 8
    values = np.full(9, 2.0)
    leave_out = np.full((4, 9), 2.0)
    for level in (0.0, 1.0, 1.5):
        with pytest.raises(lb.InvalidInputError, match="Need 0 < level < 1 and positive leave-out"):
            spectral_contrasts.jackknife_contrast(gamma, values, leave_out, level=level)
    for bad in (0.0, -1.0):
        zero = leave_out.copy()
        zero[1, 3] = bad
        with pytest.raises(lb.InvalidInputError, match="Need 0 < level < 1 and positive leave-out"):
            spectral_contrasts.jackknife_contrast(gamma, values, zero)
    with pytest.raises(lb.InvalidInputError, match="leave_out must be"):
        spectral_contrasts.jackknife_contrast(gamma, values, np.full((4, 8), 2.0))
    with pytest.raises(lb.InvalidInputError, match="leave_out must be"):
        spectral_contrasts.jackknife_contrast(gamma, values, np.full((2, 9), 2.0))


def test_participation_ratio_draws_equal_explicit_weighted_prs():
    cap = _small_capture(6, n_prompts=10, per_prompt=4, d=5, n_depths=3)
    for exclude, centered in (((0,), True), ((), False), ((0, 2), True)):
        keep = ~np.isin(cap.vectors.positions, exclude)
        result = layer_spectra.participation_ratio_draws(cap, exclude, centered, n_boot=20, seed=4)
        ids = np.asarray(cap.vectors.prompt_ids)[keep]
        _, groups = np.unique(ids, return_inverse=True)
        counts = np.random.default_rng(4).multinomial(10, np.full(10, 0.1), size=20)
        assert result.n_prompts == 10 and result.draws.shape == (20, 3)
        np.testing.assert_array_equal(result.gamma, [0.0, 0.5, 1.0])
        for depth in range(3):
            x = np.asarray(cap.token_vectors(depth), dtype=np.float64)[keep]
            y = x - x.mean(0) if centered else x
            c = y.T @ y
            assert result.estimate[depth] == pytest.approx(np.trace(c) ** 2 / np.sum(c * c), rel=1e-10)
            for row in range(20):
                w = counts[row][groups].astype(float)
                mean = w @ x / w.sum() if centered else np.zeros(x.shape[1])
                cw = (x - mean).T @ ((x - mean) * w[:, None])
                assert result.draws[row, depth] == pytest.approx(
                    np.trace(cw) ** 2 / np.sum(cw * cw), rel=1e-9
                )


def test_participation_ratio_draws_validation_boundaries():
    cap = _small_capture(7, n_prompts=2, per_prompt=4, d=3, n_depths=2)
    assert layer_spectra.participation_ratio_draws(cap, n_boot=20).n_prompts == 2
    for bad in (19, 20.5):
        with pytest.raises(lb.InvalidInputError, match="n_boot must be an integer >= 20"):
            layer_spectra.participation_ratio_draws(cap, n_boot=bad)
    one = _small_capture(7, n_prompts=1, per_prompt=6, d=3, n_depths=2)
    with pytest.raises(
        lb.InvalidInputError,
        match="^The token sample comes from one prompt: resampling prompts is impossible",
    ):
        layer_spectra.participation_ratio_draws(one, n_boot=20)


def test_weighted_eigvals_equal_the_explicit_weighted_covariance():
    """Fractional weights summing below 1, fewer and more tokens than dimensions."""
    rng = np.random.default_rng(13)
    for n, d in ((12, 5), (6, 9)):
        x = rng.standard_normal((n, d)) * np.linspace(0.5, 2, d) + 2.0
        w = rng.random(n) * 0.05
        w[1] = 0.0
        for centered in (True, False):
            total = w.sum()
            m = np.diag(w) / total - (np.outer(w, w) / total**2 if centered else 0.0)
            expected = np.clip(np.linalg.eigvalsh(x.T @ m @ x)[::-1], 0, None)
            got = spectral_contrasts.weighted_eigvals(x @ x.T, w, d, centered)
            assert got.shape == (d,) and (got >= 0).all()
            np.testing.assert_allclose(got, expected, atol=1e-12 * expected[0])
        np.testing.assert_array_equal(
            spectral_contrasts.weighted_eigvals(x @ x.T, w, d),
            spectral_contrasts.weighted_eigvals(x @ x.T, w, d, True),
        )


def test_jackknife_groups_boundaries():
    ids = np.array([5, 5, 9, 7, 7, 7])
    np.testing.assert_array_equal(spectral_contrasts._jackknife_groups(ids, None), [0, 0, 2, 1, 1, 1])
    np.testing.assert_array_equal(spectral_contrasts._jackknife_groups(ids, 3), [0, 0, 2, 1, 1, 1])
    ids = np.repeat(np.arange(7), 2)
    np.testing.assert_array_equal(
        spectral_contrasts._jackknife_groups(ids, 3), np.repeat([0, 1, 2, 0, 1, 2, 0], 2)
    )
    np.testing.assert_array_equal(spectral_contrasts._jackknife_groups(ids, 7), np.repeat(np.arange(7), 2))
    for bad in (2, 8, 3.0):
        with pytest.raises(lb.InvalidInputError, match=r"n_groups must be an integer between 3 and .*\(7\)"):
            spectral_contrasts._jackknife_groups(ids, bad)
    with pytest.raises(lb.InvalidInputError, match="from 0 prompts"):
        spectral_contrasts._jackknife_groups(np.array([], dtype=int), None)
    with pytest.raises(lb.InvalidInputError, match="from 2 prompts"):
        spectral_contrasts._jackknife_groups(np.array([1, 1, 4]), None)


def _paired_samples(seed: int = 0, n_prompts: int = 22, per_prompt: int = 3, d: int = 5):
    rng = np.random.default_rng(seed)
    gamma = np.arange(5) / 4
    x = rng.standard_normal((5, n_prompts * per_prompt, d)) * np.linspace(0.3, 2.0, d) + 1.0
    x[3] *= np.linspace(2.0, 0.5, d)
    ids = np.repeat(np.arange(n_prompts), per_prompt)
    return x, ids, gamma


def test_pr_contrast_of_samples_is_the_jackknife_of_cross_prompt_prs_by_hand():
    x, ids, gamma = _paired_samples(1)
    for centered, level in ((True, 0.95), (False, 0.8)):
        values = np.array([spectral_contrasts.cross_prompt_participation_ratio(v, ids, centered) for v in x])
        leave_out = np.empty((22, 5))
        for depth in range(5):
            y = x[depth] - x[depth].mean(0) if centered else x[depth]
            for g in range(22):
                leave_out[g, depth] = _pair_sums_cross_prompt_pr(y[ids != g], ids[ids != g])
        ratio, ci = _jackknife_by_hand(gamma, values, leave_out, 0.42, level)
        got = spectral_contrasts.pr_contrast_of_samples(x, ids, gamma, centered=centered, level=level)
        assert got.ratio == pytest.approx(ratio, rel=1e-10) and got.ci == pytest.approx(ci, rel=1e-10)
        assert got.level == level
        float32 = spectral_contrasts.pr_contrast_of_samples(
            x.astype(np.float32), ids, gamma, 0.42, centered, level
        )
        exact = spectral_contrasts.pr_contrast_of_samples(
            x.astype(np.float32).astype(np.float64), ids, gamma, 0.42, centered, level
        )
        assert float32.ratio == pytest.approx(exact.ratio, rel=1e-12)
        assert float32.ci == pytest.approx(exact.ci, rel=1e-12)
        called = spectral_contrasts.pr_contrast_of_samples(
            x.astype(np.float32).__getitem__, ids, gamma, 0.42, centered, level
        )
        assert called.ratio == pytest.approx(exact.ratio, rel=1e-12)
        assert called.ci == pytest.approx(exact.ci, rel=1e-12)
    assert spectral_contrasts.pr_contrast_of_samples(
        x, ids, gamma
    ) == spectral_contrasts.pr_contrast_of_samples(x, ids, gamma, 0.42, True, 0.95)


def test_cross_prompt_pr_of_float32_vectors_is_computed_in_float64():
    rng = np.random.default_rng(8)
    ids = np.repeat(np.arange(6), 3)
    x = (rng.standard_normal((18, 4)) + 30.0).astype(np.float32)
    y = x.astype(np.float64)
    assert spectral_contrasts.cross_prompt_participation_ratio(x, ids) == pytest.approx(
        spectral_contrasts.cross_prompt_participation_ratio(y, ids), rel=1e-12
    )


def test_effective_rank_contrast_of_samples_is_the_bias_corrected_group_jackknife_by_hand():
    x, ids, gamma = _paired_samples(2)
    for centered, n_groups, level in ((True, 20, 0.95), (False, 3, 0.8), (True, None, 0.9)):
        values = np.array([ranks.effective_rank(layer_spectra.sample_eigvals(v, centered)) for v in x])
        labels = ids if n_groups is None else ids % n_groups
        leave_out = np.array(
            [
                [ranks.effective_rank(layer_spectra.sample_eigvals(v[labels != g], centered)) for v in x]
                for g in np.unique(labels)
            ]
        )
        ratio, ci = _jackknife_by_hand(gamma, values, leave_out, 0.42, level, bias_corrected=True)
        got = spectral_contrasts.effective_rank_contrast_of_samples(
            x, ids, gamma, 0.42, centered, n_groups, level
        )
        assert got.ratio == pytest.approx(ratio, rel=1e-10) and got.ci == pytest.approx(ci, rel=1e-10)
        assert got.level == level
    assert spectral_contrasts.effective_rank_contrast_of_samples(
        x, ids, gamma
    ) == spectral_contrasts.effective_rank_contrast_of_samples(x, ids, gamma, 0.42, True, 20, 0.95)


def test_capture_contrasts_are_those_of_the_capture_token_sample():
    cap = _small_capture(9, n_prompts=22, per_prompt=3, d=4, n_depths=5)
    for exclude in ((0,), ()):
        keep = ~np.isin(cap.vectors.positions, exclude)
        x = np.stack([np.asarray(cap.token_vectors(depth), dtype=np.float64)[keep] for depth in range(5)])
        ids = np.asarray(cap.vectors.prompt_ids)[keep]
        gamma = np.arange(5) / 4
        assert spectral_contrasts.pr_contrast(
            cap, 0.42, False, 0.8, exclude
        ) == spectral_contrasts.pr_contrast_of_samples(x, ids, gamma, 0.42, False, 0.8)
        assert spectral_contrasts.pr_contrast(
            cap, exclude_positions=exclude
        ) == spectral_contrasts.pr_contrast_of_samples(x, ids, gamma, 0.42, True, 0.95)
        assert spectral_contrasts.effective_rank_contrast(
            cap, 0.42, False, 3, 0.8, exclude
        ) == spectral_contrasts.effective_rank_contrast_of_samples(x, ids, gamma, 0.42, False, 3, 0.8)
        assert spectral_contrasts.effective_rank_contrast(
            cap, exclude_positions=exclude
        ) == spectral_contrasts.effective_rank_contrast_of_samples(x, ids, gamma, 0.42, True, 20, 0.95)


def _spiked_samples(seed: int, n_prompts: int = 12, per_prompt: int = 4, d: int = 10):
    """Five depths (gamma = l / 4): one spike of 8 at depth 1, two of 9 and 5 at depths 2 and 3."""
    rng = np.random.default_rng(seed)
    n = n_prompts * per_prompt
    x = rng.standard_normal((5, n, d))
    for depth, spikes in ((1, [8.0]), (2, [9.0, 5.0]), (3, [9.0, 5.0])):
        u = synthetic.random_orthonormal(d, len(spikes), rng)
        x[depth] += (rng.standard_normal((n, len(spikes))) * np.sqrt(spikes)) @ u.T
    return x, np.repeat(np.arange(n_prompts), per_prompt), np.arange(5) / 4


def _spike_contrast_by_hand(x, ids, gamma, split, n_boot, level, alpha, seed):
    """The docstring's recipe, one step at a time: repeated rows for the weights, Kish's bound, medians."""
    interior = (gamma > 0) & (gamma < gamma.max())
    before, after = np.flatnonzero(interior & (gamma <= split)), np.flatnonzero(interior & (gamma > split))
    _, groups = np.unique(ids, return_inverse=True)
    n_prompts = groups.max() + 1
    drawn = np.random.default_rng(seed).multinomial(n_prompts, np.full(n_prompts, 1 / n_prompts), size=n_boot)
    counts, draws = np.full(len(gamma), np.nan), np.full((n_boot, len(gamma)), np.nan)
    unsettled = unsettled_draws = 0
    for depth in np.r_[before, after]:
        fit = bulk_fit.mp_fit(layer_spectra.sample_eigvals(x[depth]), len(ids) - 1, alpha=alpha)
        counts[depth], unsettled = fit.n_spikes, unsettled + (not fit.settled)
        for row in range(n_boot):
            w = drawn[row][groups]
            kish = w.sum() ** 2 / np.sum(w**2) - 1
            fit = bulk_fit.mp_fit(
                layer_spectra.sample_eigvals(np.repeat(x[depth], w, axis=0)), kish, alpha=alpha
            )
            draws[row, depth], unsettled_draws = fit.n_spikes, unsettled_draws + (not fit.settled)
    q = [(1 - level) / 2 * 100, 50, (1 + level) / 2 * 100]

    def recentred(point, values):
        low, mid, high = np.percentile(values, q)
        return max(0.0, point + low - mid), point + high - mid, point + low - mid

    point_before, point_after = np.median(counts[before]), np.median(counts[after])
    draws_before, draws_after = np.median(draws[:, before], 1), np.median(draws[:, after], 1)
    low, mid, high = np.percentile(draws_after - draws_before, q)
    shift = point_after - point_before - mid
    return {
        "before": point_before,
        "after": point_after,
        "before_ci": recentred(point_before, draws_before),
        "after_ci": recentred(point_after, draws_after),
        "difference_ci": (low + shift, high + shift),
        "counts": counts,
        "counts_ci": [recentred(counts[depth], draws[:, depth]) for depth in range(len(gamma))],
        "unsettled": unsettled,
        "unsettled_draws": unsettled_draws,
        "n_before": len(before),
        "n_after": len(after),
    }


def test_spike_contrast_of_samples_equals_its_recipe_by_hand():
    unfloored, unsettled = [], []
    cases = [(0, 0.42, 0.95, 0.01), (5, 0.42, 0.8, 0.2), (3, 0.6, 0.9, 0.01), (-1, 0.42, 0.95, 0.01)]
    for seed, split, level, alpha in cases + [(1, 0.42, 0.95, 0.01), (2, 0.42, 0.95, 0.01)]:
        if seed == -1:  # the depths of seed 0 in reverse order: the spikes before the split
            x, ids, gamma = _spiked_samples(0)
            x = x[::-1].copy()
        elif seed in (1, 2):  # 40 dimensions with variances 2^-i at the two interior depths: unsettled fits
            x = np.random.default_rng(seed).standard_normal((4, 48, 40))
            x[1:3] *= np.sqrt(0.5 ** np.arange(40))
            ids, gamma = np.repeat(np.arange(12), 4), np.arange(4) / 3
        else:
            x, ids, gamma = _spiked_samples(seed)
        got = spectral_contrasts.spike_contrast_of_samples(
            x, ids, gamma, split, 10, level, alpha, abs(seed) + 1
        )
        expected = _spike_contrast_by_hand(x, ids, gamma, split, 10, level, alpha, abs(seed) + 1)
        assert (got.before, got.after) == (expected["before"], expected["after"])
        assert got.before_ci == pytest.approx(expected["before_ci"][:2], abs=1e-12)
        assert got.after_ci == pytest.approx(expected["after_ci"][:2], abs=1e-12)
        assert got.difference_ci == pytest.approx(expected["difference_ci"], abs=1e-12)
        np.testing.assert_array_equal(got.counts, expected["counts"])
        inside = ~np.isnan(expected["counts"])
        np.testing.assert_allclose(
            got.counts_ci[inside], np.array(expected["counts_ci"])[inside][:, :2], atol=1e-12
        )
        assert np.isnan(got.counts_ci[~inside]).all()
        assert (got.unsettled, got.unsettled_draws) == (expected["unsettled"], expected["unsettled_draws"])
        assert got.settled == (expected["unsettled"] + expected["unsettled_draws"] == 0)
        assert (got.n_before, got.n_after) == (expected["n_before"], expected["n_after"])
        assert (got.split, got.level, got.n_boot) == (split, level, 10)
        unfloored += [expected["before_ci"][2], expected["after_ci"][2]]
        if seed == -1:
            assert expected["before_ci"][2] < 0 == got.before_ci[0]  # the floor of the before interval
        unsettled.append((got.unsettled, got.unsettled_draws))
        unfloored += [ci[2] for ci in np.array(expected["counts_ci"])[inside]]
    assert min(unfloored) < 0  # the floor at 0 is at work somewhere in these cases
    assert unsettled[-2:] == [(2, 2), (1, 4)]  # unsettled fits of the sample and of the draws are counted


def test_spike_contrast_of_samples_validation_boundaries():
    x, ids, gamma = _spiked_samples(4, n_prompts=3, per_prompt=8, d=4)
    result = spectral_contrasts.spike_contrast_of_samples(x, ids, gamma, n_boot=10)
    assert result.n_boot == 10 and (result.n_before, result.n_after) == (1, 2)
    for level in (0.0, 1.0, 1.5):
        with pytest.raises(lb.InvalidInputError, match="Need an integer n_boot >= 10 and 0 < level < 1"):
            spectral_contrasts.spike_contrast_of_samples(x, ids, gamma, n_boot=10, level=level)
    with pytest.raises(lb.InvalidInputError, match="Need an integer n_boot >= 10"):
        spectral_contrasts.spike_contrast_of_samples(x, ids, gamma, n_boot=10.0)


def test_spike_contrast_is_that_of_the_capture_token_sample():
    cap = _small_capture(10, n_prompts=12, per_prompt=4, d=5, n_depths=5)
    for exclude, seed in (((0,), 3), ((), 5)):
        keep = ~np.isin(cap.vectors.positions, exclude)
        x = np.stack([np.asarray(cap.token_vectors(depth), dtype=np.float64)[keep] for depth in range(5)])
        ids = np.asarray(cap.vectors.prompt_ids)[keep]
        got = spectral_contrasts.spike_contrast(cap, 0.42, 10, 0.9, 0.2, seed, exclude)
        expected = _spike_contrast_by_hand(x, ids, np.arange(5) / 4, 0.42, 10, 0.9, 0.2, seed)
        assert (got.before, got.after) == (expected["before"], expected["after"])
        assert got.before_ci + got.after_ci == pytest.approx(
            expected["before_ci"][:2] + expected["after_ci"][:2], abs=1e-12
        )
        assert got.difference_ci == pytest.approx(expected["difference_ci"], abs=1e-12)
        inside = ~np.isnan(expected["counts"])
        np.testing.assert_allclose(got.counts_ci[inside], np.array(expected["counts_ci"])[inside][:, :2])


def test_remove_position_profile_removes_smooth_functions_of_position_and_keeps_the_tokens():
    rng = np.random.default_rng(3)
    positions = np.tile(np.arange(1, 33), 20)
    tokens = rng.standard_normal((len(positions), 5))
    basis = layer_spectra.position_basis(positions)
    np.testing.assert_allclose(
        basis[:2], [[1, 1 / 2, 1 / np.sqrt(2), np.log(2)], [1, 1 / 3, 1 / np.sqrt(3), np.log(3)]]
    )
    profile = np.outer(3.0 / (positions + 1) + 0.5 * np.log(positions + 1) - 2.0, [1.0, -4.0, 0.0, 2.0, 9.0])
    cleaned = layer_spectra.remove_position_profile(tokens + profile, positions)
    np.testing.assert_allclose(cleaned, layer_spectra.remove_position_profile(tokens, positions), atol=1e-9)
    np.testing.assert_allclose(basis.T @ cleaned, 0.0, atol=1e-9)  # least squares: orthogonal to the basis
    assert np.corrcoef(cleaned[:, 0], tokens[:, 0])[0, 1] > 0.99  # what varies between tokens stays
    with pytest.raises(lb.InvalidInputError, match="one position each"):
        layer_spectra.remove_position_profile(tokens[:10], positions)
    with pytest.raises(lb.InvalidInputError, match="non-negative"):
        layer_spectra.position_basis(np.array([-1, 0, 1]))


def _leaking_sink_capture(seed: int, class_code: bool) -> object:
    """Nine depths of Gaussian tokens (60 prompts x positions 0..15, d = 24); a sink's value leaks into every
    later token with weight ``1 / t^0.8``, its amplitude growing ten-fold after gamma 0.42 (norm growth); with
    ``class_code`` the tokens of each of 4 classes also write their class's 3-sparse prototype after it. The
    nuisances of real captures: a massive coordinate in every token, tokens correlated within their prompt (a
    prompt offset of s.d. 0.5), edge depths inside the contrast's windows' reach."""
    rng = np.random.default_rng(seed)
    n_prompts, per_prompt, d, n_depths = 60, 16, 24, 9
    positions = np.tile(np.arange(per_prompt), n_prompts)
    n = len(positions)
    prompt_ids = np.repeat(np.arange(n_prompts), per_prompt)
    states = rng.standard_normal((n_depths, n, d)) + 0.5 * rng.standard_normal((n_prompts, d))[prompt_ids]
    states[:, :, 0] += 60.0 + rng.standard_normal((n_depths, n))  # massive: shared by every token
    leak = np.where(positions > 0, 1.0 / np.maximum(positions, 1) ** 0.8, 0.0)
    direction = rng.standard_normal(d)
    prototypes = np.zeros((4, d))
    for c in range(4):
        prototypes[c, rng.choice(d, 3, replace=False)] = 4.0
    classes = rng.integers(0, 4, n)
    for depth in range(n_depths):
        after = depth / (n_depths - 1) > 0.42
        states[depth] += np.outer(leak * (10.0 if after else 1.0) * 3.0, direction)
        if class_code and after:
            states[depth] += prototypes[classes]
    states[:, positions == 0] *= 10.0
    return synthetic.as_capture(states, prompt_ids, positions, n_vectors=n)


@pytest.mark.parametrize("contrast", ["pr_contrast", "effective_rank_contrast"])
def test_standardised_contrasts_ignore_a_sink_leaking_by_position_and_see_class_codes(contrast):
    """The planted norm-growth family's artefact: standardising alone lets the growing position profile
    concentrate the correlation spectrum; with the profile removed the ratio is 1, and a class code still counts."""
    measure = getattr(spectral_contrasts, contrast)
    leak = _leaking_sink_capture(0, class_code=False)
    gamma = np.asarray(leak.gamma)
    keep = leak.vectors.positions > 0
    only_scaled = np.stack(
        [omega_standardise(np.asarray(leak.token_vectors(i), np.float64)[keep]) for i in range(len(gamma))]
    )
    of_samples = getattr(spectral_contrasts, f"{contrast}_of_samples")
    assert of_samples(only_scaled, leak.vectors.prompt_ids[keep], gamma).ratio < 0.8  # the confound, shown
    clean = measure(leak, standardised=True)
    assert 0.93 < clean.ratio < 1.07 and clean.ci[0] < 1.0 < clean.ci[1]
    coded = measure(_leaking_sink_capture(0, class_code=True), standardised=True)
    assert coded.ratio < 0.85 and coded.ci[1] < 1.0
