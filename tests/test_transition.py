"""critical_depth on profiles with the real models' nuisances: planted jumps found where they are, intervals in
range and covering the truth; smooth profiles, bends, edge jumps and small steps refused."""

from __future__ import annotations

import types

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import calibration, omega_profiles, planted_statistics, transition

BACKGROUNDS = planted_statistics.BACKGROUNDS


def _planted(seed: int, jump: float, gamma_c: float, width: float = 0.0, kind: str | None = None):
    rng = np.random.default_rng(seed)
    n_layers = calibration.LAYERS[seed % len(calibration.LAYERS)]
    kind = kind or BACKGROUNDS[seed % len(BACKGROUNDS)]
    return planted_statistics.planted_profile(rng, n_layers, kind, jump=jump, gamma_c=gamma_c, width=width)


def test_planted_jumps_with_edge_rises_trends_and_correlated_misfit_are_found_within_005():
    """The issue's must-show: >= 80 % found within +-0.05, intervals inside [0, 1] covering the truth."""
    rng = np.random.default_rng(7)
    found, covered, n = 0, 0, 60
    for seed in range(n):
        gamma_c = float(rng.uniform(0.25, 0.75))
        p = _planted(
            seed, float(rng.uniform(0.15, 0.25)), gamma_c, width=float(rng.choice([0.0, 0.01, 0.02]))
        )
        t = transition.critical_depth(p.gamma, p.m, n_boot=100, seed=seed)
        assert 0.0 <= t.ci[0] <= t.gamma_c <= t.ci[1] <= 1.0
        assert -1.0 <= t.amplitude_ci[0] <= t.amplitude <= t.amplitude_ci[1] <= 1.0
        hit = t.has_transition and abs(t.gamma_c - gamma_c) <= 0.05
        found += hit
        covered += hit and t.ci[0] <= gamma_c <= t.ci[1]
    assert found >= 0.8 * n
    assert covered >= 0.9 * found


def test_the_referees_case_a_jump_at_042_on_a_two_layer_rise_out_of_the_embedding():
    """0.2 at gamma 0.42 on top of the rise every model here shows: the old sigmoid fit missed 6 of 6."""
    for seed in range(6):
        rng = np.random.default_rng(seed)
        gamma = np.arange(31) / 30
        m = 0.5 + 0.2 * (gamma > 0.42) + 0.004 * rng.standard_normal(31)
        m[0] -= 0.3
        m[1] -= 0.12
        t = transition.critical_depth(gamma, m, n_boot=60, seed=seed)
        assert t.has_transition, t.reason
        assert t.ci[0] <= 0.42 <= t.ci[1] and abs(t.gamma_c - 0.42) <= 0.02
        assert t.amplitude == pytest.approx(0.2, abs=0.02)


@pytest.mark.parametrize("kind", BACKGROUNDS)
def test_smooth_profiles_with_the_same_nuisances_have_no_transition(kind):
    n = 12
    profiles = [_planted(seed, 0.0, 0.42, kind=kind) for seed in range(n)]
    with_transition = sum(transition.critical_depth(p.gamma, p.m, n_boot=30).has_transition for p in profiles)
    assert with_transition <= 1  # <= 10 % (measured: 5 of 300 over all five kinds)


def test_a_bend_an_edge_jump_and_a_small_step_are_not_transitions():
    gamma = np.arange(31) / 30
    noise = 0.004 * np.random.default_rng(3).standard_normal(31)
    bend = 0.5 + 0.4 * np.maximum(gamma - 0.5, 0)  # a slope that changes: a kink, no gap
    t = transition.critical_depth(gamma, bend + noise, n_boot=30)
    assert not t.has_transition and "kink" in t.reason, t.reason
    first_layer = np.where(gamma > 0.02, 0.7, 0.4) + noise  # between depths 0 and 1: an edge, not fitted
    t = transition.critical_depth(gamma, first_layer, n_boot=30)
    assert not t.has_transition and t.fitted_gamma[0] == gamma[2]
    small = 0.5 + 0.008 * (gamma > 0.5) + noise  # twice the noise
    assert not transition.critical_depth(gamma, small, n_boot=30).has_transition
    clear = 0.5 + 0.05 * (gamma > 0.5) + noise
    t = transition.critical_depth(gamma, clear, n_boot=30)
    assert t.has_transition and abs(t.gamma_c - 0.5) < 0.02
    t = transition.critical_depth(gamma, clear, n_boot=30, min_amplitude=0.1)
    assert not t.has_transition and "min_amplitude" in t.reason


def test_a_downward_jump_with_an_outlying_embedding_depth_is_found():
    """The embedding far below the rest, a jump of -0.15 at 0.6: the fit finds the jump where it is, not at the
    embedding (which, fitted, would be the biggest step in the profile)."""
    gamma = np.arange(25) / 24
    for seed in range(3):
        m = 0.8 - 0.15 * (gamma > 0.6) + 0.003 * np.random.default_rng(seed).standard_normal(25)
        m[0] = 0.1  # the embedding far below
        t = transition.critical_depth(gamma, m, n_boot=30, seed=seed)
        assert t.has_transition and t.amplitude == pytest.approx(-0.15, abs=0.02)
        assert abs(t.gamma_c - 0.6) <= 1 / 24 and t.ci[0] <= 0.6 <= t.ci[1]


@pytest.mark.parametrize("first_after", [1, 2])
def test_a_jump_out_of_the_embedding_or_out_of_the_first_block_is_an_edge_not_a_transition(first_after):
    """m jumps by 0.3 between depths 0 and 1 (the embedding) or 1 and 2 (the first block's output) and is flat
    after: both are edge effects of every model in chapter 3, not the paper's mid-depth transition."""
    gamma = np.arange(31) / 30
    for seed in range(3):
        m = np.where(np.arange(31) >= first_after, 0.7, 0.4)
        m = m + 0.004 * np.random.default_rng(seed).standard_normal(31)
        t = transition.critical_depth(gamma, m, n_boot=30, seed=seed)
        assert not t.has_transition, (seed, t.gamma_c, t.amplitude)
        assert abs(t.amplitude) < 0.05  # nothing left to jump over among the fitted depths


