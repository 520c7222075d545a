"""What chapter 2 (attention thermodynamics) says about its glued numbers, checked over the executed chapter."""

from __future__ import annotations

import numpy as np
import pytest

from .built_book import glued

TRAINED = ("smollm2", "gemma3", "minilm")
TWINS = tuple(f"random_{s}" for s in TRAINED)


@pytest.fixture(scope="module")
def g():
    return glued("thermodynamics")


def test_the_free_energy_identities_hold_to_float64_rounding(g):
    assert max(g["ch2_fmin_error"], g["ch2_kl_error"]) < 1e-10, "(float64 rounding)"


def test_no_random_row_beats_the_softmax(g):
    assert g["ch2_min_random_gap"] >= 0, "no row beats the softmax"


def test_the_models_weights_sit_below_float32_precision(g):
    assert g["ch2_model_gap"] < np.finfo(np.float32).eps, "hence far below float32's own precision"


def test_every_heads_minimum_is_at_the_models_temperature(g):
    assert g["ch2_argmin_beta_max_dev"] < 1e-9, "every head's minimum is at $\\beta' = 1$"


def test_trained_attention_is_cold_from_the_first_layer(g):
    assert min(g[f"ch2_{t}_entropy_first"] for t in TWINS) > max(
        g[f"ch2_{s}_entropy_first"] for s in TRAINED
    ), "The random twins attend almost uniformly ..., the trained models do not"
    assert g["ch2_random_smollm2_entropy_first"] > 0.95, "attend almost uniformly"


def test_with_random_weights_the_architecture_warms_with_depth(g):
    for t in TWINS:
        assert g[f"ch2_{t}_rho_entropy"] > 0.5, "Every twin's entropy rises"
        assert g[f"ch2_{t}_rho_beta"] < -0.5, "and its $\\beta_{\\text{eff}}$ falls with depth"


def test_entropy_falls_in_smollm2_weakly_in_gemma3_not_in_minilm(g):
    assert g["ch2_smollm2_rho_entropy"] < g["ch2_gemma3_rho_entropy"] < 0 < g["ch2_minilm_rho_entropy"], (
        "Entropy falls with depth in SmolLM2, weakly in Gemma 3, not in MiniLM"
    )
    assert g["ch2_smollm2_p_entropy"] < 0.05 < g["ch2_gemma3_p_entropy"], (
        "one of them shows falling entropy ..., one shows a weak, non-significant trend"
    )


def test_the_effective_inverse_temperature_does_not_rise(g):
    for s in TRAINED:
        assert g[f"ch2_{s}_rho_beta"] <= 0, "The effective inverse temperature does not rise"
        assert g[f"ch2_{s}_rho_beta_qk"] > 0, (
            "$\\beta_{\\text{eff}}$ is correlated with the query-key norm product"
        )
    assert g["ch2_minilm_beta_last"] < g["ch2_minilm_beta_first"], "where the logit spread *falls*"
