"""Intrinsic dimension (TwoNN, Gride) against scikit-dimension and against manifolds of known dimension, at the
book's sample size (about 500 tokens from 128 prompts, four per prompt), with the nuisances real token clouds
have: prompt-correlated tokens, curvature, noise, duplicates."""

import numpy as np
import pytest
import skdim

from latentbook.analysis import intrinsic_dimension as idm
from latentbook.analysis.synthetic import curved_manifold
from latentbook.errors import InvalidInputError

BOOK = dict(n_prompts=128, tokens_per_prompt=4)


@pytest.mark.parametrize("n1", [1, 2, 4, 8])
def test_gride_equals_scikit_dimension(n1):
    cloud = curved_manifold(**BOOK, dimension=6, d=320, rho=0.3, noise=0.005, seed=n1)
    ours = idm.gride(cloud.x, n1=n1, n_boot=50).dimension
    reference = skdim.id.GRIDE(n1=n1).fit(cloud.x).dimension_
    assert ours == pytest.approx(reference, rel=1e-9)


def test_two_nn_is_the_closed_form_mle():
    cloud = curved_manifold(**BOOK, dimension=4, d=256, seed=1)
    log_mu = idm.log_ratios(cloud.x)
    assert idm.two_nn(cloud.x, n_boot=50).dimension == pytest.approx(
        (len(log_mu) - 1) / log_mu.sum(), rel=1e-9
    )
    assert skdim.id.TwoNN(method="mle", discard_fraction=0).fit(cloud.x).dimension_ == pytest.approx(
        idm.two_nn(cloud.x, n_boot=50).dimension, rel=1e-9
    )


@pytest.mark.parametrize("dimension, d, rho", [(3, 256, 0.0), (6, 384, 0.5), (10, 640, 0.5)])
def test_within_15_percent_of_the_planted_dimension(dimension, d, rho):
    for seed in range(3):
        cloud = curved_manifold(**BOOK, dimension=dimension, d=d, rho=rho, seed=seed)
        for n1 in (1, 2):
            estimate = idm.gride(cloud.x, cloud.prompt_ids, n1=n1, n_boot=50).dimension
            assert estimate == pytest.approx(dimension, rel=0.15), (seed, n1)


def test_a_larger_scale_sees_through_noise_that_fools_two_nn():
    cloud = curved_manifold(**BOOK, dimension=6, d=384, rho=0.3, noise=0.02, seed=0)
    assert idm.two_nn(cloud.x, cloud.prompt_ids, n_boot=50).dimension > 1.25 * 6
    assert idm.gride(cloud.x, cloud.prompt_ids, n1=8, n_boot=50).dimension == pytest.approx(6, rel=0.15)


def test_prompt_bootstrap_covers_at_about_the_nominal_rate():
    covered, width_prompts, width_tokens = 0, [], []
    for seed in range(60):
        cloud = curved_manifold(**BOOK, dimension=5, d=256, rho=0.5, curvature=0.0, seed=seed)
        estimate = idm.two_nn(cloud.x, cloud.prompt_ids, n_boot=200, seed=seed)
        covered += estimate.ci[0] <= 5 <= estimate.ci[1]
        width_prompts.append(estimate.ci[1] - estimate.ci[0])
        alone = idm.two_nn(cloud.x, n_boot=200, seed=seed)
        width_tokens.append(alone.ci[1] - alone.ci[0])
    assert 0.83 <= covered / 60 <= 1.0
    assert np.mean(width_prompts) < 2.0  # informative, not merely wide


def test_bootstrap_roots_match_exact_roots_of_the_weighted_likelihood():
    cloud = curved_manifold(**BOOK, dimension=5, d=256, seed=3)
    for n1, n2 in ((1, 2), (4, 8), (2, 7)):
        log_mu = idm._kept(idm.log_ratios(cloud.x, n1, n2))
        rng = np.random.default_rng(0)
        weights = rng.integers(0, 3, size=(5, len(log_mu))).astype(float)
        grid = idm._roots_of_draws(log_mu, weights, n1, n2)
        for w, root in zip(weights, grid):
            exact = idm._root(np.repeat(log_mu, w.astype(int)), n1, n2)
            assert root == pytest.approx(exact, rel=2e-4)


def test_profile_peak_and_shared_draws():
    depths = [curved_manifold(**BOOK, dimension=k, d=256, rho=0.3, seed=0).x for k in (3, 5, 9, 5, 3)]
    prompts = np.repeat(np.arange(128), 4)
    profile = idm.id_profile(np.stack(depths), prompts, n_boot=100)
    assert profile.peak_gamma == 0.5
    assert profile.peak_ci == (0.5, 0.5)
    assert np.all(profile.ci[:, 0] <= profile.dimension) and np.all(profile.dimension <= profile.ci[:, 1])
    assert profile.dimension[0] == pytest.approx(profile.dimension[4], rel=0.2)
    assert np.allclose(profile.n_points, 512)


def test_duplicates_are_dropped_and_counted():
    cloud = curved_manifold(**BOOK, dimension=4, d=256, seed=2)
    x = np.concatenate([cloud.x, cloud.x[:40]])
    estimate = idm.two_nn(x, n_boot=50)
    assert estimate.n_dropped >= 40  # the 40 copies; their first copies keep a ratio
    assert estimate.dimension == pytest.approx(4, rel=0.15)


def test_bad_input_is_refused():
    x = curved_manifold(**BOOK, dimension=3, d=64, seed=0).x
    with pytest.raises(InvalidInputError, match="n1"):
        idm.gride(x, n1=2, n2=2)
    with pytest.raises(InvalidInputError, match="finite"):
        idm.gride(np.where(np.arange(x.size).reshape(x.shape) == 5, np.nan, x))
    with pytest.raises(InvalidInputError, match="one label per point"):
        idm.gride(x, np.zeros(3))
    with pytest.raises(InvalidInputError, match="duplicates"):
        idm.two_nn(np.ones((50, 8)))


def test_a_massive_coordinate_in_a_few_tokens_leaves_the_dimension():
    cloud = curved_manifold(**BOOK, dimension=6, d=384, rho=0.3, seed=4)
    x = cloud.x.copy()
    x[::50, 0] = 300.0  # a sink-like token every 50 tokens: far from everything, and each other's neighbours
    for n1 in (1, 8):
        estimate = idm.gride(x, cloud.prompt_ids, n1=n1, n_boot=50).dimension
        assert estimate == pytest.approx(6, rel=0.15), n1
