"""Prototypes against one heavy-tailed cloud (issue 54, item 3), at the book's sizes (512 tokens of 128 prompts,
d = 576, prompt-correlated): the Student-t EM against scipy, the call on clouds with and without prototypes, and
BIC's ``k`` against chapter 4's spike count (Theorem 6.3: ``k - 1`` spikes above the BBP threshold)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from latentbook.analysis import cloud_families as cf
from latentbook.analysis import prototypes as pt
from latentbook.analysis.code_calibration import strength_for_separation
from latentbook.errors import InvalidInputError


def test_the_t_density_is_scipys():
    rng = np.random.default_rng(0)
    scale = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 0.5]])
    x = rng.standard_normal((7, 3))
    np.testing.assert_allclose(
        pt.t_logpdf(x, np.ones(3), scale, 4.5), stats.multivariate_t(np.ones(3), scale, df=4.5).logpdf(x)
    )


def test_the_em_recovers_a_student_t():
    truth = np.diag([1.0, 2.0, 3.0, 4.0, 5.0])
    x = stats.multivariate_t(np.ones(5), truth, df=4).rvs(4000, random_state=1)
    fit = pt.fit_t(x)
    assert 3.3 < fit.df < 4.8
    np.testing.assert_allclose(fit.mean, 1.0, atol=0.1)
    np.testing.assert_allclose(np.diag(fit.scale), np.diag(truth), rtol=0.15)
    gaussian = pt.fit_t(np.random.default_rng(2).standard_normal((2000, 3)))
    assert gaussian.df > 100  # no tail: the top of the range, a Gaussian
    with pytest.raises(InvalidInputError):
        pt.fit_t(x[:4])


@pytest.mark.parametrize("k", [4, 8])
def test_prototypes_are_found_and_k_minus_one_is_the_spike_count(k):
    cloud = cf.rotated_prototypes(
        strength_for_separation(12), k, seed=0
    )  # 12 noise s.d. apart: far above BBP
    test = pt.prototype_test(cloud.x, cloud.prompt_ids, n_boot=300)
    assert test.prototypes and test.low > 0.5
    assert test.k == k
    assert test.n_spikes == k - 1


@pytest.mark.parametrize(
    "make",
    [
        lambda: cf.noise("gaussian", seed=1),
        lambda: cf.noise("t3", seed=1),
        lambda: cf.t_cloud(3, seed=1),
        lambda: cf.t_cloud(5, seed=1),
    ],
    ids=["gaussian", "t3 coordinates", "t cloud 3 df", "t cloud 5 df"],
)
def test_one_cloud_is_not_called_prototypes(make):
    cloud = make()
    test = pt.prototype_test(cloud.x, cloud.prompt_ids, n_boot=300, count_spikes=False)
    assert not test.prototypes
    assert test.gain <= 0.01  # one t describes held-out tokens at least as well as any tied mixture


def test_prototype_test_refuses_bad_input():
    cloud = cf.noise("gaussian", n_prompts=8, seed=0)
    with pytest.raises(InvalidInputError):
        pt.prototype_test(cloud.x, cloud.prompt_ids[:-1])
    with pytest.raises(InvalidInputError):
        pt.prototype_test(cloud.x, cloud.prompt_ids, n_dims=cf.WIDTH)
