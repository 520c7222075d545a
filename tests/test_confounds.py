"""Each confound of Omega, planted in Gaussian tokens, is detected and removed by its treatment."""

from __future__ import annotations

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import confounds, omega, omega_profiles, synthetic

N_PROMPTS, PER_PROMPT, D = 64, 8, 64
GAUSS = omega.gaussian_omega(D)
TOL = 0.015  # ~4.5 standard errors of a mean over 512 Gaussian tokens at d = 64


@pytest.fixture(scope="module")
def planted():
    """Depth 0: Gaussian. Depth 1: + a massive coordinate (1000) on every first-position token.
    Depth 2: + a shared mean 30 e_3 on every token. Depth 3: one-hot tokens (any axis)."""
    rng = np.random.default_rng(0)
    n = N_PROMPTS * PER_PROMPT
    positions = np.tile(np.arange(PER_PROMPT), N_PROMPTS)
    prompt_ids = np.repeat(np.arange(N_PROMPTS), PER_PROMPT)
    base = rng.standard_normal((4, n, D))
    base[1, positions == 0, 5] = 1000.0
    base[2, :, 3] += 30.0
    base[3] = np.eye(D)[rng.integers(0, D, n)] * rng.choice([-1.0, 1.0], (n, 1))
    return synthetic.as_capture(base, prompt_ids, positions, n_vectors=n)


def test_massive_ratio_and_dims_find_the_planted_coordinate(planted):
    ratio = confounds.massive_ratio(planted)
    assert ratio[1] > 200 and ratio[0] < 3
    assert confounds.massive_dims(planted, 1, 1).tolist() == [5]
    with pytest.raises(lb.InvalidInputError, match="k must"):
        confounds.massive_dims(planted, 1, D)


def test_gaussian_tokens_are_unmoved_by_every_treatment(planted):
    for value in confounds.treatments(planted, 0, k=1).values():
        assert value == pytest.approx(GAUSS, abs=TOL)


def test_first_position_and_top_dims_remove_the_massive_coordinate(planted):
    t = confounds.treatments(planted, 1, k=1)
    assert t["as captured"] > GAUSS + 0.05  # one token in eight looks one-hot
    assert t["first position dropped"] == pytest.approx(GAUSS, abs=TOL)
    assert t["top-1 dims dropped"] == pytest.approx(GAUSS, abs=TOL)
    assert t["all removed"] == pytest.approx(GAUSS, abs=TOL)


def test_centring_removes_a_shared_mean(planted):
    t = confounds.treatments(planted, 2, k=1)
    assert t["as captured"] > 0.6  # every token is mostly the one-hot mean (0.68 expected)
    assert t["centred"] == pytest.approx(GAUSS, abs=TOL)
    assert t["rotated"] == pytest.approx(GAUSS, abs=TOL)  # a one-hot mean in a random basis is Gaussian-like


def test_rotation_sends_one_hot_tokens_to_the_gaussian_value(planted):
    t = confounds.treatments(planted, 3, k=1)
    assert t["as captured"] == pytest.approx(1 - 1 / np.sqrt(D))
    assert t["rotated"] == pytest.approx(GAUSS, abs=TOL)
    rotated = confounds.rotated(planted.token_vectors(3))
    np.testing.assert_allclose(np.linalg.norm(rotated, axis=1), 1.0, rtol=1e-6)  # an isometry


def test_cleaned_profile_is_gaussian_at_every_depth_but_the_one_hot(planted):
    raw = omega_profiles.profile(planted)
    clean = confounds.cleaned_profile(planted, k=1, n_boot=200)
    assert clean.n_tokens == N_PROMPTS * (PER_PROMPT - 1)  # first positions dropped
    assert clean.n_prompts == N_PROMPTS
    np.testing.assert_allclose(clean.m[:3], GAUSS, atol=TOL)
    assert np.all(clean.low[:3] <= GAUSS + TOL) and np.all(clean.high[:3] >= GAUSS - TOL)
    assert raw.m[1] > clean.m[1] + 0.05 and raw.m[2] > clean.m[2] + 0.4


def test_centring_on_a_mean_dominated_by_the_sink_plants_a_spike(planted):
    """At depth 1 the first-position tokens' massive coordinate dominates the mean of all tokens."""
    t = confounds.treatments(planted, 1, k=1)
    assert t["centred"] > GAUSS + 0.3  # every other token now carries minus the sink's spike / 8
    # dropping the first position before centring (and no dims) gives back the Gaussian value
    clean = confounds.cleaned_profile(planted, k=0, n_boot=200)
    assert clean.m[1] == pytest.approx(GAUSS, abs=TOL)


