"""Each confound of Omega, planted in Gaussian tokens, is detected and removed by its treatment."""

from __future__ import annotations

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import confounds, omega, synthetic

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
    raw = omega.profile(planted)
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
