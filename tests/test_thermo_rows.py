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
