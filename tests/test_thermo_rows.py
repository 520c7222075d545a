"""The free-energy identities checked on attention rows: synthetic causal rows and one real model's rows."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import latentbook as lb
from latentbook.analysis import thermo
from latentbook.capturing.attention import attention_rows


def _causal_rows(n_heads=3, t=12, scale=3.0, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=scale, size=(n_heads, t, t))
    valid = np.broadcast_to(np.tril(np.ones((t, t), dtype=bool)), logits.shape)
    weights = torch.softmax(torch.from_numpy(np.where(valid, logits, -np.inf)).float(), -1).double().numpy()
    return logits, valid, weights


@pytest.mark.parametrize("beta", [0.5, 1.0, 3.0])
def test_identities_hold_on_masked_rows(beta):
    logits, valid, weights = _causal_rows()
    check = thermo.row_check(logits, valid, weights, beta=beta)
    assert check["rows"] == 3 * 12
    assert check["fmin_error"] < 1e-10
    assert check["model_gap"] < 1e-5  # float32 softmax weights: rounding only
    assert check["min_random_gap"] >= -1e-12  # F(p) >= F_min; equality only on one-key rows
    assert check["kl_identity_error"] < 1e-10


def test_weights_that_are_not_the_softmax_show_a_gap():
    logits, valid, _ = _causal_rows()
    uniform = valid / valid.sum(-1, keepdims=True)
    assert thermo.row_check(logits, valid, uniform)["model_gap"] > 0.1


def test_masked_keys_are_ignored():
    """A huge logit on a masked key must change nothing."""
    logits, valid, weights = _causal_rows()
    spoiled = np.where(valid, logits, 1e6)
    a, b = thermo.row_check(logits, valid, weights), thermo.row_check(spoiled, valid, weights)
    assert a == pytest.approx(b, rel=1e-12, abs=1e-15)


def test_bad_input_is_refused():
    logits, valid, weights = _causal_rows()
    with pytest.raises(lb.InvalidInputError, match="same shape"):
        thermo.row_check(logits, valid[:, :, :-1])
    empty = valid.copy()
    empty[0, 0] = False
    with pytest.raises(lb.InvalidInputError, match="at least one valid key"):
        thermo.row_check(logits, empty)


def test_attention_rows_of_a_real_model_are_its_softmax(tiny):
    rows = attention_rows(tiny, "Depth acts like time in a transformer.", layer=1)
    h, t, s = rows.logits.shape
    assert (h, t) == (tiny.model.config.num_attention_heads, s)
    assert np.array_equal(rows.valid[0], np.tril(np.ones((t, t), dtype=bool)))  # causal mask
    assert thermo.row_check(rows.logits, rows.valid, rows.weights)["model_gap"] < 1e-5
    with pytest.raises(lb.InvalidInputError, match="layer must be"):
        attention_rows(tiny, "text", layer=tiny.n_layers)


# --- known answers for what the identities alone cannot see (mutation testing, issue #20) ----------------------


def test_one_row_and_stacked_heads_are_checked_row_by_row():
    """A single row (1-d, keys only) is a row; (heads, queries, keys) stacks are checked per row over the keys."""
    logits, valid, weights = _causal_rows(n_heads=2, t=5)
    one = thermo.row_check(logits[1, 4], valid[1, 4], weights[1, 4])
    assert one["rows"] == 1 and one["fmin_error"] < 1e-12 and one["kl_identity_error"] < 1e-12
    assert one["model_gap"] < 1e-5
    check = thermo.row_check(logits, valid, weights)
    assert check["rows"] == 10 and check["fmin_error"] < 1e-12 and check["kl_identity_error"] < 1e-12
    # keys on the last axis: read along another axis, the causal mask would put weight on future keys
    assert check["model_gap"] < 1e-5 and check["min_random_gap"] >= -1e-12


def test_the_default_beta_is_the_models_own():
    logits, valid, weights = _causal_rows()
    assert thermo.row_check(logits, valid, weights) == thermo.row_check(logits, valid, weights, beta=1.0)


def test_float32_logits_are_checked_in_float64():
    """Model logits arrive in float32: the identities are checked in float64, to 1e-12."""
    logits, valid, weights = _causal_rows()
    check = thermo.row_check(logits.astype(np.float32), valid, weights.astype(np.float32))
    assert check["fmin_error"] < 1e-12 and check["kl_identity_error"] < 1e-12
    same = thermo.row_check(
        logits.astype(np.float32).astype(np.float64), valid, weights.astype(np.float32).astype(np.float64)
    )
    assert check == pytest.approx(same, rel=1e-12, abs=1e-15)


def test_a_gap_is_measured_on_the_weights_as_a_distribution():
    """Weights summing to anything but 1 (say, before the softmax's division) are rows of that distribution;
    the model gap of uniform weights over two keys with logits (0, log 3) is KL(u || (1/4, 3/4)) exactly."""
    logits, valid, weights = _causal_rows()
    assert thermo.row_check(logits, valid, 7.0 * weights)["model_gap"] < 1e-5
    two = thermo.row_check(np.array([0.0, np.log(3.0)]), np.array([True, True]), np.array([1.0, 1.0]))
    assert two["model_gap"] == pytest.approx(0.5 * np.log(0.5 / 0.25) + 0.5 * np.log(0.5 / 0.75), rel=1e-12)


def test_the_random_rows_are_random_rows_off_the_minimiser():
    """With one key 20 nats above the rest the Gibbs row is nearly one-hot; the check's Dirichlet rows spread
    their weight and pay for it (gap >= 20 (1 - p_0) - log 4), and the KL identity holds on every one of them."""
    z = np.array([[20.0, 0.0, 0.0, 0.0]] * 4)
    check = thermo.row_check(z, np.ones_like(z, dtype=bool), n_random=8)
    assert check["min_random_gap"] > 1.0 and check["kl_identity_error"] < 1e-10
    flat = thermo.row_check(
        np.zeros((4, 6)), np.ones((4, 6), dtype=bool)
    )  # Gibbs uniform: every row above it
    assert 1e-3 < flat["min_random_gap"] < np.log(6) and flat["kl_identity_error"] < 1e-12


def test_refusals_name_the_shapes_and_the_fix():
    logits, valid, weights = _causal_rows()
    with pytest.raises(lb.InvalidInputError, match=r"got \(3, 12, 12\), \(3, 12, 12\) and \(3, 12, 11\)\.$"):
        thermo.row_check(logits, valid, weights[..., :-1])
    with pytest.raises(lb.InvalidInputError, match=r"got \(3, 12, 12\), \(3, 12, 11\) and None\.$"):
        thermo.row_check(logits, valid[..., :-1])
    empty = valid.copy()
    empty[0, 0] = False
    with pytest.raises(
        lb.InvalidInputError,
        match=r"^Every row needs at least one valid key: drop padding rows before checking\.$",
    ):
        thermo.row_check(logits, empty)
