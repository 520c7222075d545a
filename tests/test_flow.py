"""Transverse contraction (Theorem 6.1) and correlation against token distance, on planted ground truth."""

from __future__ import annotations

import warnings

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


# --- ground truth by hand: exact chains, exact answers ---------------------------------------------------------


def _whitened(n: int, d: int, seed: int) -> np.ndarray:
    """``n`` tokens whose centred Gram matrix is exactly ``n I``: every ridge and every map is known by hand."""
    x = np.random.default_rng(seed).standard_normal((n, d))
    q, _ = np.linalg.qr(x - x.mean(0))
    return q * np.sqrt(n) + 2.0  # an offset the centring must remove


def _turning_chain(factors, n_steps: int, n: int = 2000, seed: int = 0, centroids=None):
    """A chain whose relevant subspace turns with depth: ``h^(l) = U_l z^(l)``, ``U_l`` a fresh random rotation
    at every depth, ``z`` keeping its first ``k`` coordinates (signal, variance 9, or class centroids plus unit
    noise) and multiplying coordinate ``k + j`` by ``factors[j]`` per step. Returns the states, and the labels
    when ``centroids`` (``(c, k)``) are given."""
    rng = np.random.default_rng(seed)
    factors = np.asarray(factors, dtype=np.float64)
    d = len(factors) + (3 if centroids is None else np.shape(centroids)[1])
    k = d - len(factors)
    z = rng.standard_normal((n, d))
    labels = None
    if centroids is None:
        z[:, :k] *= 3.0
    else:
        labels = rng.integers(0, len(centroids), n)
        z[:, :k] += np.asarray(centroids)[labels]
    states = []
    for _ in range(n_steps + 1):
        states.append(z @ synthetic.random_orthonormal(d, d, rng).T)
        z = z * np.r_[np.ones(k), factors]
    return np.stack(states), labels


def test_a_relevant_subspace_that_turns_with_depth_is_followed_depth_by_depth():
    states, _ = _turning_chain([0.5] * 9, n_steps=3)
    for method in ("map", "variance"):
        estimate = flow.contraction_factor(states, k=3, method=method)
        np.testing.assert_allclose(estimate.per_step, 0.5, rtol=0.02)


def test_the_spectral_norm_is_the_slowest_transverse_direction():
    factors = np.r_[0.9, 0.6, [0.5] * 7]
    states, _ = _turning_chain(factors, n_steps=2)
    spectral = flow.contraction_factor(states, k=3, norm="spectral")
    rms = flow.contraction_factor(states, k=3, norm="rms")
    assert spectral.q == pytest.approx(0.9, rel=0.02)
    assert rms.q == pytest.approx(np.sqrt(np.mean(factors**2)), rel=0.02)


def test_three_classes_make_a_two_dimensional_relevant_subspace():
    centroids = 4.0 * np.array([[1.0, 0.0], [-0.5, 0.9], [-0.5, -0.9]])
    states, labels = _turning_chain([0.5] * 6, n_steps=3, centroids=centroids)
    # the labels follow the tokens: the class subspace at each depth is U_l's first two columns
    assert flow.contraction_factor(states, labels=labels).q == pytest.approx(0.5, rel=0.03)
    # without the labels every direction is transverse: the kept plane pulls the RMS factor up
    assert flow.contraction_factor(states).q == pytest.approx(np.sqrt((2 + 6 * 0.25) / 8), rel=0.03)


def test_the_default_counts_every_direction_as_transverse():
    q, d, k = 0.5, 24, 4
    chain = synthetic.contraction_chain(n=1000, d=d, n_steps=2, q=q, k_signal=k, seed=9)
    whole = np.sqrt((k + (d - k) * q**2) / d)  # the map is exact: k singular values 1, d - k of them q
    assert flow.contraction_factor(chain.states).q == pytest.approx(whole, rel=1e-6)


