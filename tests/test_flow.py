"""Transverse contraction (Theorem 6.1) and correlation against token distance, on planted ground truth."""

from __future__ import annotations

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import flow, synthetic


@pytest.mark.parametrize("q", [0.5, 0.8, 0.95])
@pytest.mark.parametrize("method", ["map", "variance"])
def test_planted_contraction_is_recovered(q, method):
    chain = synthetic.contraction_chain(n=3000, d=24, n_steps=6, q=q, k_signal=4, seed=1)
    estimate = flow.contraction_factor(chain.states, k=4, method=method)
    assert abs(estimate.q - q) < 0.05
    assert estimate.per_step.shape == (6,)


def test_map_estimator_is_not_fooled_by_noise_injected_between_layers():
    chain = synthetic.contraction_chain(n=4000, d=24, n_steps=5, q=0.6, k_signal=4, noise=0.3, seed=2)
    assert abs(flow.contraction_factor(chain.states, k=4, method="map").q - 0.6) < 0.05
    assert abs(flow.contraction_factor(chain.states, k=4, method="map", norm="spectral").q - 0.6) < 0.1
    # the variance ratio sees the noise floor: it overestimates q, which is why "map" is the default
    assert flow.contraction_factor(chain.states, k=4, method="variance").q > 0.7


def test_counting_the_signal_as_transverse_is_caught():
    chain = synthetic.contraction_chain(n=3000, d=24, n_steps=4, q=0.5, k_signal=4, seed=3)
    assert flow.contraction_factor(chain.states, k=0, method="map").q > 0.6


def test_class_subspace_as_the_relevant_subspace():
    chain = synthetic.contraction_chain(n=3000, d=24, n_steps=4, q=0.7, k_signal=1, signal_scale=6.0, seed=4)
    labels = (chain.states[0] @ chain.signal_basis[:, 0] > 0).astype(int)  # two classes along the signal
    assert abs(flow.contraction_factor(chain.states, labels=labels).q - 0.7) < 0.05


def test_transverse_variance_decays_like_q_to_the_2n():
    q = 0.8
    chain = synthetic.contraction_chain(n=4000, d=24, n_steps=8, q=q, k_signal=4, seed=5)
    v = flow.transverse_variance(chain.states, k=4)
    n = np.arange(9)
    np.testing.assert_allclose(v / v[0], q ** (2 * n), rtol=0.02)
    slope = np.polyfit(n, np.log(v), 1)[0]
    assert abs(slope - 2 * np.log(q)) < 0.01
    eig = np.stack([np.linalg.eigvalsh(np.cov(s, rowvar=False, bias=True))[::-1] for s in chain.states])
    np.testing.assert_allclose(flow.transverse_variance(eig, k=4), v)


def test_layer_map_recovers_a_planted_map_and_refuses_underdetermined_fits():
    chain = synthetic.contraction_chain(n=500, d=16, n_steps=1, q=0.3, seed=6)
    a = flow.layer_map(chain.states[0], chain.states[1])
    np.testing.assert_allclose(a, chain.maps, atol=1e-8)
    with pytest.raises(lb.InvalidInputError, match="underdetermined"):
        flow.layer_map(chain.states[0][:10], chain.states[1][:10])
    assert flow.layer_map(chain.states[0][:10], chain.states[1][:10], ridge=1e-2).shape == (16, 16)


def test_complement_is_orthonormal_and_orthogonal():
    rng = np.random.default_rng(0)
    basis = flow.principal_basis(rng.normal(size=(200, 10)), 3)
    comp = flow.complement(basis)
    np.testing.assert_allclose(comp.T @ comp, np.eye(7), atol=1e-12)
    np.testing.assert_allclose(basis.T @ comp, 0, atol=1e-12)


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_distance_correlation_recovers_rho_to_the_r(rho):
    h = synthetic.correlated_sequences(n_prompts=60, length=40, d=64, rho=rho, seed=7)
    corr = flow.distance_correlation(h, max_distance=8)
    np.testing.assert_allclose(corr, rho ** np.arange(9), atol=0.03)
    xi = flow.correlation_length(corr)
    assert abs(xi - (-1 / np.log(rho))) < 0.1 * (-1 / np.log(rho))


def test_padding_is_ignored_and_depths_stack():
    h = synthetic.correlated_sequences(n_prompts=30, length=30, d=32, rho=0.6, seed=8)
    mask = np.ones((30, 30), dtype=bool)
    mask[::2, 20:] = False  # right padding on half the prompts
    padded = h.copy()
    padded[~mask] = 1e3
    expected = flow.distance_correlation(h[:, :20], max_distance=5)
    got = flow.distance_correlation(np.stack([padded, padded]), mask, max_distance=5)
    assert got.shape == (2, 6)
    assert np.abs(got[0] - expected).max() < 0.05  # same process, more pairs: close, and not wrecked by 1e3
    np.testing.assert_allclose(flow.correlation_length(got), flow.correlation_length(got[0]))


def test_bad_inputs_say_what_to_do():
    with pytest.raises(lb.InvalidInputError, match="same tokens at every depth"):
        flow.contraction_factor(np.zeros((5, 4)))
    with pytest.raises(lb.InvalidInputError, match="start"):
        flow.contraction_factor(np.zeros((3, 10, 4)), start=2, stop=1)
    with pytest.raises(lb.InvalidInputError, match="max_distance"):
        flow.distance_correlation(np.zeros((2, 5, 3)), max_distance=5)
