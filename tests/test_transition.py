"""critical_depth recovers a planted gamma_c with honest intervals and refuses trends, bends and flat curves."""

from __future__ import annotations

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import synthetic, transition


def test_planted_gamma_c_is_recovered_within_003_and_the_ci_covers_it_in_90_percent_of_seeds():
    rng = np.random.default_rng(2024)
    errors, covered = [], 0
    for seed in range(30):
        gamma_c = float(rng.uniform(0.2, 0.8))
        curve = synthetic.order_parameter_curve(
            gamma_c=gamma_c, width=0.03, amplitude=0.2, base=0.69, noise=0.01, n_layers=30, seed=seed
        )
        t = transition.critical_depth(curve.gamma, curve.m, n_boot=200, seed=seed)
        assert t.has_transition, t.reason
        errors.append(t.gamma_c - gamma_c)
        covered += t.ci[0] <= gamma_c <= t.ci[1]
        assert t.amplitude == pytest.approx(0.2, abs=0.03)
        assert t.amplitude_ci[0] < t.amplitude < t.amplitude_ci[1]
    assert np.max(np.abs(errors)) <= 0.03
    assert covered >= 27
    assert abs(np.mean(errors)) < 0.005  # no systematic bias


def test_a_downward_jump_and_a_step_between_two_layers_are_transitions():
    gamma = np.arange(21) / 20
    down = synthetic.sigmoid_profile(gamma, 0.6, 0.04, -0.15, 0.9)
    t = transition.critical_depth(
        gamma, down + 0.005 * np.random.default_rng(0).standard_normal(21), n_boot=50
    )
    assert t.has_transition and t.amplitude < 0 and abs(t.gamma_c - 0.6) < 0.03
    step = np.where(gamma < 0.42, 0.7, 0.9) + 0.002 * np.random.default_rng(1).standard_normal(21)
    t = transition.critical_depth(gamma, step, n_boot=50)
    assert t.has_transition and 0.40 <= t.gamma_c <= 0.45  # the jump lies between gamma = 0.40 and 0.45


@pytest.mark.parametrize("seed", range(5))
def test_a_flat_curve_has_no_transition(seed):
    curve = synthetic.order_parameter_curve(amplitude=0.0, noise=0.01, n_layers=30, seed=seed)
    t = transition.critical_depth(curve.gamma, curve.m, n_boot=50, seed=seed)
    assert not t.has_transition
    assert "constant" in t.reason or "below 3 x noise" in t.reason


def test_trends_bends_gradual_rises_and_last_layer_jumps_are_not_transitions():
    gamma = np.arange(31) / 30
    noise = 0.005 * np.random.default_rng(3).standard_normal(31)
    cases = {
        "linear": 0.5 + 0.2 * gamma,
        "quadratic": 0.5 + 0.3 * gamma**2,
        "gradual": synthetic.sigmoid_profile(gamma, 0.5, 0.2, 0.4, 0.5),
        "edge": np.where(gamma > 0.98, 0.9, 0.7),
    }
    expected = {"linear": "linear", "quadratic": "quadratic", "gradual": "gradual", "edge": "edge"}
    for name, m in cases.items():
        t = transition.critical_depth(gamma, m + noise, n_boot=50)
        assert not t.has_transition, name
        assert expected[name] in t.reason, (name, t.reason)


def test_min_amplitude_is_honoured():
    curve = synthetic.order_parameter_curve(gamma_c=0.5, amplitude=0.03, noise=0.002, n_layers=30, seed=1)
    assert transition.critical_depth(curve.gamma, curve.m, n_boot=50).has_transition
    t = transition.critical_depth(curve.gamma, curve.m, n_boot=50, min_amplitude=0.05)
    assert not t.has_transition and "min_amplitude" in t.reason


def test_a_capture_like_object_is_accepted():
    curve = synthetic.order_parameter_curve(gamma_c=0.42, n_layers=30, seed=2)

    class Profile:
        gamma = curve.gamma

        def omega_mean(self):
            return curve.m

    t = transition.critical_depth(Profile(), n_boot=50)
    assert t.has_transition and abs(t.gamma_c - 0.42) < 0.03
    assert lb.transition.critical_depth is transition.critical_depth


def test_bad_profiles_are_refused():
    with pytest.raises(lb.InvalidInputError, match="same length"):
        transition.critical_depth(np.linspace(0, 1, 10), np.zeros(9))
    with pytest.raises(lb.InvalidInputError, match="at least 8"):
        transition.critical_depth(np.linspace(0, 1, 5), np.zeros(5))
    with pytest.raises(lb.InvalidInputError, match="increasing"):
        transition.critical_depth(np.linspace(1, 0, 10), np.zeros(10))
    with pytest.raises(lb.InvalidInputError, match="finite"):
        transition.critical_depth(np.linspace(0, 1, 10), np.r_[np.zeros(9), np.nan])
    with pytest.raises(lb.InvalidInputError, match="Capture"):
        transition.critical_depth(np.linspace(0, 1, 10))
