"""What chapter 3 (object integrity Omega) says about its glued numbers, checked over the executed chapter."""

from __future__ import annotations

import pytest

from .built_book import glued

TRAINED = ("smollm2", "gemma3", "minilm")
PAPER_LIQUID, PAPER_SOLID = 0.69, 0.90


@pytest.fixture(scope="module")
def g():
    return glued("omega")


def test_one_huge_coordinate_reaches_the_solid_range(g):
    assert g["ch3_boost1000_j1"] > 0.9, 'values near the paper\'s "solid" range'


def test_a_massive_coordinate_is_a_smaller_share_of_a_wider_vector(g):
    assert g["ch3_massive100_5120"] < g["ch3_massive100_576"], "a smaller share of a wider vector"


def test_the_hoyer_mapping_is_the_smaller_correction(g):
    for level, phase in ((PAPER_LIQUID, "liquid"), (PAPER_SOLID, "solid")):
        hoyer, massive = g[f"ch3_{phase}_hoyer_576"], g[f"ch3_{phase}_massive_576"]
        assert abs(hoyer - level) < abs(massive - level), "the Hoyer mapping, the smaller correction"


def test_trained_models_lift_m_and_no_random_twin_does(g):
    gauss = g["ch3_gauss_limit"]
    for s in TRAINED:
        assert g[f"ch3_{s}_mmax"] > gauss + 0.1, "All three trained models lift $m$ above the Gaussian value"
        assert g[f"ch3_random_{s}_mmax"] < gauss + 0.005, "and no random twin does"


def test_the_peak_is_early_not_where_the_paper_puts_it(g):
    assert max(g["ch3_smollm2_gmax"], g["ch3_gemma3_gmax"]) < 0.42, "not where the paper puts it"


def test_smollm2_climbs_then_drifts_down_and_gemma3_jumps_then_declines(g):
    for s in ("smollm2", "gemma3"):
        assert g[f"ch3_{s}_m0"] < g[f"ch3_{s}_mmax"], "SmolLM2 climbs ... Gemma 3 jumps"
        assert g[f"ch3_{s}_m1"] < g[f"ch3_{s}_mmax"], "drifts down ... declines"


def test_gemma3_peaks_at_the_papers_solid_value(g):
    assert abs(g["ch3_gemma3_mmax"] - PAPER_SOLID) < 0.01, 'numerically the paper\'s "solid" value'


def test_shuffled_words_hardly_matter(g):
    assert abs(g["ch3_gemma3_shuffled_mmax"] - g["ch3_gemma3_mmax"]) < 0.01, "Shuffled words hardly matter"


def test_shuffled_text_ends_higher_beyond_sampling_noise(g):
    gap = g["ch3_smollm2_shuffled_m1"] - g["ch3_smollm2_m1"]
    assert gap > 0, "shuffled text gives the *higher* $\\Omega$"
    assert g["ch3_smollm2_ciw"] < gap, "none of this is sampling noise"


def test_the_permutation_null_reproduces_m(g):
    assert g["ch3_smollm2_perm_share"] > 1, 'above 100 %: the permuted tokens are the more "solid"'
    for s in TRAINED:
        assert abs(g[f"ch3_{s}_perm_share"] - 1) < 0.1, "Permuting every coordinate across tokens keeps $m$"
    others = max(g["ch3_gemma3_perm_gap"], g["ch3_minilm_perm_gap"])
    assert g["ch3_smollm2_perm_gap"] > others, "in SmolLM2 by up to"


def test_every_planted_code_lifts_m(g):
    steps = [g[f"ch3_{plant}_mstep"] for plant in ("sparse_code", "class_code", "massive")]
    assert min(steps) > 0.2, "All three planted models lift $m$ at $\\gamma$ = 0.42"


def test_the_permutation_cannot_tell_a_sparse_code_from_a_massive_coordinate(g):
    assert g["ch3_sparse_code_permgap"] < 0.05, "the permutation cannot tell them apart"
    assert g["ch3_massive_permgap"] < 0.05, "the permutation cannot tell them apart"


def test_standardising_sees_the_sparse_code_and_m_z_the_class_code_too(g):
    assert g["ch3_sparse_code_sstep"] > 0.2 > 0.05 > g["ch3_massive_sstep"], "Standardising can"
    assert g["ch3_class_code_sstep"] < 0.05 < 0.2 < g["ch3_class_code_zstep"], (
        "but by only ... where the class code does"
    )
    assert g["ch3_sparse_code_zstep"] > 0.2 > 0.05 > g["ch3_massive_zstep"], "$m_z$ steps by"


def test_shuffled_words_give_nearly_the_same_bimodality_counts(g):
    for s in TRAINED:
        assert abs(g[f"ch3_{s}_n_bimodal"] - g[f"ch3_{s}_shuffled_n_bimodal"]) <= 1, (
            "Shuffled words give nearly the same profiles and bimodality counts"
        )


def test_smollm2_steps_most_at_its_edges(g):
    interior = g["ch3_smollm2_interior_step"]
    assert g["ch3_smollm2_edge1"] - g["ch3_smollm2_edge0"] > interior, (
        "then moves by at most ... between neighbouring depths"
    )
    assert g["ch3_smollm2_last_step"] > interior, "until its last depth steps by"


