"""Attention thermodynamics: softmax minimises the free energy, and F_min is -(1/beta) log Z."""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

import latentbook as lb
from latentbook.analysis import thermo
from latentbook.capturing.attention import AttentionStats


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
        kl = stats.entropy(p, thermo.gibbs(energies, beta), axis=-1)  # KL(p || gibbs)
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


# --- known answers for what the identities above cannot see (mutation testing, issue #20) ----------------------


def test_the_default_temperature_is_one_the_models_own():
    """``beta = 1``: logits z are -E, the model's own temperature; a default of 2 would halve every 1/beta."""
    energies = np.array([[0.0, 1.0, 3.0], [2.0, 2.0, -1.0]])
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    np.testing.assert_allclose(
        thermo.gibbs(energies), np.exp(-energies) / np.exp(-energies).sum(-1, keepdims=True)
    )
    np.testing.assert_allclose(thermo.f_min(energies), -np.log(np.exp(-energies).sum(-1)))
    by_hand = (p * energies).sum(-1) + (p * np.log(p)).sum(-1)
    np.testing.assert_allclose(thermo.free_energy(p, energies), by_hand)
    np.testing.assert_allclose(
        thermo.variational_gap(p, energies), by_hand + np.log(np.exp(-energies).sum(-1))
    )


def test_float32_rows_are_computed_in_float64():
    """Attention weights and logits come out of models in float32 (or bf16): every quantity is computed in
    float64 all the same, so the free-energy identities hold to 1e-12, not to float32's 1e-7."""
    rng = np.random.default_rng(4)
    energies = rng.normal(scale=3.0, size=(6, 20)).astype(np.float32)
    p = rng.dirichlet(np.full(20, 0.5), size=6).astype(np.float32)
    p = p / p.sum(-1, keepdims=True)  # float32 rows summing to 1 within float32 rounding
    e64, p64 = energies.astype(np.float64), p.astype(np.float64)
    for got, want in (
        (thermo.free_energy(p, energies), thermo.free_energy(p64, e64)),
        (thermo.gibbs(energies), thermo.gibbs(e64)),
        (thermo.f_min(energies), thermo.f_min(e64)),
        (thermo.entropy(p), thermo.entropy(p64)),
        (thermo.logit_scale(-energies), thermo.logit_scale(-e64)),
    ):
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    gamma = np.linspace(0, 1, 9, dtype=np.float32)
    values = (1.0 + np.float32(1 / 3) * gamma).astype(np.float32)
    assert thermo.cooling_trend(gamma, values)["slope"] == pytest.approx(
        thermo.cooling_trend(gamma.astype(np.float64), values.astype(np.float64))["slope"], rel=1e-13
    )


def test_stacked_rows_keep_the_keys_on_the_last_axis():
    """(heads, queries, keys) arrays: every quantity is per row over the keys, as for each row alone."""
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(2, 3, 5))
    p = rng.dirichlet(np.ones(5), size=(2, 3))
    r = thermo.gibbs(-logits)
    assert thermo.variational_gap(p, -logits).shape == (2, 3)
    for h in range(2):
        for q in range(3):
            assert thermo.variational_gap(p, -logits)[h, q] == pytest.approx(  # KL(p || r) at beta = 1
                np.sum(p[h, q] * np.log(p[h, q] / r[h, q]))
            )
            assert thermo.logit_scale(logits)[h, q] == pytest.approx(np.std(logits[h, q]))
    beta = thermo.fit_beta(thermo.gibbs(-logits, 2.5), -logits)  # the rows of every head fitted together
    assert beta == pytest.approx(2.5, rel=1e-6)


def test_the_simplex_check_tolerates_rounding_only():
    """Entries down to -SIMPLEX_TOL are rounding (clipped to 0, so 0 log 0 = 0); a negative weight beyond it, even
    on a row summing to 1, is refused."""
    tol = thermo.SIMPLEX_TOL
    assert thermo.entropy(np.array([1.0 + tol, -tol])) == pytest.approx(0.0, abs=1e-7)
    assert thermo.entropy(np.array([0.5 + tol / 2, 0.5 + tol / 2, -tol])) == pytest.approx(
        np.log(2), abs=1e-7
    )
    with pytest.raises(lb.InvalidInputError, match="entries >= 0 summing to 1"):
        thermo.entropy(np.array([1.5, -0.5]))
    with pytest.raises(lb.InvalidInputError, match=r"normalise with p / p\.sum\(-1, keepdims=True\)\.$"):
        thermo.entropy(np.array([0.5, 0.6]))


def test_fit_beta_refuses_rows_no_temperature_explains():
    """Uniform rows are beta = 0 and one-hot rows on the lowest energy are beta = infinity: outside any bounds.
    Small energies (mean-energy gaps far below 1) are fitted all the same."""
    energies = np.array([[0.0, 1.0, 2.0, 3.0]])
    message = r"No beta in the bounds fits these rows: their mean energy must lie between the uniform row's"
    with pytest.raises(lb.InvalidInputError, match=message):
        thermo.fit_beta(np.full((1, 4), 0.25), energies)
    with pytest.raises(lb.InvalidInputError, match=r"Check that p and E belong together \(E = -logits\)"):
        thermo.fit_beta(np.eye(4)[:1], energies)
    with pytest.raises(lb.InvalidInputError, match="No beta"):
        thermo.fit_beta(np.eye(4)[3:], energies)  # all weight on the highest energy: beta < 0
    small = 0.01 * np.random.default_rng(6).normal(size=(16, 10))
    assert thermo.fit_beta(thermo.gibbs(small, 3.0), small) == pytest.approx(3.0, rel=1e-6)