def test_one_step_and_a_sub_interval_report_their_own_steps():
    chain = synthetic.contraction_chain(n=1500, d=12, n_steps=4, q=0.6, k_signal=2, seed=10)
    one = flow.contraction_factor(chain.states[:2], k=2)
    two_tokens = np.array([[[0.0], [1.0]], [[0.0], [0.5]]])  # the fewest tokens there is a variance of
    for method in ("map", "variance"):
        assert flow.contraction_factor(two_tokens, method=method).q == pytest.approx(0.5, rel=1e-6)
    assert one.per_step.shape == (1,) and one.q == pytest.approx(0.6, rel=1e-3)
    full = flow.contraction_factor(chain.states, k=2, method="variance")
    part = flow.contraction_factor(chain.states, k=2, start=1, stop=3, method="variance")
    assert (part.start, part.stop, part.method) == (1, 3, "variance")
    np.testing.assert_allclose(part.per_step, full.per_step[1:3], rtol=1e-12)
    assert part.q == pytest.approx(np.sqrt(full.per_step[1] * full.per_step[2]), rel=1e-12)


def test_a_bias_at_every_depth_changes_no_factor():
    chain = synthetic.contraction_chain(n=1500, d=12, n_steps=3, q=0.6, k_signal=2, seed=11)
    biased = chain.states + 5.0 * np.random.default_rng(0).standard_normal((4, 1, 12))
    for method in ("map", "variance"):
        for k in (0, 2):
            np.testing.assert_allclose(
                flow.contraction_factor(biased, k=k, method=method).per_step,
                flow.contraction_factor(chain.states, k=k, method=method).per_step,
                rtol=1e-8,
            )
    np.testing.assert_allclose(flow.transverse_variance(biased, 2), flow.transverse_variance(chain.states, 2))


def test_the_ridge_shrinks_the_map_by_its_relative_size():
    x = _whitened(400, 6, seed=12)
    a = np.random.default_rng(1).standard_normal((6, 6))
    y = x @ a.T - 3.0
    np.testing.assert_allclose(flow.layer_map(x, y), a, atol=1e-6)
    # Xc^T Xc = n I, so lambda = ridge * n and A_ridge = A / (1 + ridge)
    np.testing.assert_allclose(flow.layer_map(x, y, ridge=0.5), a / 1.5, atol=1e-12)
    states = np.stack([x, 0.8 * x])
    assert flow.contraction_factor(states, ridge=1.0).q == pytest.approx(0.4, rel=1e-12)


def test_layer_map_of_two_tokens_in_one_dimension_and_refusals_that_name_the_argument():
    assert flow.layer_map([[0.0], [1.0]], [[5.0], [7.0]])[0, 0] == pytest.approx(2.0, rel=1e-6)
    x = np.random.default_rng(2).standard_normal((10, 3))
    with pytest.raises(
        lb.InvalidInputError, match=r"underdetermined\. .* ridge=1e-2 to shrink the unsampled directions\.$"
    ):
        flow.layer_map(x[:3], x[:3])  # n = d
    with pytest.raises(lb.InvalidInputError, match="10 vs 12 rows"):
        flow.layer_map(x, np.ones((12, 3)))
    with pytest.raises(lb.InvalidInputError, match=r"^x must be a 2-d array \(n_tokens >= 2, d\)"):
        flow.layer_map(np.ones(5), x)
    with pytest.raises(lb.InvalidInputError, match=r"^x must be a 2-d array"):
        flow.layer_map(np.ones((1, 3)), x[:1])
    with pytest.raises(lb.InvalidInputError, match="^y contains NaN"):
        flow.layer_map(x, np.where(x > 1, np.nan, x))
    with pytest.raises(lb.InvalidInputError, match="^x must be a 2-d array"):
        flow.principal_basis(np.ones(4), 1)
    with pytest.raises(lb.InvalidInputError, match="^x contains NaN"):
        flow.class_basis(np.full((4, 2), np.nan), np.array([0, 0, 1, 1]))