def test_minilm_has_too_few_depths_for_the_transition_test(g):
    assert g["ch3_minilm_depths"] < g["ch3_min_depths"], "so MiniLM ... cannot be tested"


def test_massive_activations_are_weak_in_minilm(g):
    strong = min(g["ch3_smollm2_peak_ratio"], g["ch3_gemma3_peak_ratio"])
    assert g["ch3_minilm_peak_ratio"] < strong, "in MiniLM only"


def test_the_sink_token_is_solid_and_the_others_are_not(g):
    assert g["ch3_smollm2_omega_pos0"] > (PAPER_LIQUID + PAPER_SOLID) / 2 > g["ch3_smollm2_omega_rest"], (
        'a "solid" vector by the paper\'s scale, while the other tokens average'
    )
    assert g["ch3_smollm2_top_mean_ratio"] < g["ch3_smollm2_peak_ratio"], "less extremely, on every token"
    assert g["ch3_minilm_omega_pos0"] > g["ch3_minilm_omega_rest"], "also an outlier"


def test_dropping_the_sink_barely_moves_the_mean(g):
    assert abs(g["ch3_smollm2_treat_asis"] - g["ch3_smollm2_treat_nofirst"]) < 0.01, "it barely moves a mean"


def test_centring_raises_omega_unless_the_sink_goes_first(g):
    assert g["ch3_smollm2_peak_centred"] > g["ch3_smollm2_peak_asis"] > g["ch3_smollm2_peak_clean"], (
        "centring *raises* mean $\\Omega$ ... dropping the first position *before* centring"
    )


def test_a_random_basis_is_gaussian_like(g):
    assert g["ch3_rotated_max_dev"] < 0.03, "In a random basis every model is Gaussian-like"


def test_cleaned_twins_do_not_move(g):
    for s in TRAINED:
        assert abs(g[f"ch3_random_{s}_clean_mmax"] - g["ch3_gauss_limit"]) < 0.005, "the twins do not move"


def test_what_remains_is_an_early_hump_that_fades(g):
    for s in ("smollm2", "gemma3"):
        assert g[f"ch3_{s}_clean_gmax"] < 0.42, "an early hump"
        assert g[f"ch3_{s}_clean_m1"] < g[f"ch3_{s}_clean_mmax"], "that fades with depth"


def test_these_models_are_below_the_papers_range(g):
    assert g["ch3_largest_m"] < 1500, "the paper's transition is claimed for 1.5B–30B models"


def test_the_decoders_lie_above_their_twins_in_a_learned_basis_without_a_jump_near_0_42(g):
    for stem in ("smollm2", "gemma3"):
        assert g[f"ch3_{stem}_lb_n_above"] == g[f"ch3_{stem}_lb_n"], "above its twin at every depth read"
        assert abs(g[f"ch3_{stem}_lb_gmax"] - 0.42) > 0.05, "does not jump near gamma = 0.42"
    assert g["ch3_minilm_lb_n_below"] == g["ch3_minilm_lb_n"], "MiniLM lies below its twin"
    assert g["ch3_minilm_lb_twin_max"] > g["ch3_lb_gauss"] + 0.02, (
        "its random twin's sources are the less Gaussian"
    )


TAIL_KEYS = ("laplace", "t3", "gated", "outliers")


def test_the_critical_depth_row_places_a_change_in_every_heavy_tailed_family(g):
    for key in TAIL_KEYS:
        assert g[f"ch3_e2e_tails_{key}_critical_depth"] > 0.5, "on most models of every family"


def test_heavy_tails_pass_the_jump_rows_except_laplace(g):
    assert g["ch3_e2e_tails_laplace_omega_jump"] < 0.05, "let the Laplace coordinates through on (few)"
    for key in ("t3", "gated", "outliers"):
        assert g[f"ch3_e2e_tails_{key}_omega_jump"] > 0.05, "but the Student-t ones ... the outlier features"
    assert g["ch3_e2e_tails_omega_jump_max"] > 0.05, "a 'holds' of an m_z row ... no object at all"


def test_a_redrawn_code_passes_the_m_z_rows(g):
    for row in ("omega_jump", "omega_jump_cleaned"):
        assert g[f"ch3_e2e_tails_redrawn_{row}"] > 0.8, "A code redrawn at every token passes the jump rows"
    assert g["ch3_e2e_tails_redrawn_critical_depth"] > 0.5, "and the critical-depth row"


def test_the_learned_basis_row_finds_the_atom_code_the_m_z_rows_miss(g):
    assert g["ch3_e2e_lb_atom"] >= 0.8, "The learned-basis row finds the atom code in ..."
    for row in ("omega_jump", "omega_jump_cleaned"):
        assert g[f"ch3_e2e_lb_atom_{row}"] <= 0.05, "where the m_z rows see it in ..."
    assert g["ch3_e2e_lb_absent_high_max"] <= 0.05, "largest Wilson upper bound ..."
    for key in ("t3", "gated", "outliers"):
        assert g[f"ch3_e2e_tails_{key}_omega_jump"] > 0.05, (
            "the ... coordinates that pass the m_z rows included"
        )
        assert g[f"ch3_e2e_lb_{key}"] <= 0.05
