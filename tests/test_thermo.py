"""Attention thermodynamics: softmax minimises the free energy, and F_min is -(1/beta) log Z."""

from __future__ import annotations

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import thermo


@pytest.mark.parametrize("beta", [0.3, 1.0, 4.0])
def test_random_points_on_the_simplex_never_lower_f_below_softmax(beta):
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(2, 40))
        energies = rng.normal(scale=3.0, size=n)
        best = thermo.free_energy(thermo.gibbs(energies, beta), energies, beta)
        far = rng.dirichlet(np.full(n, 0.3), size=2000)  # anywhere on the simplex, corners included
        assert np.all(thermo.free_energy(far, energies, beta) >= best - 1e-12)
        direction = rng.normal(size=(2000, n))
        direction -= direction.mean(1, keepdims=True)  # stay on the plane sum p = 1
        for eps in (1e-6, 1e-3, 1e-1):
            near = thermo.gibbs(energies, beta) + eps * direction / np.abs(direction).max(1, keepdims=True)
            near = near[(near >= 0).all(1)]
            assert np.all(thermo.free_energy(near, energies, beta) >= best - 1e-12)


def test_f_at_softmax_is_minus_log_partition_over_beta():
    rng = np.random.default_rng(1)
    for beta in (0.1, 1.0, 7.0):
        energies = rng.normal(scale=2.0, size=(50, 30))
        log_z = np.log(np.exp(-beta * energies).sum(-1))  # direct formula, fine at these scales
        expected = -log_z / beta
        np.testing.assert_allclose(thermo.f_min(energies, beta), expected, atol=1e-10, rtol=0)
        np.testing.assert_allclose(
            thermo.free_energy(thermo.gibbs(energies, beta), energies, beta), expected, atol=1e-10, rtol=0
        )


def test_f_min_is_stable_for_huge_energies():
    energies = np.array([1000.0, 1001.0, 5000.0])
    value = thermo.f_min(energies, beta=10.0)
    assert np.isfinite(value)
    assert abs(value - (1000.0 - np.log1p(np.exp(-10.0)) / 10.0)) < 1e-10


def test_variational_identity_gap_is_kl_over_beta():
    rng = np.random.default_rng(2)
    for beta in (0.5, 2.0):
        energies = rng.normal(size=(200, 16))
        p = rng.dirichlet(np.ones(16), size=200)
        gap = thermo.variational_gap(p, energies, beta)
        kl = thermo.kl_divergence(p, thermo.gibbs(energies, beta))
        np.testing.assert_allclose(gap, kl / beta, atol=1e-10, rtol=0)
        assert np.all(gap > 0)


def test_entropy_of_uniform_and_one_hot_rows():
    np.testing.assert_allclose(thermo.entropy(np.full((3, 8), 1 / 8)), np.log(8), atol=1e-12)
    assert thermo.entropy(np.eye(5)[2]) == 0.0


def test_fit_beta_recovers_the_temperature_of_gibbs_rows():
    rng = np.random.default_rng(3)
    energies = rng.normal(size=(64, 20))
    for beta in (0.2, 1.0, 3.7):
        assert abs(thermo.fit_beta(thermo.gibbs(energies, beta), energies) - beta) < 1e-6 * beta


def test_logit_scale_is_the_row_std():
    z = np.array([[0.0, 2.0], [1.0, 1.0]])
    np.testing.assert_allclose(thermo.logit_scale(z), [1.0, 0.0])


def test_cooling_trend_sees_a_monotone_fall():
    gamma = np.linspace(0, 1, 10)
    trend = thermo.cooling_trend(gamma, 3.0 - 2.0 * gamma)
    assert trend["rho"] == pytest.approx(-1.0) and trend["slope"] == pytest.approx(-2.0)


def test_bad_inputs_say_what_to_do():
    with pytest.raises(lb.InvalidInputError, match="inverse temperature"):
        thermo.gibbs(np.zeros(3), beta=0.0)
    with pytest.raises(lb.InvalidInputError, match="probability rows"):
        thermo.free_energy(np.array([0.5, 0.6]), np.zeros(2))
    with pytest.raises(lb.InvalidInputError, match="attention=True"):
        thermo.cooling(object())