def test_float16_and_float32_tokens_are_computed_in_float64():
    """Captures keep token vectors in float32 (or float16): the estimators must not inherit their precision."""
    chain = synthetic.contraction_chain(n=600, d=8, n_steps=2, q=0.7, k_signal=2, seed=13)
    low = chain.states.astype(np.float16)
    np.testing.assert_allclose(
        flow.layer_map(low[0], low[1]), flow.layer_map(low[0].astype(np.float64), low[1].astype(np.float64))
    )
    eig = np.array([[10.0, 5.0, 2.0, 1.0]], dtype=np.float16)
    np.testing.assert_allclose(flow.transverse_variance(eig, 1), [8 / 3], rtol=1e-12)  # approx passes float16
    h = synthetic.correlated_sequences(n_prompts=10, length=12, d=16, rho=0.6, seed=14).astype(np.float16)
    corr = flow.distance_correlation(h, max_distance=4)
    np.testing.assert_allclose(
        corr, flow.distance_correlation(h.astype(np.float64), max_distance=4), rtol=1e-12
    )
    curve = np.exp(-np.arange(6) / 2).astype(np.float16)
    assert flow.correlation_length(curve) == pytest.approx(
        flow.correlation_length(curve.astype(np.float64)), rel=1e-12
    )


def test_k_must_be_an_integer_below_d():
    x = np.random.default_rng(3).standard_normal((20, 4))
    for bad in (4, 1.5, -1):
        with pytest.raises(
            lb.InvalidInputError, match=r"relevant dimensions\) must be an integer in \[0, 4\)"
        ):
            flow.principal_basis(x, bad)
    with pytest.raises(lb.InvalidInputError, match="relevant dimensions"):
        flow.transverse_variance(np.ones((2, 4)), 4)


def test_principal_basis_is_the_direction_of_largest_variance_not_of_the_mean():
    x = np.random.default_rng(4).standard_normal((2000, 4)) * [3.0, 1.0, 1.0, 1.0] + [0.0, 0.0, 0.0, 50.0]
    assert abs(flow.principal_basis(x, 1)[0, 0]) > 0.99


