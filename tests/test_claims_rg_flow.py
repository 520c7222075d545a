"""What chapter 5 (book/rg_flow.md) says about its glued numbers, checked over the executed page."""

from __future__ import annotations

from .built_book import glued


def test_the_slope_of_the_transverse_variance_gives_the_planted_q():
    g = glued("rg_flow")
    assert abs(g["rg_q_slope"] - g["rg_planted_q"]) < 0.01, "the transverse variance follows $q^{2n}$"


def test_both_estimators_recover_the_planted_q_on_the_clean_chain():
    g = glued("rg_flow")
    for key in ("rg_q_map", "rg_q_var"):
        assert abs(g[key] - g["rg_planted_q"]) < 0.01, "On the clean chain both estimators recover"


def test_the_layer_map_still_reads_q_with_noise():
    g = glued("rg_flow")
    assert abs(g["rg_q_map_noisy"] - g["rg_planted_q"]) < 0.01, "the map still reads"


def test_noise_props_the_variance_ratio_up():
    g = glued("rg_flow")
    assert g["rg_q_var_noisy"] > g["rg_planted_q"] + 0.01, "propped up by the noise floor"


def test_the_token_sample_has_fewer_tokens_than_dimensions():
    g = glued("rg_flow")
    assert g["rg_sample_n"] < g["rg_sample_d"], "Fewer tokens than dimensions"