def _step_in_orthogonal_noise(n: int, jump: float, seed: int, sigma: float = 0.004):
    """``m = 0.5 + jump * sigma * [gamma > 1/2] + e`` with ``e`` of s.d. ``sigma`` orthogonal to the two-line
    step model and to the cubic, so the jump fit leaves exactly ``e`` and estimates the jump exactly."""
    g = np.arange(n) / (n - 1)
    step = (g > 0.5).astype(float)
    basis = np.column_stack([np.ones(n), g, g**2, g**3, step, step * g])
    e = np.random.default_rng(seed).standard_normal(n)
    e -= basis @ np.linalg.lstsq(basis, e, rcond=None)[0]
    return g, 0.5 + jump * sigma * step + e * sigma / e.std()


def test_a_jump_of_twice_the_noise_is_refused_even_where_the_bic_would_take_it():
    """On 161 depths a step of 2.2 s.d. beats every smooth null by BIC >= 10, so only the noise criterion
    (|b| >= 3 x noise) stands between it and a "transition" (on 31 depths the BIC refuses it first)."""
    for seed in range(3):
        g, m = _step_in_orthogonal_noise(161, 2.2, seed)
        t = transition.critical_depth(g, m, n_boot=30, seed=seed)
        assert min(t.delta_bic.values()) >= transition.BIC_MARGIN  # measured: 17-20
        assert 1.8 < t.amplitude / t.noise < 2.6 and abs(t.gamma_c - 0.5) < 0.01
        assert not t.has_transition and "x noise" in t.reason, t.reason
        clear = transition.critical_depth(g, m + 0.004 * 2.0 * (g > 0.5), n_boot=30, seed=seed)  # 4.2 s.d.
        assert clear.has_transition and abs(clear.gamma_c - 0.5) < 0.01


def test_prompt_bootstrap_draws_widen_the_interval_and_are_reported():
    p = _planted(3, 0.2, 0.5)
    alone = transition.critical_depth(p.gamma, p.m, n_boot=60)
    spread = p.draws + np.random.default_rng(0).normal(0, 0.05, (len(p.draws), 1)) * (p.gamma > 0.5)
    with_draws = transition.critical_depth(p.gamma, p.m, draws=spread, n_boot=60)
    assert (
        alone.ci_method == "parametric (AR(1) misfit)" and with_draws.ci_method == "prompt bootstrap + misfit"
    )
    assert (
        with_draws.amplitude_ci[1] - with_draws.amplitude_ci[0]
        > alone.amplitude_ci[1] - alone.amplitude_ci[0]
    )


def test_a_capture_is_fitted_with_prompt_bootstrap_draws():
    rng = np.random.default_rng(0)
    n_depths, n_prompts, per_prompt, d = 13, 40, 6, 32
    ids = np.repeat(np.arange(n_prompts), per_prompt)
    states = rng.standard_normal((n_depths, len(ids), d))
    states[7:, :, :2] *= 12.0  # two massive coordinates from depth 7 on: Omega jumps at gamma ~ 0.54
    cap = lb.synthetic.as_capture(states, prompt_ids=ids, positions=np.tile(np.arange(per_prompt), n_prompts))
    t = transition.critical_depth(cap, n_boot=30)  # the profile's draws: at least 100
    assert t.ci_method == "prompt bootstrap + misfit"
    prof = omega_profiles.profile(cap, n_boot=100, seed=0)
    same = transition.critical_depth(prof.gamma, prof.m, draws=prof.draws, n_boot=30)
    assert (t.gamma_c, t.ci, t.amplitude_ci) == (same.gamma_c, same.ci, same.amplitude_ci)
    summary = types.SimpleNamespace(gamma=cap.gamma, omega_mean=cap.omega_mean)  # m alone, no token samples
    alone = transition.critical_depth(summary, n_boot=30)
    plain = transition.critical_depth(cap.gamma, cap.omega_mean(), n_boot=30)
    assert alone.ci_method == "parametric (AR(1) misfit)" and (alone.gamma_c, alone.ci) == (
        plain.gamma_c,
        plain.ci,
    )
    assert t.has_transition and t.ci[0] <= 6.5 / 12 <= t.ci[1]
    assert lb.transition.critical_depth is transition.critical_depth


def test_bad_profiles_are_refused():
    with pytest.raises(lb.InvalidInputError, match="same length"):
        transition.critical_depth(np.linspace(0, 1, 12), np.zeros(11))
    with pytest.raises(lb.InvalidInputError, match="skip"):
        transition.critical_depth(np.linspace(0, 1, 10), np.zeros(10))
    assert not transition.is_testable(10) and transition.is_testable(11)
    with pytest.raises(lb.InvalidInputError, match="increasing"):
        transition.critical_depth(np.linspace(1, 0, 12), np.zeros(12))
    with pytest.raises(lb.InvalidInputError, match="finite"):
        transition.critical_depth(np.linspace(0, 1, 12), np.r_[np.zeros(11), np.nan])
    with pytest.raises(lb.InvalidInputError, match="draws"):
        transition.critical_depth(np.linspace(0, 1, 12), np.zeros(12), draws=np.zeros((30, 11)))
    with pytest.raises(lb.InvalidInputError, match="Capture"):
        transition.critical_depth(np.linspace(0, 1, 12))


# --- the models' BIC by the module docstring's formula, computed here by hand (mutation testing, issue #20) ----


