"""critical_depth on profiles with the real models' nuisances: planted jumps found where they are, intervals in
range and covering the truth; smooth profiles, bends, edge jumps and small steps refused."""

from __future__ import annotations

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import calibration, transition

BACKGROUNDS = calibration.BACKGROUNDS


def _planted(seed: int, jump: float, gamma_c: float, width: float = 0.0, kind: str | None = None):
    rng = np.random.default_rng(seed)
    n_layers = calibration.LAYERS[seed % len(calibration.LAYERS)]
    kind = kind or BACKGROUNDS[seed % len(BACKGROUNDS)]
    return calibration.planted_profile(rng, n_layers, kind, jump=jump, gamma_c=gamma_c, width=width)


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
    assert alone.ci_method.startswith("parametric") and with_draws.ci_method.startswith("prompt")
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
    t = transition.critical_depth(cap, n_boot=100)
    assert t.ci_method == "prompt bootstrap + misfit"
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
