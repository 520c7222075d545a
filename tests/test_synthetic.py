"""The generators plant what they say they plant."""

from __future__ import annotations

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import synthetic


def test_gaussian_is_seeded_and_has_the_asked_variance():
    a = synthetic.gaussian(4000, 50, sigma2=2.5, seed=3)
    assert a.shape == (4000, 50)
    np.testing.assert_array_equal(a, synthetic.gaussian(4000, 50, sigma2=2.5, seed=3))
    assert not np.array_equal(a, synthetic.gaussian(4000, 50, sigma2=2.5, seed=4))
    assert abs(a.var() - 2.5) < 0.05


def test_spiked_covariance_plants_population_eigenvalues():
    s = synthetic.spiked_covariance(40000, 20, [9.0, 4.0], sigma2=1.0, seed=1)
    np.testing.assert_allclose(s.directions.T @ s.directions, np.eye(2), atol=1e-12)
    variances = np.var(s.x @ s.directions, axis=0)
    np.testing.assert_allclose(variances, [9.0, 4.0], rtol=0.03)
    residual = s.x - (s.x @ s.directions) @ s.directions.T
    assert abs(residual.var() * 20 / 18 - 1.0) < 0.02


def test_spiked_covariance_rejects_spikes_below_noise():
    with pytest.raises(lb.InvalidInputError, match="above sigma2"):
        synthetic.spiked_covariance(100, 10, [0.5])


@pytest.mark.parametrize("k", [2, 3, 5])
def test_mixture_has_k_minus_1_between_class_eigenvalues_at_the_formula(k):
    m = synthetic.mixture(3000, 40, k, separation=6.0, sigma2=2.0, seed=k)
    distances = np.linalg.norm(m.prototypes[:, None] - m.prototypes[None], axis=-1)
    off = distances[~np.eye(k, dtype=bool)]
    np.testing.assert_allclose(off, 6.0 * np.sqrt(2.0))
    centred = m.prototypes - m.prototypes.mean(0)
    between = np.linalg.eigvalsh(centred.T @ centred / k)[::-1]
    np.testing.assert_allclose(between[: k - 1], m.signal_eigenvalue, rtol=1e-10)
    assert np.all(between[k - 1 :] < 1e-10)
    assert np.bincount(m.labels).max() - np.bincount(m.labels).min() <= 1
    noise = m.x - m.prototypes[m.labels]
    assert abs(noise.var() - 2.0) < 0.05


def test_contraction_chain_contracts_transverse_variance_by_q_squared_per_step():
    c = synthetic.contraction_chain(2000, 16, n_steps=5, q=0.6, k_signal=3, seed=2)
    for step in range(6):
        t = c.states[step] @ c.transverse_basis
        s = c.states[step] @ c.signal_basis
        np.testing.assert_allclose(
            np.mean(t**2) / np.mean((c.states[0] @ c.transverse_basis) ** 2), 0.36**step, rtol=1e-10
        )
        np.testing.assert_allclose(np.mean(s**2), np.mean((c.states[0] @ c.signal_basis) ** 2), rtol=1e-10)
    np.testing.assert_allclose(c.states[1], c.states[0] @ c.maps.T)


def test_order_parameter_curve_is_the_sigmoid_plus_noise():
    c = synthetic.order_parameter_curve(
        gamma_c=0.3, width=0.05, amplitude=0.2, base=0.6, noise=0.0, n_layers=20
    )
    assert c.gamma[0] == 0 and c.gamma[-1] == 1 and len(c.gamma) == 21
    np.testing.assert_allclose(c.m[6], 0.7)  # gamma = 0.3: half-way up
    assert abs(c.m[0] - 0.6) < 0.001 and abs(c.m[-1] - 0.8) < 1e-6
    noisy = synthetic.order_parameter_curve(noise=0.01, n_layers=400, seed=5)
    clean = synthetic.order_parameter_curve(noise=0.0, n_layers=400)
    assert abs(np.std(noisy.m - clean.m) - 0.01) < 0.0015


def test_as_capture_streams_the_given_tokens_like_a_model_capture():
    c = synthetic.clustered_tokens(40, 10, 12, 0.3, seed=6)
    states = np.stack([c.x, 2 * c.x, -c.x])
    cap = synthetic.as_capture(states, c.prompt_ids, c.positions, n_vectors=50, n_omega_samples=120)
    assert cap.n_layers == 2 and cap.n_tokens == 400 and cap.provenance["prompts_done"] == 40
    np.testing.assert_allclose(cap.covariance(1), np.cov(2 * c.x.T, bias=True), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(cap.omega_mean(), lb.omega(c.x).mean(), rtol=1e-5)  # Omega is scale-free
    kept = cap.vectors.prompt_ids * 10 + cap.vectors.positions  # row of each sampled token in c.x
    np.testing.assert_allclose(cap.token_vectors(2), -c.x[kept], rtol=1e-6)
    assert cap.omega_samples(0).shape == (120,)
    with pytest.raises(lb.InvalidInputError, match="n_depths"):
        synthetic.as_capture(c.x)