def _bic(design: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> float:
    """``n log(RSS_w / n) + k log n`` of a weighted least-squares fit, weights normalised to mean 1."""
    w = np.ones(len(y)) if w is None else w / w.mean()
    sw = np.sqrt(w)
    coef = np.linalg.lstsq(design * sw[:, None], y * sw, rcond=None)[0]
    rss = float(np.sum(w * (design @ coef - y) ** 2))
    return len(y) * np.log(rss / len(y)) + design.shape[1] * np.log(len(y))


def _smooth_designs(g: np.ndarray) -> dict[str, np.ndarray]:
    designs = {name: np.vander(g, degree + 1) for degree, name in enumerate(transition._POLYNOMIALS)}
    for knots in (1, 2):  # interior knots equally spaced over the fitted range
        kappa = np.linspace(g[0], g[-1], knots + 2)[1:-1]
        designs[f"spline ({knots} knots)"] = np.column_stack(
            [np.vander(g, 4), np.maximum(g[:, None] - kappa[None, :], 0.0) ** 3]
        )
    return designs


def test_smooth_nulls_are_least_squares_fits_scored_by_bic():
    """Without draws every fitted depth weighs the same: each polynomial and spline null's BIC is the ordinary
    least-squares one, on the depths left after the edges (2 at the start, 1 at the end)."""
    gamma = np.arange(31) / 30
    m = 0.5 + 0.1 * np.sin(3 * gamma) + 0.05 * np.maximum(gamma - 0.6, 0) ** 3
    m = m + 0.01 * np.random.default_rng(0).standard_normal(31)
    t = transition.critical_depth(gamma, m, n_boot=30)
    g, y = gamma[2:-1], m[2:-1]
    np.testing.assert_array_equal(t.fitted_gamma, g)
    for name, design in _smooth_designs(g).items():
        assert t.bic[name] == pytest.approx(_bic(design, y), abs=1e-6), name
    assert t.delta_bic == pytest.approx({name: t.bic[name] - t.bic["jump"] for name in t.delta_bic})
    assert set(t.bic) == {*_smooth_designs(g), "kink", "jump"}


def test_short_profiles_fit_fewer_spline_knots():
    """Knots need depths: (n - 8) // 2 of them at most, so 10 fitted depths fit one, 9 none."""
    for n_fitted, splines in (
        (8, []),  # MIN_FITTED: the fewest fitted depths a transition is tested on
        (9, []),
        (10, ["spline (1 knots)"]),
        (12, ["spline (1 knots)", "spline (2 knots)"]),
    ):
        gamma = np.arange(n_fitted + 3) / (n_fitted + 2)
        m = 0.5 + 0.01 * np.random.default_rng(n_fitted).standard_normal(len(gamma))
        t = transition.critical_depth(gamma, m, n_boot=30)
        assert sorted(k for k in t.bic if k.startswith("spline")) == splines


def test_a_step_is_two_lines_with_the_best_gap_by_bic():
    """A planted step, sharper than any switch: the jump is the step model, the best of the two-line fits
    ``(1 - s)(a_1 + c_1 g) + s (a_2 + c_2 g)`` with ``s`` a step between two fitted depths (two or more on each side),
    scored with k = 5; the amplitude is the gap between the two lines at the step, the base the left line there."""
    gamma = np.arange(31) / 30
    rng = np.random.default_rng(1)
    m = 0.3 + 0.2 * gamma + (0.15 - 0.3 * (gamma - 0.45)) * (gamma > 0.45) + 0.003 * rng.standard_normal(31)
    t = transition.critical_depth(gamma, m, n_boot=30, max_width=0.0)  # steps only
    g, y = gamma[2:-1], m[2:-1]
    best = None
    for i in range(1, len(g) - 2):  # the step between g[i] and g[i + 1]
        s = (g > (g[i] + g[i + 1]) / 2).astype(float)
        design = np.column_stack([1 - s, (1 - s) * g, s, s * g])
        coef = np.linalg.lstsq(design, y, rcond=None)[0]
        rss = float(np.sum((design @ coef - y) ** 2))
        bic = len(g) * np.log(rss / len(g)) + 5 * np.log(len(g))
        if best is None or bic < best[0]:
            best = (bic, (g[i] + g[i + 1]) / 2, coef, design @ coef)
    bic, centre, coef, fitted = best
    assert (
        t.width == 0.0
        and t.gamma_c == pytest.approx(centre)
        and t.bic["jump"] == pytest.approx(bic, abs=1e-6)
    )
    left, right = coef[0] + coef[1] * centre, coef[2] + coef[3] * centre
    assert t.amplitude == pytest.approx(right - left, abs=1e-9) and t.base == pytest.approx(left, abs=1e-9)
    np.testing.assert_allclose(t.fitted, fitted, atol=1e-9)
    assert t.noise == pytest.approx(np.sqrt(np.sum((y - fitted) ** 2) / (len(y) - 5)), rel=1e-9)
    assert t.has_transition and abs(t.amplitude - 0.15) < 0.01  # the planted gap, slopes changing


def test_draws_weigh_each_depth_by_its_bootstrap_variance_plus_the_cubics_misfit():
    """``w_l = 1 / (se_l^2 + tau^2)``: a depth whose draws spread widely counts little, as the docstring says."""
    gamma = np.arange(31) / 30
    rng = np.random.default_rng(2)
    m = 0.5 + 0.1 * gamma**2 + 0.004 * rng.standard_normal(31)
    se = np.full(31, 0.004)
    se[10:14] = 0.05  # four depths measured badly
    draws = m + se * rng.standard_normal((200, 31))
    t = transition.critical_depth(gamma, m, draws=draws, n_boot=30)
    g, y, d = gamma[2:-1], m[2:-1], draws[:, 2:-1]
    se2 = np.var(d, axis=0, ddof=1)
    cubic_rss = float(np.sum((np.polyval(np.polyfit(g, y, 3), g) - y) ** 2))
    tau2 = max(cubic_rss / (len(g) - 4) - se2.mean(), 1e-6 * se2.mean())
    w = 1.0 / (se2 + tau2)
    for name, design in _smooth_designs(g).items():
        assert t.bic[name] == pytest.approx(_bic(design, y, w), abs=1e-6), name
    assert t.ci_method == "prompt bootstrap + misfit"


def test_the_kink_null_is_a_broken_line_scored_with_four_parameters():
    """The kink (intercept, slope, a slope change at a free break in the interior) fitted on a grid of breaks:
    its BIC is at most a grid step's worth above the best break found by a fine search, with k = 4 (one more
    parameter would cost log n = 3.3)."""
    gamma = np.arange(31) / 30
    for seed in range(5):
        m = 0.5 + 0.4 * np.maximum(gamma - 0.5, 0) + 0.004 * np.random.default_rng(seed).standard_normal(31)
        t = transition.critical_depth(gamma, m, n_boot=30)
        g, y = gamma[2:-1], m[2:-1]
        breaks = np.linspace(g[1], g[-2], 4001)
        designs = np.stack(  # (breaks, depths, 3): intercept, slope, slope change at the break
            [
                np.ones((len(breaks), len(g))),
                np.broadcast_to(g, (len(breaks), len(g))),
                np.maximum(g - breaks[:, None], 0),
            ],
            axis=-1,
        )
        rss = np.sum((designs @ (np.linalg.pinv(designs) @ y[:, None]) - y[:, None])[..., 0] ** 2, axis=1)
        best = len(g) * np.log(rss.min() / len(g)) + 4 * np.log(len(g))  # the break is the fourth parameter
        assert best - 0.01 <= t.bic["kink"] < best + 1.5, seed
        assert not t.has_transition and "kink" in t.reason


def test_a_switch_is_two_lines_joined_by_a_logistic_scored_with_six_parameters():
    """A planted logistic rise (width 0.02 on 61 depths): the jump is a switch (width > 0), its fitted curve the
    least-squares two-line fit with ``s = 1 / (1 + exp(-(g - gamma_c) / w))`` at the fitted centre and width, its BIC
    counted with k = 6, its amplitude the gap between the lines at the centre, the interval around the whole
    switch."""
    gamma = np.arange(61) / 60
    rng = np.random.default_rng(3)
    m = 0.4 + 0.1 * gamma + 0.2 / (1 + np.exp(-(gamma - 0.503) / 0.02)) + 0.002 * rng.standard_normal(61)
    t = transition.critical_depth(gamma, m, n_boot=30)
    assert 0 < t.width <= transition.MAX_WIDTH and t.has_transition
    g, y = gamma[2:-1], m[2:-1]
    s = 1 / (1 + np.exp(-(g - t.gamma_c) / t.width))
    design = np.column_stack([1 - s, (1 - s) * g, s, s * g])
    coef = np.linalg.lstsq(design, y, rcond=None)[0]
    rss = float(np.sum((design @ coef - y) ** 2))
    assert t.bic["jump"] == pytest.approx(len(g) * np.log(rss / len(g)) + 6 * np.log(len(g)), abs=1e-6)
    np.testing.assert_allclose(t.fitted, design @ coef, atol=1e-9)
    left, right = coef[0] + coef[1] * t.gamma_c, coef[2] + coef[3] * t.gamma_c
    assert t.amplitude == pytest.approx(right - left, abs=1e-9) and t.base == pytest.approx(left, abs=1e-9)
    assert t.noise == pytest.approx(np.sqrt(rss / (len(g) - 6)), rel=1e-9)  # six parameters
    assert t.amplitude == pytest.approx(0.2, abs=0.02) and abs(t.gamma_c - 0.503) < 0.01
    assert t.ci[0] <= t.gamma_c - t.width and t.gamma_c + t.width <= t.ci[1]


def test_a_clean_step_is_located_to_its_gap_between_two_depths():
    """A step with almost no noise: every refit finds the same gap, so the interval is that gap exactly."""
    gamma = np.arange(31) / 30
    m = 0.5 + 0.1 * (gamma > 0.5) + 0.001 * np.random.default_rng(0).standard_normal(31)
    t = transition.critical_depth(gamma, m, n_boot=30, max_width=0.0)
    assert t.gamma_c == pytest.approx(15.5 / 30) and t.ci == pytest.approx((15 / 30, 16 / 30))
    assert t.amplitude_ci[0] <= 0.1 <= t.amplitude_ci[1] and t.amplitude_ci[1] - t.amplitude_ci[0] < 0.01


def _local_fit_gap(g, y, centre, width, h, degree):
    left = [i for i in range(len(g)) if g[i] < centre - 2 * width][-h:]
    right = [i for i in range(len(g)) if g[i] > centre + 2 * width][:h]
    ends = [np.polyval(np.polyfit(g[side], y[side], degree), centre) for side in (left, right)]
    return ends[1] - ends[0]


def test_local_gaps_fit_the_nearest_depths_outside_the_switch_on_each_side():
    """Each (h, degree) of LOCAL_FITS: polynomials through the h depths nearest the centre on each side, outside
    |g - centre| <= 2 w, evaluated at the centre; right minus left. Fits a side cannot supply are left out."""
    g = np.arange(31) / 30
    rng = np.random.default_rng(5)
    y = np.where(g < 0.5, 0.3 + g**2, 0.8 - 0.5 * g) + 0.01 * rng.standard_normal(31)
    for centre, width in ((0.5, 0.0), (0.5, 0.02), (0.43, 0.01)):
        want = [_local_fit_gap(g, y, centre, width, h, d) for h, d in transition.LOCAL_FITS]
        assert transition.local_gaps(g, y, centre, width) == pytest.approx(want, rel=1e-10), (centre, width)
    # four depths on the left (g < 3.5/13): only the three- and four-depth lines fit there, on both sides
    g = np.arange(14) / 13
    y = 0.5 + 0.2 * (g > 0.3) + 0.01 * rng.standard_normal(14)
    gaps = transition.local_gaps(g, y, 3.5 / 13, 0.0)
    assert gaps == pytest.approx([_local_fit_gap(g, y, 3.5 / 13, 0.0, h, 1) for h in (3, 4)], rel=1e-10)
    assert transition.local_gaps(g, y, 9.5 / 13, 0.0) == pytest.approx(  # and four on the right
        [_local_fit_gap(g, y, 9.5 / 13, 0.0, h, 1) for h in (3, 4)], rel=1e-10
    )
    three = transition.local_gaps(g, y, 2.5 / 13, 0.0)  # three on the left: the three-depth line only
    assert three == pytest.approx([_local_fit_gap(g, y, 2.5 / 13, 0.0, 3, 1)], rel=1e-10)
    assert transition.local_gaps(g, y, 1.5 / 13, 0.0) == []  # two on the left: no fit


def test_the_parametric_misfit_is_an_ar1_series_with_the_residuals_spread_and_correlation():
    """``_ar1_noise``: Gaussian AR(1) draws with the residuals' s.d. (about their mean, RSS / dof) and their lag-1
    correlation, bias-corrected (Kendall 1954)."""
    rng = np.random.default_rng(6)
    n, rho = 400, 0.6
    e = rng.standard_normal(n)
    for i in range(1, n):
        e[i] = rho * e[i - 1] + np.sqrt(1 - rho**2) * e[i]
    residuals = 0.01 * e + 0.05  # an offset the s.d. must not see
    draws = transition._ar1_noise(residuals, 500, np.random.default_rng(0), dof=n - 5)
    r = residuals - residuals.mean()
    sd = np.sqrt(np.sum(r**2) / (n - 5))
    assert draws.std() == pytest.approx(sd, rel=0.05)
    lag1 = np.mean([np.corrcoef(d[1:], d[:-1])[0, 1] for d in draws])
    assert lag1 == pytest.approx(rho, abs=0.08)
    white = transition._ar1_noise(0.01 * rng.standard_normal(n), 500, np.random.default_rng(1), dof=n - 5)
    assert np.mean([np.corrcoef(d[1:], d[:-1])[0, 1] for d in white]) == pytest.approx(0.0, abs=0.05)


def test_the_criterion_at_its_boundaries():
    """BIC >= 10 against the weakest null and |b| >= 3 x noise (and >= min_amplitude): equality passes, a hair
    below fails, naming the test that failed; a downward jump is judged by its size."""
    reason = transition._no_transition_reason
    strong = {"cubic": 10.0, "kink": 12.0, "linear": 40.0}
    assert reason(0.375, 0.125, strong, 0.0) == "" and reason(-0.375, 0.125, strong, 0.375) == ""  # exact
    weak = reason(0.375, 0.125, {**strong, "cubic": 9.99}, 0.0)
    assert weak == "a cubic model explains m(gamma) about as well as a jump (BIC difference 10.0 < 10)"
    small = reason(0.3749, 0.125, strong, 0.0)
    assert small == "the jump +0.3749 is below 3 x noise (0.3750) or min_amplitude (0.0000)"
    assert "min_amplitude (0.3100)" in reason(-0.3, 0.01, strong, 0.31)


def test_intervals_are_percentiles_at_the_level_widened_to_the_estimate():
    hull = transition._hull_interval
    low, high = np.arange(101.0), np.arange(101.0) + 1000
    assert hull(low, high, (50.0, 1050.0), 0.9) == pytest.approx((5.0, 1095.0))
    assert hull(low, high, (50.0, 1050.0), 0.5 + 1e-9) == pytest.approx((25.0, 1075.0))
    assert hull(low, high, (2.0, 1099.0), 0.9) == pytest.approx((2.0, 1099.0))  # the estimate's own span


def test_settings_out_of_range_are_refused_with_the_fix():
    gamma, m = np.linspace(0, 1, 12), np.zeros(12)
    for kwargs, message in (
        ({"n_boot": 19}, r"^n_boot must be an integer >= 20 for a bootstrap interval, got 19\.$"),
        ({"n_boot": 20.0}, r"got 20\.0\.$"),
        ({"level": 0.5}, r"^level must lie in \(0\.5, 1\), got 0\.5\.$"),
        ({"level": 1.0}, r"got 1\.0\.$"),
        ({"max_width": -0.01}, r"^max_width must be >= 0, got -0\.01\.$"),
        ({"skip": (-1, 1)}, r"^skip must be two counts >= 0 \(first, last\), got \(-1, 1\)\.$"),
        ({"skip": (2, -1)}, r"got \(2, -1\)\.$"),
        ({"draws": np.zeros((19, 12))}, r"^draws must have shape \(n_draws >= 20, 12\) .* got \(19, 12\)\.$"),
        ({"draws": np.full((20, 12), np.nan)}, r"^draws must be finite\.$"),
    ):
        with pytest.raises(lb.InvalidInputError, match=message):
            transition.critical_depth(gamma, m, **kwargs)
    assert transition.critical_depth(gamma, m + 0.01 * np.sin(7 * gamma), n_boot=20, level=0.51).level == 0.51
    with pytest.raises(
        lb.InvalidInputError, match=r"after dropping 2 edge depths at the start and 1 at the end; got 10"
    ):
        transition.critical_depth(np.linspace(0, 1, 10), np.zeros(10))
    assert (
        transition.critical_depth(
            np.linspace(0, 1, 10), np.sin(np.linspace(0, 3, 10)), skip=(1, 1)
        ).fitted_gamma[0]
        > 0
    )


def _lag1(x: np.ndarray) -> np.ndarray:
    x = x - x.mean(-1, keepdims=True)
    return np.sum(x[..., 1:] * x[..., :-1], -1) / np.sum(x**2, -1)


def test_the_misfits_correlation_is_corrected_for_a_short_profile():
    """On 28 depths a lag-1 correlation is biased down by about (1 + 3 rho) / n = 0.1 (Kendall 1954): the draws
    use the corrected rho, so their own (equally biased) lag-1 correlation comes out near the residuals', not 0.1
    or 0.2 below it. A misfit smooth enough to give rho > 0.95 is clipped there, and its draws stay finite."""
    e = np.random.default_rng(1).standard_normal(28)
    for i in range(1, 28):
        e[i] = 0.5 * e[i - 1] + np.sqrt(0.75) * e[i]  # lag-1 correlation 0.47 measured
    draws = transition._ar1_noise(0.01 * e, 4000, np.random.default_rng(0), dof=23)
    assert _lag1(e) - 0.06 < _lag1(draws).mean() < _lag1(e)
    ramp = np.linspace(-0.01, 0.01, 28)  # lag-1 correlation 0.89, corrected past 1
    draws = transition._ar1_noise(ramp, 2000, np.random.default_rng(1), dof=23)
    assert np.all(np.isfinite(draws)) and 0.65 < _lag1(draws).mean() < 0.95  # rho = 0.95, biased down
    assert draws.std() == pytest.approx(np.sqrt(np.sum((ramp - ramp.mean()) ** 2) / 23), rel=0.2)


def test_the_same_profile_gives_the_same_answer_and_intervals_stay_in_range():
    """Seeded: two calls agree to the last bit. A jump of nearly the whole range keeps its interval in [-1, 1];
    no edge skipped (skip=(0, 0)) fits every depth; a repeated depth is refused."""
    gamma = np.arange(31) / 30
    rng = np.random.default_rng(9)
    m = 0.005 + 0.99 * (gamma > 0.5) + 0.02 * rng.standard_normal(31)
    a, b = (transition.critical_depth(gamma, m, n_boot=60, seed=4) for _ in range(2))
    assert (a.ci, a.amplitude_ci) == (b.ci, b.amplitude_ci)
    assert a.has_transition and -1.0 <= a.amplitude_ci[0] <= a.amplitude_ci[1] <= 1.0
    assert transition.critical_depth(gamma, m, n_boot=20, skip=(0, 0)).fitted_gamma.tolist() == gamma.tolist()
    with pytest.raises(lb.InvalidInputError, match=r"^gamma must be strictly increasing"):
        transition.critical_depth(np.r_[gamma[:5], gamma[4:]], np.r_[m[:5], m[4:]])
    draws = m + 0.02 * rng.standard_normal((20, 31))  # twenty draws are enough
    assert (
        transition.critical_depth(gamma, m, draws=draws, n_boot=20).ci_method == "prompt bootstrap + misfit"
    )


# --- mutation testing, second round (issue #20): what the first round's tests left unchecked ------------


def test_the_ar1_misfit_has_the_corrected_correlation_between_every_two_depths():
    """``_ar1_noise`` on 8 depths: the draws' covariance is ``sd^2 rho^|i - j|``, the first depth's included, with
    ``rho = raw + (1 + 3 raw) / n`` (Kendall's correction, computed here by hand) clipped to ``[0, 0.95]``:
    alternating residuals (corrected ``rho`` -1.08) give white draws and a trend (0.98) gives 0.95, never NaN."""
    n = 8
    lags = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    wiggle = 0.2 + 0.01 * np.array([3.0, 4.0, 1.0, 2.0, -2.0, -1.0, -5.0, -3.0])  # offset 0.2, unseen
    r = wiggle - wiggle.mean()
    raw = np.sum(r[1:] * r[:-1]) / np.sum(r**2)
    assert raw == pytest.approx(0.5206, abs=1e-4)
    for residuals, rho in (
        (wiggle, raw + (1 + 3 * raw) / n),  # 0.841
        (0.01 * (-1.0) ** np.arange(n), 0.0),  # raw -7/8, corrected -1.08: clipped at 0
        (np.linspace(0.0, 0.01, n), 0.95),  # raw 5/8, corrected 0.98: clipped at 0.95
    ):
        draws = transition._ar1_noise(residuals, 40000, np.random.default_rng(0), dof=3)
        sd2 = np.sum((residuals - residuals.mean()) ** 2) / 3
        cov = draws.T @ draws / len(draws) / sd2
        assert np.all(np.isfinite(draws))
        np.testing.assert_allclose(cov, rho**lags, atol=0.04)
        assert np.mean(np.diag(cov, 1)) / np.mean(np.diag(cov)) == pytest.approx(rho, abs=0.02)
        assert np.mean(np.diag(cov)) == pytest.approx(1.0, abs=0.03)


def test_draws_weights_are_the_inverse_of_the_bootstrap_variance_plus_the_cubics_excess_misfit():
    """``_weights`` by hand, up to the scale that the fits cancel: ``1 / (se_l^2 + tau^2)``, ``se_l^2`` the draws'
    variance (ddof 1), ``tau^2 = RSS_cubic / (n - 4) - mean se^2`` where the cubic misfits beyond the draws'
    spread, else a floor of ``1e-6`` of it; a profile without spread or misfit weighs every depth the same, and a smooth null explains it."""
    g = np.arange(20) / 19
    rng = np.random.default_rng(11)
    se = 0.002 * (1 + np.arange(20) % 4)
    for y, misfit in ((0.5 + 0.02 * np.sin(9 * g), True), (0.5 + 0.1 * g**3 - 0.05 * g, False)):
        draws = y + se * rng.standard_normal((25, 20))
        se2 = np.var(draws, axis=0, ddof=1)
        rss = np.sum((np.polyval(np.polyfit(g, y, 3), g) - y) ** 2)
        tau2 = rss / (20 - 4) - se2.mean()
        assert (tau2 > 0.5 * se2.mean()) == misfit
        want = 1 / (se2 + (tau2 if misfit else 1e-6 * se2.mean()))
        w = transition._weights(g, y, draws)
        np.testing.assert_allclose(w / w.sum(), want / want.sum(), rtol=1e-9)
    w = transition._weights(g, np.zeros(20), np.zeros((20, 20)))
    assert np.all(np.isfinite(w)) and np.all(w == w[0])
    t = transition.critical_depth(g[:14], np.full(14, 0.5), draws=np.full((20, 14), 0.5), n_boot=20)
    # every model fits a flat profile to rounding error, so which smooth null ties best is the platform's BLAS
    assert np.isfinite(t.bic["jump"]) and not t.has_transition
    assert "explains m(gamma) about as well as a jump" in t.reason and "-inf" not in t.reason


def test_a_single_precision_profile_is_fitted_in_double_precision():
    """gamma, m and draws in float32 (as activations often are) give the answer of their float64 values."""
    p = _planted(3, 0.2, 0.5)
    single = [np.asarray(a, dtype=np.float32) for a in (p.gamma, p.m, p.draws)]
    double = [a.astype(np.float64) for a in single]
    a, b = (transition.critical_depth(x[0], x[1], draws=x[2], n_boot=30) for x in (single, double))
    assert a.bic == b.bic and (a.gamma_c, a.ci, a.amplitude_ci) == (b.gamma_c, b.ci, b.amplitude_ci)
    assert a.fitted_gamma.dtype == np.float64 and a.fitted.dtype == np.float64
    m = double[1].astype(np.longdouble)  # extended precision where the platform has it: float64 too
    extended = transition.critical_depth(double[0], m, draws=double[2], n_boot=30)
    assert extended.bic == b.bic and extended.amplitude_ci == b.amplitude_ci


def test_a_capture_is_resampled_with_the_callers_seed():
    """A Capture's prompt-bootstrap draws come from ``seed`` too: the answer of its profile drawn with that seed."""
    rng = np.random.default_rng(1)
    n_depths, n_prompts, per_prompt, d = 13, 24, 4, 16
    ids = np.repeat(np.arange(n_prompts), per_prompt)
    states = rng.standard_normal((n_depths, len(ids), d))
    states[7:, :, :2] *= 6.0
    cap = lb.synthetic.as_capture(states, prompt_ids=ids, positions=np.tile(np.arange(per_prompt), n_prompts))
    t = transition.critical_depth(cap, n_boot=30, seed=3)
    prof = omega_profiles.profile(cap, n_boot=100, seed=3)
    same = transition.critical_depth(prof.gamma, prof.m, draws=prof.draws, n_boot=30, seed=3)
    assert (t.gamma_c, t.ci, t.amplitude_ci) == (same.gamma_c, same.ci, same.amplitude_ci)


def test_refusals_of_the_profile_say_what_to_pass_in_full():
    """The whole message, not a word of it: what was wrong and what to pass instead."""
    with pytest.raises(
        lb.InvalidInputError, match=r"^Pass gamma and m \(one value per depth\), or a Capture alone\.$"
    ):
        transition.critical_depth(np.linspace(0, 1, 12))
    with pytest.raises(
        lb.InvalidInputError, match=r"^gamma and m must be finite; drop depths with NaN before fitting\.$"
    ):
        transition.critical_depth(np.r_[np.linspace(0, 1, 11), np.inf], np.zeros(12))


def test_local_gaps_leave_out_the_depths_at_two_widths_from_the_centre_and_use_those_beyond():
    """On whole-number depths: at centre 9.5 and width 0.25 the depths 9 and 10 are exactly 2 w away, inside the
    switch; at width 0.2 they are 0.5 > 2 w = 0.4 away and used (and depth 10 is within 3 w)."""
    g = np.arange(20.0)
    y = 0.01 * g**2 + (g > 9.5) + 0.01 * np.random.default_rng(4).standard_normal(20)

    def gap(left, right, degree, centre=9.5):
        ends = [np.polyval(np.polyfit(g[s], y[s], degree), centre) for s in (left, right)]
        return ends[1] - ends[0]

    def fits(left_end, right_start):  # the (h, degree) of LOCAL_FITS, nearest depths first
        return [
            gap(list(range(left_end - h + 1, left_end + 1)), list(range(right_start, right_start + h)), d)
            for h, d in ((3, 1), (4, 1), (5, 2), (6, 1), (8, 2))
        ]

    inside = fits(8, 11)
    assert inside[1] == gap([5, 6, 7, 8], [11, 12, 13, 14], 1)
    assert transition.local_gaps(g, y, 9.5, 0.25) == pytest.approx(inside, rel=1e-12)
    used = fits(9, 10)
    assert transition.local_gaps(g, y, 9.5, 0.2) == pytest.approx(used, rel=1e-12)


def _switch_nodes(g: np.ndarray, max_width: float = transition.MAX_WIDTH):
    """The switch grid of the module: centres equally spaced strictly inside ``(g_1, g_{n-2})``, ``2n - 1`` of them,
    and 4 widths geometrically spaced from a tenth of the depth spacing to ``max_width``."""
    centres = np.linspace(g[1], g[-2], 2 * len(g) + 1)[1:-1]
    return centres, np.geomspace(np.min(np.diff(g)) / 10, max_width, 4)


def test_a_switch_on_the_grid_is_found_at_its_node_and_located_to_its_depth_gap():
    """A clean switch planted at a node of the grid (the first, a middle and the last centre; the second width,
    narrower than half a depth gap): the fit finds that node exactly, and every refit too, so the interval is the
    depth gap around the centre, ``gamma_c -+ max(w, gap / 2)``."""
    g = np.arange(28) / 27
    centres, widths = _switch_nodes(g)
    assert len(centres) == 55 and widths[1] < (g[1] - g[0]) / 2
    for centre in centres[[0, 27, 54]]:
        s = 1 / (1 + np.exp(-(g - centre) / widths[1]))
        m = (
            (1 - s) * (0.3 + 0.1 * g)
            + s * (0.6 - 0.1 * g)
            + 1e-5 * np.random.default_rng(0).standard_normal(28)
        )
        t = transition.critical_depth(g, m, n_boot=30, skip=(0, 0))
        assert t.has_transition and (t.gamma_c, t.width) == pytest.approx((centre, widths[1]), abs=1e-12)
        assert t.ci == pytest.approx((centre - 0.5 / 27, centre + 0.5 / 27), abs=1e-12)
        assert t.amplitude == pytest.approx(0.3 - 0.2 * centre, abs=1e-3)


def test_a_max_width_at_the_narrowest_switch_fits_steps_only():
    """Switches are narrower than ``max_width`` but at least a tenth of the depth spacing: ``max_width`` equal to
    that tenth leaves steps only, even for a switch of that very width."""
    g = np.arange(28) / 27
    narrowest = float(np.min(np.diff(g))) / 10
    centre = _switch_nodes(g)[0][20]
    m = (
        0.4
        + 0.2 / (1 + np.exp(-(g - centre) / narrowest))
        + 1e-5 * np.random.default_rng(1).standard_normal(28)
    )
    wide = transition.critical_depth(g, m, n_boot=30, skip=(0, 0), max_width=narrowest * 1.01)
    assert wide.width == pytest.approx(narrowest) and wide.gamma_c == pytest.approx(centre)
    t = transition.critical_depth(g, m, n_boot=30, skip=(0, 0), max_width=narrowest)
    assert t.width == 0.0 and t.bic["jump"] > wide.bic["jump"]


def test_the_parametric_amplitude_interval_has_the_spread_of_the_misfit():
    """A step 25 s.d. high (every refit finds its gap): the two-line gap is linear in the profile, ``b + a'e``, and
    so is each local gap, ``d_j + c_j'e``, so the interval is the hull of ``b -+ 1.96 sd (a' R a)^(1/2)`` and of every
    ``d_j -+ 1.96 sd (c_j' R c_j)^(1/2)`` at most ``LOCAL_PRECISION`` times the shortest, ``sd^2 = RSS / (n - 5)``
    and ``R`` the AR(1) correlation of the misfit (Kendall-corrected), all by hand: the local intervals are centred
    on the local gaps, not on ``b``."""
    for seed in (1, 3):
        g, m = _step_in_orthogonal_noise(31, 25.0, seed)
        t = transition.critical_depth(g, m, n_boot=4000, max_width=0.0, skip=(0, 0), seed=seed)
        s = (g > t.gamma_c).astype(float)
        design = np.column_stack([1 - s, (1 - s) * g, s, s * g])
        a = np.array([-1, -t.gamma_c, 1, t.gamma_c]) @ np.linalg.pinv(design)
        r = m - design @ np.linalg.lstsq(design, m, rcond=None)[0]
        r = r - r.mean()
        raw = np.sum(r[1:] * r[:-1]) / np.sum(r**2)
        rho = np.clip(raw + (1 + 3 * raw) / 31, 0.0, 0.95)
        corr = rho ** np.abs(np.subtract.outer(np.arange(31), np.arange(31)))
        variance = np.sum(r**2) / (31 - 5)
        half = 1.959964 * np.sqrt(variance * (a @ corr @ a))
        assert t.gamma_c == pytest.approx(15.5 / 30) and t.amplitude == pytest.approx(0.1, abs=1e-12)
        gaps = transition.local_gaps(g, m, t.gamma_c, 0.0)
        assert len(gaps) == len(transition.LOCAL_FITS)
        c = np.array([transition.local_gaps(g, unit, t.gamma_c, 0.0) for unit in np.eye(31)])  # (depth, fit)
        halves = 1.959964 * np.sqrt(variance * np.einsum("ij,ik,kj->j", c, corr, c))
        assert (halves > half).all()  # a local fit uses fewer depths: noisier than the two lines
        kept = halves <= transition.LOCAL_PRECISION * halves.min()  # the fits about as precise as the best
        assert 1 < kept.sum() < len(kept)
        gaps = np.asarray(gaps)[kept]
        want_low = min(0.1 - half, *(gaps - halves[kept]))
        want_high = max(0.1 + half, *(gaps + halves[kept]))
        low, high = t.amplitude_ci
        assert (0.1 - low) / (0.1 - want_low) == pytest.approx(1.0, abs=0.05)
        assert (high - 0.1) / (want_high - 0.1) == pytest.approx(1.0, abs=0.05)


def test_a_fall_of_almost_the_whole_range_has_its_interval_clipped_at_minus_one():
    """m falls by 0.99 (to 0.005, noise 0.02): the refits' amplitudes reach below -1, the interval stops there."""
    gamma = np.arange(31) / 30
    m = 0.995 - 0.99 * (gamma > 0.5) + 0.02 * np.random.default_rng(1).standard_normal(31)
    t = transition.critical_depth(gamma, m, n_boot=60, seed=4)
    assert t.has_transition and t.amplitude_ci[0] == -1.0 < t.amplitude < t.amplitude_ci[1] < -0.9
