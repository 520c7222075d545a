"""What chapter 4 (book/spectra.md) says about its glued numbers, checked over the executed page."""

from __future__ import annotations

from .built_book import glued

MODELS = ("smollm2", "gemma3", "minilm")


def test_the_fit_finds_the_noise_variance_of_pure_noise():
    g = glued("spectra")
    assert abs(g["sp_null_sigma2"] - 1) < 0.01, "the fitted noise variance is ... (the truth is 1)"


def test_pure_noise_alarms_as_rarely_as_built_for():
    g = glued("spectra")
    assert g["sp_null_false_alarms"] <= 2, "the false-alarm rate it was built for"


def test_every_spike_clearly_above_the_bbp_threshold_is_found():
    g = glued("spectra")
    assert g["sp_bbp_above_found"] == g["sp_bbp_above_n"], "clearly above it (25 % or more), it detects"


def test_spikes_below_the_bbp_threshold_are_missed():
    g = glued("spectra")
    assert g["sp_bbp_below_found"] < g["sp_bbp_below_n"], "a spike is *invisible* below a threshold"


def test_clustered_tokens_show_one_spike_per_prompt_but_one():
    g = glued("spectra")
    assert g["sp_cl_naive_spikes"] == g["sp_cl_prompts"] - 1, "one per prompt but one"


def test_the_naive_fit_has_a_good_bulk_and_the_wider_law_the_wrong_shape():
    g = glued("spectra")
    assert g["sp_cl_naive_ks"] < 0.05, "found with a good fit of the bulk"
    assert g["sp_cl_spread_ks"] > 0.05, "the bulk no longer has the MP shape"


def test_the_streamed_covariance_pools_about_a_hundred_tokens_per_prompt():
    g = glued("spectra")
    assert 80 < g["sp_smol_tokens"] / g["sp_smol_prompts"] < 130, "about a hundred per prompt"


def test_the_token_sample_has_a_smaller_design_effect_than_the_clustered_example():
    g = glued("spectra")
    assert g["sp_sample_deff"] < g["sp_cl_deff"], "would give a design effect of only"


def test_the_sink_owns_most_of_the_variance():
    g = glued("spectra")
    assert g["sp_sink_share"] > 50, "owns ... % of the variance"


def test_the_streamed_participation_ratio_measures_the_sink_not_the_stream():
    g = glued("spectra")
    assert g["sp_smol_min_pr_all"] < 0.1 * g["sp_smol_mid_pr_sample"], "it measures the sink, not the stream"


def test_no_layer_is_close_to_the_null():
    g = glued("spectra")
    for m in MODELS:
        assert g[f"sp_mid_spikes_{m}"] > g["sp_mid_noise_spikes_max"], "No layer is close to the null"
        assert g[f"sp_mid_ks_{m}"] > 10 * g["sp_mid_noise_ks_max"], "a KS distance of at most"


def test_the_random_twins_are_no_closer_to_the_null():
    g = glued("spectra")
    for m in MODELS:
        assert g[f"sp_mid_spikes_random_{m}"] > g["sp_mid_noise_spikes_max"], "the random twins are no closer"


def test_the_largest_rise_of_the_pr_comes_as_the_dominant_coordinate_fades():
    g = glued("spectra")
    for m in ("smollm2", "gemma3"):
        assert g[f"sp_jump_factor_{m}"] > 1, "the largest one-layer rise of the PR"
        assert g[f"sp_jump_top_after_{m}"] < g[f"sp_jump_top_before_{m}"], (
            "the dominant coordinate's variance ratio drops from"
        )


def test_random_transformers_lose_spread_with_depth():
    g = glued("spectra")
    for m in MODELS:
        assert g[f"sp_prc_random_{m}"] < 1, "Random transformers lose spread with depth on their own"


def test_the_uncentred_pr_can_fall_far_below_the_centred_one():
    g = glued("spectra")
    assert g["sp_pr_uncentred_min"] < 0.1, "one giant spike and the PR can fall to"
