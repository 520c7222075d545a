"""What chapter 1's prose says about its glued numbers, checked over the executed page (``tests/built_book.py``)."""

from __future__ import annotations

import pytest

from latentbook.analysis.paper import PAPER_GAMMA_C

from .built_book import glued


@pytest.fixture(scope="module")
def g():
    return glued("depth_as_time")


def test_minilm_has_the_fewest_layers_and_no_depth_at_the_papers_gamma(g):
    assert g["ch1_minilm_layers"] < min(g["ch1_smollm2_layers"], g["ch1_gemma_layers"]), "and MiniLM only"
    assert (PAPER_GAMMA_C * g["ch1_minilm_layers"]) % 1 > 0, "falls between two of MiniLM's depths"


@pytest.mark.parametrize("model", ["smollm2-135m", "gemma3-270m"])
def test_decoders_grow_with_random_weights_and_far_more_with_trained(model, g):
    trained, twin = g[f"ch1_growth_{model}"], g[f"ch1_growth_random_{model}"]
    assert trained > twin > 1, "growth is expected even with random weights; what training adds is the gap"


def test_minilm_stays_bounded(g):
    assert g["ch1_growth_minilm-l6"] < 1, "(the learned LayerNorm gains of the last layer are small)"
    assert abs(g["ch1_growth_random_minilm-l6"] - 1) < 0.01, "whose LayerNorm gains are all one"


def test_smollm2_jumps_in_one_layer_at_the_papers_critical_depth(g):
    assert g["ch1_smollm2_step_factor"] > 10, "its RMS jumps by a factor ... in one layer"
    assert abs(g["ch1_smollm2_step_gamma"] - PAPER_GAMMA_C) < 0.05, (
        "it sits right where the paper places its critical depth"
    )


def test_gemma_scales_its_embeddings_by_sqrt_d_and_smollm2_does_not(g):
    assert abs(g["ch1_gemma_scale_ratio"] / g["ch1_gemma_sqrt_d"] - 1) < 1e-3, (
        "the measured ratio is ..., against sqrt(d)"
    )
    assert abs(g["ch1_smollm2_scale_ratio"] - 1) < 1e-3, "for SmolLM2 it is ... (no scaling)"


def test_hidden_states_last_entry_is_the_final_norm_not_the_last_layer(g):
    assert g["ch1_hs_count"] == g["ch1_gemma_layers"] + 1, "The tuple has ... entries for Gemma's ... layers"
    assert g["ch1_hs_vs_final"] < 1e-6, "(they are the same tensor)"
    assert g["ch1_hs_vs_layer_L"] > 0.5, "a different vector altogether"
    assert g["ch1_hs0_vs_depth0"] < 1e-6, "`hidden_states[0]` matches depth 0"


@pytest.mark.parametrize("model", ["smollm2", "gemma3"])
def test_the_final_norm_undoes_the_growth(model, g):
    assert g[f"ch1_{model}_rms_after"] < g[f"ch1_{model}_rms_before"], "The final norm undoes the growth"
    assert g[f"ch1_{model}_max_abs_after"] < g[f"ch1_{model}_max_abs_before"], (
        "the largest coordinate of any token falls"
    )


def test_the_final_norm_drops_omega_in_gemma_only(g):
    change = abs(g["ch1_smollm2_omega_before"] - g["ch1_smollm2_omega_after"])
    drop = g["ch1_gemma3_omega_before"] - g["ch1_gemma3_omega_after"]
    assert change < 0.1 < drop, "mean Omega goes from ... in SmolLM2, but from ... in Gemma 3: sees a drop"


@pytest.mark.parametrize("twin", ["random_smollm2", "random_gemma3"])
def test_the_twins_final_norm_changes_only_the_scale(twin, g):
    assert abs(g[f"ch1_{twin}_omega_before"] - g[f"ch1_{twin}_omega_after"]) < 1e-3, (
        "their Omega columns agree to the third decimal"
    )