def _at_centroids(centroids: np.ndarray, per_class: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Tokens around each centroid whose class means are the centroids (the noise is centred per class)."""
    noise = np.random.default_rng(seed).standard_normal((len(centroids), per_class, centroids.shape[1]))
    noise -= noise.mean(1, keepdims=True)
    x = (centroids[:, None, :] + noise).reshape(-1, centroids.shape[1])
    return x, np.repeat(np.arange(len(centroids)), per_class)


def test_class_basis_spans_the_centroid_differences():
    offset = np.array([7.0, -3.0, 5.0, 1.0, 2.0])
    centroids = offset + np.array([[1.0, 0, 0, 0, 0], [0, 2.0, 0, 0, 0], [0, 0, 0, 0, 0]])
    basis = flow.class_basis(*_at_centroids(centroids, 30, seed=5))
    assert basis.shape == (5, 2)
    np.testing.assert_allclose(basis @ basis.T, np.diag([1.0, 1.0, 0, 0, 0]), atol=1e-10)
    line = offset + np.outer([-1.0, 0.5, 2.0], [0.6, 0.8, 0, 0, 0])  # collinear centroids: one direction
    basis = flow.class_basis(*_at_centroids(line, 30, seed=6))
    assert basis.shape == (5, 1) and abs(basis[:, 0] @ [0.6, 0.8, 0, 0, 0]) == pytest.approx(1.0)
    same = np.random.default_rng(7).standard_normal((10, 5))  # two classes of the same tokens: no subspace
    assert flow.class_basis(np.vstack([same, same]), np.repeat([0, 1], 10)).shape == (5, 0)
    with pytest.raises(lb.InvalidInputError, match=r"one entry per token \(6\), got shape \(5,\)"):
        flow.class_basis(np.ones((6, 3)), np.arange(5))
    with pytest.raises(lb.InvalidInputError, match="^class_basis needs at least two classes in labels"):
        flow.class_basis(np.ones((6, 3)), np.zeros(6))


def test_bad_intervals_methods_and_states_are_refused():
    states = np.random.default_rng(8).standard_normal((3, 20, 4))
    with pytest.raises(lb.InvalidInputError, match=r"Need 0 <= start < stop <= 2, got start=1, stop=1"):
        flow.contraction_factor(states, start=1, stop=1)
    with pytest.raises(lb.InvalidInputError, match=r"Need 0 <= start < stop <= 2, got start=0, stop=3"):
        flow.contraction_factor(states, stop=3)
    with pytest.raises(lb.InvalidInputError, match="^method must be 'map' or 'variance'"):
        flow.contraction_factor(states, method="jacobian")
    with pytest.raises(lb.InvalidInputError, match="norm 'rms' or 'spectral'"):
        flow.contraction_factor(states, norm="frobenius")
    with pytest.raises(lb.InvalidInputError, match="n_tokens >= 2"):  # one token has no variance to compare
        flow.contraction_factor(states[:, :1], method="variance")
    with pytest.raises(lb.InvalidInputError, match="n_depths >= 2"):
        flow.contraction_factor(states[:1])
    with pytest.raises(lb.InvalidInputError, match="^source must be a Capture"):
        flow.transverse_variance(np.ones(4), 1)


def test_transverse_variance_of_a_capture_and_of_unsorted_eigenvalues():
    chain = synthetic.contraction_chain(n=800, d=10, n_steps=2, q=0.6, k_signal=2, seed=15)
    cap = synthetic.as_capture(chain.states, n_vectors=64, n_omega_samples=16)
    np.testing.assert_allclose(
        flow.transverse_variance(cap, 2), flow.transverse_variance(chain.states, 2), rtol=1e-4
    )
    assert flow.transverse_variance(np.array([[1.0, 2.0, 5.0, 10.0]]), 1)[0] == pytest.approx(8 / 3)


def test_geometric_mean_of_block_factors():
    assert flow.q_from_block_factors(np.array([0.5, 0.8, 0.2])) == pytest.approx(0.08 ** (1 / 3), rel=1e-12)
    rows = np.array([[0.5, 0.5, 0.5], [0.9, 0.1, 1.0]])
    np.testing.assert_allclose(flow.q_from_block_factors(rows), [0.5, 0.09 ** (1 / 3)], rtol=1e-12)
    np.testing.assert_allclose(
        flow.q_from_block_factors(rows, axis=0), np.sqrt(rows[0] * rows[1]), rtol=1e-12
    )
    assert flow.q_from_block_factors(np.array([0.5, 0.0])) == 0.0
    assert np.isnan(flow.q_from_block_factors(np.array([0.5, np.nan])))


def test_q_from_a_variance_that_decays_like_q_to_the_2l():
    layers = np.array([3.0, 4.0, 5.0, 7.0, 8.0])  # uneven, and far from 0: the slope is not the ratio of ends
    v = 2.5 * 0.7 ** (2 * layers)
    assert flow.q_from_variance_decay(layers, v) == pytest.approx(0.7, rel=1e-12)
    rows = np.stack([v, 4.0 * 0.9 ** (2 * layers)])
    np.testing.assert_allclose(flow.q_from_variance_decay(layers, rows), [0.7, 0.9], rtol=1e-12)


# --- correlation against token distance, by hand -----------------------------------------------------------


def test_correlation_length_uses_the_curve_down_to_the_floor_only():
    e = np.exp(-np.arange(4) / 2)  # xi = 2 exactly
    assert flow.correlation_length(np.r_[e[:3], 0.05, 0.3, 0.01]) == pytest.approx(2.0, rel=1e-12)
    assert flow.correlation_length(np.r_[e[:2], 0.01, 0.5]) == pytest.approx(2.0, rel=1e-12)  # one point
    assert flow.correlation_length(np.array([1.0, 0.01, 0.5])) == 0.0  # below the floor at once
    assert flow.correlation_length(np.ones(4)) == np.inf  # no decay
    assert flow.correlation_length(np.array([1.0, 1.1, 1.3])) == np.inf  # growth
    curve = np.r_[e, 0.2, 0.1]
    np.testing.assert_allclose(flow.correlation_length(np.stack([curve, curve]), floor=0.25), [2.0, 2.0])
    assert flow.correlation_length(curve) != pytest.approx(2.0)  # the default floor keeps 0.2 and 0.1


def test_distance_correlation_by_hand_with_a_token_at_the_mean():
    # one prompt, centred tokens (2, 0), (0, 0), (-1, 1), (-1, -1): the second has no direction and counts as 0
    h = np.array([[[2.0, 0.0], [0.0, 0.0], [-1.0, 1.0], [-1.0, -1.0]]]) + [3.0, -2.0]
    expected = [1.0, 0.0, -1 / (2 * np.sqrt(2)), -1 / np.sqrt(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no 0/0, and no read of memory the division left unwritten
        np.testing.assert_allclose(flow.distance_correlation(h, max_distance=3), expected, atol=1e-15)
    np.testing.assert_allclose(flow.distance_correlation(1e-3 * h, max_distance=3), expected, atol=1e-12)


def test_distance_correlation_is_blind_to_offsets_padding_values_and_mask_type():
    h = synthetic.correlated_sequences(n_prompts=20, length=24, d=16, rho=0.6, seed=16)
    base = flow.distance_correlation(h)
    assert base.shape == (17,)  # r = 0..16 by default
    np.testing.assert_allclose(flow.distance_correlation(h + np.linspace(-9, 9, 16)), base, atol=1e-12)
    mask = np.ones((20, 24), dtype=bool)
    mask[::3, 15:] = False
    one, other = h.copy(), h.copy()
    one[~mask], other[~mask] = 1e3, -7.0
    masked = flow.distance_correlation(one, mask, max_distance=1)
    assert masked.shape == (2,)
    np.testing.assert_allclose(flow.distance_correlation(other, mask, max_distance=1), masked, atol=1e-12)
    np.testing.assert_allclose(
        flow.distance_correlation(other, mask.astype(int), max_distance=1), masked, atol=1e-12
    )
    with pytest.raises(lb.InvalidInputError, match=r"max_distance must be in \[1, 23\] \(T = 24\)"):
        flow.distance_correlation(h, max_distance=24)
    with pytest.raises(lb.InvalidInputError, match="^hidden must be"):
        flow.distance_correlation(h[0])
    with pytest.raises(lb.InvalidInputError, match=r"^mask must have shape \(n_prompts, T\)"):
        flow.distance_correlation(h, mask[:, :5])
    alone = np.zeros((20, 24), dtype=bool)
    alone[:, 0] = True
    with pytest.raises(lb.InvalidInputError, match="^No prompt has two real tokens 1 apart"):
        flow.distance_correlation(h, alone, max_distance=1)


def test_q_from_block_factors_is_the_geometric_mean_per_row():
    assert flow.q_from_block_factors(np.array([0.5, 2.0, 0.25, 4.0])) == pytest.approx(1.0)
    assert flow.q_from_block_factors(np.array([0.9, 0.9, 0.9])) == pytest.approx(0.9)
    rows = np.array([[0.8, 0.5], [1.0, 4.0], [0.0, 2.0], [np.nan, 1.0]])
    np.testing.assert_allclose(flow.q_from_block_factors(rows), [np.sqrt(0.4), 2.0, 0.0, np.nan])
    chain = synthetic.contraction_chain(400, 12, 4, 0.7, k_signal=3, seed=2)
    fit = flow.contraction_factor(chain.states, k=3, method="variance")
    assert fit.q == pytest.approx(np.prod(fit.per_step) ** (1 / 4), rel=1e-12)


def test_q_from_variance_decay_reads_the_slope_of_log_v_from_every_depth():
    layers = np.arange(2.0, 8.0)
    v = 3.0 * 0.8 ** (2 * layers)
    assert flow.q_from_variance_decay(layers, v) == pytest.approx(0.8, rel=1e-12)
    bumped = v * np.exp([0.0, 0.3, -0.3, 0.3, -0.3, 0.0])  # the ends alone would still give 0.8
    slope = np.polyfit(layers, np.log(bumped), 1)[0]
    assert flow.q_from_variance_decay(layers, bumped) == pytest.approx(np.exp(slope / 2), rel=1e-12)
    assert flow.q_from_variance_decay(layers, bumped) != pytest.approx(0.8, rel=1e-3)
    rows = np.stack([v, v * 1.1 ** (2 * layers), bumped])
    np.testing.assert_allclose(
        flow.q_from_variance_decay(layers, rows), [0.8, 0.88, flow.q_from_variance_decay(layers, bumped)]
    )