def test_cooling_trend_reports_spearman_and_refuses_short_or_mismatched_profiles():
    gamma = np.linspace(0, 1, 8)
    values = np.array([3.0, 2.0, 2.5, 1.0, 1.2, 0.5, 0.7, 0.1])
    trend = thermo.cooling_trend(gamma, values)
    rho, p_value = stats.spearmanr(gamma, values)
    assert trend == pytest.approx({"rho": rho, "p_value": p_value, "slope": np.polyfit(gamma, values, 1)[0]})
    assert trend["rho"] < -0.8 and trend["p_value"] < 0.01
    three = thermo.cooling_trend(np.array([0.0, 0.5, 1.0]), np.array([1.0, 2.0, 4.0]))  # 3 depths: enough
    assert three["rho"] == pytest.approx(1.0) and three["slope"] == pytest.approx(3.0)
    message = r"^gamma and values must be 1-d arrays of the same length, at least 3 depths\.$"
    for bad_gamma, bad_values in (
        (np.linspace(0, 1, 4), np.zeros(5)),  # lengths differ
        (np.zeros((2, 4)), np.zeros((2, 4))),  # not 1-d
        (np.linspace(0, 1, 2), np.zeros(2)),  # too short
    ):
        with pytest.raises(lb.InvalidInputError, match=message):
            thermo.cooling_trend(bad_gamma, bad_values)


def _stats(rows, **per_row):
    """AttentionStats with ``rows[l, h]`` recorded rows whose per-row means are ``per_row[name][l, h]``."""
    rows = np.asarray(rows, dtype=np.float64)
    stats = AttentionStats(*rows.shape)
    stats.sums["rows"] += torch.tensor(rows)
    stats.sums["std_rows"] += torch.tensor(rows)
    for name, mean in per_row.items():
        stats.sums[name] += torch.tensor(rows * np.asarray(mean, dtype=np.float64))
    return stats


HEAD_MEANS = {  # per (layer, head): 3 layers, 2 heads, every number different
    "entropy": [[2.0, 1.0], [1.5, 0.5], [0.4, 0.2]],
    "log_keys": [[4.0, 2.0], [3.0, 2.5], [0.5, 1.0]],  # below 1 at the last layer: rows of two keys or fewer
    "max_weight": [[0.1, 0.3], [0.4, 0.6], [0.7, 0.9]],
    "logit_std": [[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]],
    "free_energy": [[-1.0, -2.0], [-3.0, -5.0], [-8.0, -13.0]],
    "query_norm": [[1.0, 3.0], [2.0, 6.0], [5.0, 7.0]],
    "key_norm": [[2.0, 4.0], [1.0, 3.0], [0.5, 1.5]],
}


def test_cooling_is_the_head_mean_of_each_statistic_per_layer():
    stats = _stats([[10, 10], [7, 7], [3, 3]], **HEAD_MEANS)
    frame = thermo.cooling(stats)
    expected = pd.DataFrame(
        {
            "layer": [1, 2, 3],
            "gamma": [1 / 3, 2 / 3, 1.0],
            "entropy": [1.5, 1.0, 0.3],
            "normalized_entropy": [(0.5 + 0.5) / 2, (0.5 + 0.2) / 2, (0.8 + 0.2) / 2],
            "max_weight": [0.2, 0.5, 0.8],
            "beta_eff": [1.5, 3.5, 6.0],
            "free_energy": [-1.5, -4.0, -10.5],
            "query_norm": [2.0, 4.0, 6.0],
            "key_norm": [3.0, 2.0, 1.0],
            "qk_norm": [6.0, 8.0, 6.0],
        }
    )
    pd.testing.assert_frame_equal(frame, expected, check_dtype=False, rtol=1e-12)
    capture_like = types.SimpleNamespace(attention=stats)  # a Capture made with attention=True
    pd.testing.assert_frame_equal(thermo.cooling(capture_like), frame)


def test_cooling_keeps_only_the_layers_a_capture_recorded():
    """A capture with depths=... records some layers only: the others (no rows) are left out, each kept layer
    with its own l and gamma = l / L; a layer with a single recorded row is recorded."""
    stats = _stats([[10, 10], [0, 0], [3, 3]], **HEAD_MEANS)
    frame = thermo.cooling(stats)
    assert list(frame.index) == [0, 1]
    assert list(frame.columns) == list(
        thermo.cooling(_stats([[10, 10], [7, 7], [3, 3]], **HEAD_MEANS)).columns
    )
    assert list(frame["layer"]) == [1, 3] and list(frame["gamma"]) == pytest.approx([1 / 3, 1.0])
    assert list(frame["entropy"]) == pytest.approx([1.5, 0.3])
    single = thermo.cooling(
        _stats([[1], [0], [1]], entropy=[[1.0], [0.0], [2.0]], log_keys=[[2.0], [1.0], [4.0]])
    )
    assert list(single["layer"]) == [1, 3] and list(single["normalized_entropy"]) == pytest.approx([0.5, 0.5])


def test_cooling_names_the_capture_it_needs():
    message = (
        r"^cooling needs attention statistics: capture with lb\.capture\(model, prompts, attention=True\) "
        r"and pass the Capture \(or its \.attention\)\.$"
    )
    with pytest.raises(lb.InvalidInputError, match=message):
        thermo.cooling(types.SimpleNamespace(attention=None))