# --- each treatment removes its own confound and only that one (mutation testing, issue #20) -------------------


@pytest.fixture(scope="module")
def mixed():
    """Confounds that only one treatment each removes, k = 1 throughout.
    Depth 0: a shared mean on two coordinates (30 e_3 + 30 e_7): dropping one coordinate leaves the other.
    Depth 1: first-position tokens with two massive coordinates (1000 on 5 and 9): dropping one leaves the other.
    Depth 2: coordinate 11 massive (s.d. 100) on every token, mean zero: neither centring nor the first position
    removes it. Depth 3: Gaussian."""
    rng = np.random.default_rng(1)
    n = N_PROMPTS * PER_PROMPT
    positions = np.tile(np.arange(PER_PROMPT), N_PROMPTS)
    prompt_ids = np.repeat(np.arange(N_PROMPTS), PER_PROMPT)
    base = rng.standard_normal((4, n, D))
    base[0, :, [3, 7]] += 30.0
    base[1, positions == 0, 5] = 1000.0
    base[1, positions == 0, 9] = 1000.0
    base[2, :, 11] *= 100.0
    return synthetic.as_capture(base, prompt_ids, positions, n_vectors=n)


HIGH = GAUSS + 0.1  # well above the Gaussian value: a confound left in


def test_each_treatment_removes_its_own_confound_only(mixed):
    shared_mean, two_sinks, massive_everywhere, gaussian = (
        confounds.treatments(mixed, depth, k=1) for depth in range(4)
    )
    # a shared mean: only centring removes it (dropping one of its two coordinates does not)
    assert shared_mean["as captured"] > HIGH and shared_mean["first position dropped"] > HIGH
    assert shared_mean["top-1 dims dropped"] > HIGH
    assert shared_mean["centred"] == pytest.approx(GAUSS, abs=TOL)
    assert shared_mean["all removed"] == pytest.approx(GAUSS, abs=TOL)
    # massive coordinates on the first position: only dropping that position removes both
    assert two_sinks["first position dropped"] == pytest.approx(GAUSS, abs=TOL)
    assert two_sinks["top-1 dims dropped"] > GAUSS + 0.05  # one of the two left, on one token in eight
    assert two_sinks["all removed"] == pytest.approx(
        GAUSS, abs=TOL
    )  # dropped before centring: no spike planted
    # a massive coordinate on every token: only dropping the top coordinate removes it
    assert massive_everywhere["first position dropped"] > HIGH and massive_everywhere["centred"] > HIGH
    assert massive_everywhere["top-1 dims dropped"] == pytest.approx(GAUSS, abs=TOL)
    assert massive_everywhere["all removed"] == pytest.approx(GAUSS, abs=TOL)
    for value in gaussian.values():
        assert value == pytest.approx(GAUSS, abs=TOL)


def test_treatments_by_default_drop_four_dims_and_rotate_with_the_seed_given(mixed):
    default = confounds.treatments(mixed, 2)
    assert default == confounds.treatments(mixed, 2, k=4, seed=0)
    assert list(default) == [
        "as captured",
        "first position dropped",
        "top-4 dims dropped",
        "centred",
        "rotated",
        "all removed",
    ]
    x = mixed.token_vectors(2).astype(np.float64)
    for seed in (0, 3):
        want = omega.omega(confounds.rotated(x, seed)).mean()
        assert confounds.treatments(mixed, 2, seed=seed)["rotated"] == pytest.approx(want, rel=1e-12)
    assert confounds.rotated(x, 3)[0] != pytest.approx(confounds.rotated(x, 0)[0])  # another basis


def test_rotation_is_an_exact_isometry_of_each_vector_in_any_stack():
    """``vectors @ R`` over the last axis, computed in float64: norms and inner products kept to 1e-12, for float32
    input too, and a stack of depths rotated by the same R as each depth alone."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 50, 16)).astype(np.float32)
    r = confounds.rotated(x)
    assert r.shape == x.shape and r.dtype == np.float64
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(r @ np.swapaxes(r, 1, 2), x64 @ np.swapaxes(x64, 1, 2), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r[1], confounds.rotated(x[1]), rtol=1e-12, atol=1e-12)


def test_massive_ratio_is_the_top_coordinate_over_the_median_at_every_scale(mixed):
    """``max_i A_i / median_i A_i`` in float64, and free of the units: tokens a thousand times smaller (median
    below 1) give the same ratios."""
    ratio = confounds.massive_ratio(mixed)
    for index, layer in enumerate(mixed.depths.tolist()):
        a = mixed.abs_max(layer).astype(np.float64)
        assert ratio[index] == pytest.approx(a.max() / np.median(a), rel=1e-12)
    rng = np.random.default_rng(3)
    small = rng.standard_normal((2, 200, 16)) * 1e-3
    small[1, :, 4] *= 50.0
    ratios = confounds.massive_ratio(synthetic.as_capture(small, n_vectors=200))
    same = confounds.massive_ratio(synthetic.as_capture(small * 1e3, n_vectors=200))
    np.testing.assert_allclose(ratios, same, rtol=1e-5)
    assert ratios[1] > 20 * ratios[0]


def test_cleaned_profile_removes_every_confound_with_its_own_draws(mixed):
    clean = confounds.cleaned_profile(mixed, k=1, n_boot=200, seed=5)
    np.testing.assert_allclose(clean.m, GAUSS, atol=TOL)  # centred, first position and the top dim dropped
    assert clean.draws.shape == (200, 4) and clean.n_tokens == N_PROMPTS * (PER_PROMPT - 1)
    again = confounds.cleaned_profile(mixed, k=1, n_boot=200, seed=5)
    np.testing.assert_array_equal(clean.low, again.low)  # the seed fixes the draws
    np.testing.assert_array_equal(clean.draws, again.draws)
    assert confounds.cleaned_profile(mixed, k=1, n_boot=200, seed=6).draws[0, 0] != clean.draws[0, 0]
    default = confounds.cleaned_profile(mixed, n_boot=200)  # centred, first position and 4 dims dropped
    np.testing.assert_array_equal(default.m, confounds.cleaned_profile(mixed, k=4, n_boot=200).m)
    assert default.m[0] == pytest.approx(GAUSS, abs=TOL)  # centring on by default


def test_cleaned_profile_is_placed_at_the_depths_held():
    """A capture of some depths only (depths=...): the profile's gamma are those depths', l / L."""
    import dataclasses

    rng = np.random.default_rng(4)
    ids = np.repeat(np.arange(16), 4)
    cap = synthetic.as_capture(rng.standard_normal((4, 64, 8)), ids, np.tile(np.arange(4), 16), n_vectors=64)
    some = dataclasses.replace(cap, n_layers=6, depths=np.array([0, 2, 5, 6]))
    clean = confounds.cleaned_profile(some, k=1, n_boot=100)
    np.testing.assert_allclose(clean.gamma, [0, 2 / 6, 5 / 6, 1])


def test_centring_uses_the_exact_mean_unless_the_first_position_goes_first():
    """With 128 of 512 tokens sampled: "centred" subtracts the capture's exact mean of all tokens; with the first
    position dropped, the mean of the remaining sampled tokens (in float64) is all there is."""
    rng = np.random.default_rng(5)
    n = N_PROMPTS * PER_PROMPT
    positions = np.tile(np.arange(PER_PROMPT), N_PROMPTS)
    states = rng.standard_normal((2, n, D)) + 3.0 * rng.standard_normal((1, 1, D))  # a shared mean
    cap = synthetic.as_capture(states, np.repeat(np.arange(N_PROMPTS), PER_PROMPT), positions, n_vectors=128)
    x = cap.token_vectors(1).astype(np.float64)
    t = confounds.treatments(cap, 1, k=0)
    assert t["as captured"] == pytest.approx(omega.omega(x).mean(), rel=1e-12)
    assert t["centred"] == pytest.approx(omega.omega(x - cap.mean(1)).mean(), rel=1e-12)
    assert t["centred"] != pytest.approx(omega.omega(x - x.mean(0)).mean(), rel=1e-6)  # not the sample's mean
    rest = x[cap.vectors.positions > 0]
    assert t["all removed"] == pytest.approx(omega.omega(rest - rest.mean(0)).mean(), rel=1e-12)


def test_massive_dims_are_the_top_k_and_k_zero_drops_none(mixed):
    assert confounds.massive_dims(mixed, 1, 2).tolist() == [5, 9]  # the two sink coordinates, sorted
    assert confounds.massive_dims(mixed, 0, 2).tolist() == [3, 7]
    assert confounds.massive_dims(mixed, 1, 0).tolist() == []
    with pytest.raises(lb.InvalidInputError, match=rf"^k must be an integer in 0\.\.{D - 1}, got {D}\.$"):
        confounds.massive_dims(mixed, 1, D)
    with pytest.raises(lb.InvalidInputError, match=r"got -1\.$"):
        confounds.massive_dims(mixed, 1, -1)
