"""What the appendix pages say about their glued numbers, checked over the executed pages.

``glued("appendix/<page>")`` reads the last build's values (``tests/built_book.py``); each test quotes the prose it
holds. Pages: verdict_criteria, coverage, faults, performance.
"""

from __future__ import annotations

import re
from pathlib import Path

from .built_book import glued

ROOT = Path(__file__).resolve().parent.parent


def criteria() -> dict[str, float | str]:
    return glued("appendix/verdict_criteria")


# --- verdict_criteria: the power of the jump judge ------------------------------------------------------------


def test_the_weighing_never_adds_a_does_not_hold():
    g = criteria()
    assert g["vd_power_weighing_adds"] == 0 and g["vd_conf_weighing_adds"] == 0, (
        "Weighed by its power ..., ... of them remain 'does not hold', the rest 'inconclusive'"
    )


def test_the_judge_misses_only_the_widest_plants():
    g = criteria()
    assert g["vd_conf_missed_narrower"] == 0, "the judge misses only the widest plants"


# --- verdict_criteria: the statistic-level calibration -----------------------------------------------------------


def test_the_costly_families_have_fewer_cases():
    g = criteria()
    assert g["vd_cal_n_token_cases"] < g["vd_cal_n_cases"] and g["vd_cal_n_sizes"] == 2, (
        "families of ... cases each (... for the costly ones"
    )
    assert g["vd_cal_costly_claims"] == "bimodality, effective_rank, transverse_contraction", (
        "the token samples of bimodality, the block stacks of contraction, the effective ranks"
    )


# --- verdict_criteria: end to end, on planted models ---------------------------------------------------------------


def test_every_end_to_end_family_has_the_same_number_of_cases():
    g = criteria()
    assert g["vd_e2e_n_max"] == g["vd_e2e_n"], "Over ... families of ... cases each"


def test_most_earlier_false_holds_of_norm_growth_carried_a_sink_and_a_massive_coordinate():
    g = criteria()
    assert g["vd_e2e_before_holds"] == round(g["vd_e2e_before_ng_erank"] * g["vd_e2e_before_n"]), (
        "'held' on ... of the models ..., and ... of those ... carried both"
    )
    assert 2 * g["vd_e2e_before_both"] > g["vd_e2e_before_holds"], (
        "carried both a first-token sink and a massive coordinate in every token"
    )


def test_removing_the_position_profile_lowered_the_cleaned_rows_on_norm_growth():
    g = criteria()
    assert g["vd_e2e_ng_erank"] < g["vd_e2e_before_ng_erank"], (
        "On this run the cleaned effective rank holds on"
    )
    assert g["vd_e2e_ng_pr"] <= g["vd_e2e_before_ng_pr"], "(the participation ratio on ...)"


def test_class_codes_are_found_by_the_cleaned_effective_rank_and_the_omega_jump():
    g = criteria()
    found = min(g["vd_e2e_cc_erank"], g["vd_e2e_cc_jump"], g["vd_e2e_sc_jump"])
    assert found >= g["vd_cal_min_found"], "Class codes ... are found by the cleaned effective rank"


def test_the_omega_rows_remove_the_artefacts():
    g = criteria()
    assert g["vd_e2e_growth_omega"] == 0, "it still removes ... norm growth"
    assert g["vd_e2e_artefacts_missed"] == 0, (
        "it still removes massive and rogue coordinates, norm growth and a change at the sink"
    )


def test_the_narrowest_models_are_unchanged_by_the_code_share():
    g = criteria()
    assert g["vd_e2e_k_fixed"] == g["vd_e2e_narrowest"] / g["vd_e2e_code_share"], (
        "each prototype now touches one coordinate in ... (the narrowest models are unchanged"
    )
    assert g["vd_e2e_narrowest_records"] > 0 and g["vd_e2e_narrowest_unchanged"] == "True", (
        "record for record"
    )


def test_a_share_of_the_width_finds_the_widest_codes_and_the_jump_pays_for_it():
    g = criteria()
    target = g["vd_cal_min_found"]
    assert g["vd_e2e_fixed_pr_widest"] < target <= g["vd_e2e_fixed_pr_narrower"], (
        "the row found ... of those codes (... of the narrower ones ..., below the target"
    )
    assert min(g["vd_e2e_share_pr_widest"], g["vd_e2e_share_pr_narrower"]) >= target, (
        "The row now finds ... of the widest codes ... and ... of the others"
    )
    assert g["vd_e2e_share_ratio_widest"] < g["vd_e2e_fixed_ratio_widest"], "(a mean ratio of ...)"
    assert g["vd_e2e_share_jump"] < g["vd_e2e_fixed_jump"], "The price is paid by the Omega jump on m_z"


def test_a_twin_with_a_class_code_of_its_own_rules_out_the_omega_rows():
    g = criteria()
    assert g["vd_e2e_cct_omega"] == 0, "No Omega row holds on these models, the critical depth included"


def test_the_twin_margin_cut_the_false_holds_of_the_cleaned_spectral_rows():
    g = criteria()
    for key in ("erank", "pr"):
        held, both = g[f"vd_e2e_margin_cct_{key}_holds"], g[f"vd_e2e_margin_cct_{key}_both"]
        assert held > 0 and 2 * both > held, (
            "... of the ... false holds ... were models whose residual norm grows"
        )
        assert 4 * g[f"vd_e2e_cct_{key}"] <= g[f"vd_e2e_margin_cct_{key}"], (
            "The rows now hold on ... of these models"
        )
        assert g[f"vd_e2e_cc_{key}"] >= g[f"vd_e2e_margin_cc_{key}"] - 0.05, (
            "while class codes against a random twin are found"
        )


def test_the_previous_records_false_holds_were_all_on_growing_models_of_one_depth():
    g = criteria()
    for key in ("cct_erank", "cct_pr", "rogue_erank"):
        held = g[f"vd_e2e_prev_{key}_holds"]
        assert held == g[f"vd_e2e_prev_{key}_growing"] > 0, "with a norm that grows with depth"
    assert g["vd_e2e_prev_cct_layers"] == g["vd_e2e_prev_cct_pr_layers"], "every one ... layers deep"


def test_the_raw_spectral_rows_held_on_every_massive_and_rogue_model():
    g = criteria()
    assert g["vd_e2e_prev_massive_raw"] == g["vd_e2e_prev_rogue_raw"] == 1, (
        "held on their own on every model with a massive coordinate and every model with rogue coordinates"
    )


def test_raw_m_crosses_the_solid_level_only_through_a_massive_coordinate_on_narrower_models():
    g = criteria()
    assert 2 * g["vd_e2e_liquid_crossed"] > g["vd_e2e_liquid_narrow"], (
        "it crosses the level on ... of the ... models narrower than d = ..."
    )
    assert g["vd_e2e_liquid_wide_crossed"] == 0 and g["vd_e2e_liquid_wide_held"] == g["vd_e2e_liquid_wide"], (
        "on none of the ... at that width"
    )
    assert g["vd_e2e_liquid_held_without"] == g["vd_e2e_liquid_without"], "and on none without it"
    assert g["vd_e2e_liquid_meets"] == "False", "So the row misses its target"
    assert g["vd_e2e_liquid_cleaned"] == 1, "the cleaned row, which stays below the level on every one"


def test_the_ratio_interval_finds_the_participation_ratios_falls():
    g = criteria()
    assert g["vd_e2e_statistic_pr_found"] >= g["vd_cal_min_found"], (
        "the interval of the ratio finds that family in ... of the cases"
    )


def test_the_flow_rows_find_their_plants_and_see_through_the_sink():
    g = criteria()
    assert min(g["vd_flow_found"], g["vd_flow_sharp_found"]) >= g["vd_cal_min_found"], (
        "The row finds it on ... of the models; the cooling row finds it on"
    )
    assert g["vd_flow_sink_meets"] == "True", "holds on ... of these models (a Wilson upper bound of"


def test_the_steady_contraction_condition_removed_the_contraction_rows_false_holds():
    g = criteria()
    assert g["vd_flow_before_fooled"] > 0 and g["vd_flow_fooled"] == 0, (
        "it 'held' on ... models where no contraction was planted; ... hold on none of the models"
    )
    assert g["vd_flow_fooled_upper"] <= g["vd_cal_max_false"], "(a Wilson upper bound of ...)"


# --- coverage --------------------------------------------------------------------------------------------------


def test_the_critical_depths_interval_covers_more_often_than_its_level_at_the_right_length():
    g = glued("appendix/coverage")
    assert g["cov_gamma_c"] > g["cov_nominal"], "the interval covers more often than its level says"
    assert g["cov_spread_low"] <= g["cov_spread_gamma_c"] <= g["cov_spread_high"], (
        "while its median length is about what the estimate's spread asks"
    )


# --- faults ----------------------------------------------------------------------------------------------------


def test_every_area_of_the_fault_matrix_has_a_table_on_the_page():
    g = glued("appendix/faults")
    page = (ROOT / "book" / "appendix" / "faults.md").read_text(encoding="utf-8")
    tabled = sorted(set(re.findall(r'^table\("([^"]+)"\)$', page, flags=re.MULTILINE)))
    assert g["faults_areas"] == "; ".join(tabled), "This page lists every fault latentbook is tested against"
    assert g["faults_n_areas"] == len(tabled), "cases in ... areas"


# --- performance -----------------------------------------------------------------------------------------------


def test_the_measured_capture_lies_above_its_floor_on_both_models():
    g = glued("appendix/performance")
    for key in ("smollm2-135m", "random_llama-1b"):
        assert g[f"perf_{key}_e_over_trunk"] > g[f"perf_{key}_floor"], (
            "The measured ratios above ... lie above both floors"
        )


def test_the_target_is_out_of_reach_on_smollm2_and_leaves_slack_on_the_1b_model():
    g = glued("appendix/performance")
    assert g["perf_smollm2-135m_floor_exact"] < g["perf_target"] < g["perf_smollm2-135m_floor"], (
        "A target of ... times the trunk is therefore out of reach on SmolLM2"
    )
    assert g["perf_random_llama-1b_floor"] < g["perf_target"], (
        "on the 1B model it leaves ... of the trunk's time"
    )


def test_on_a_gpu_the_capture_costs_far_more_than_on_the_cpu_and_larger_batches_help():
    g = glued("appendix/performance")
    assert g["gpu_capture_ratio_low"] > 1.5 * g["perf_random_llama-1b_e_over_a"], (
        "the capture is not yet at the cost of the trunk there ... against ... on these CPUs"
    )
    assert g["gpu_profile_batch32"] < g["gpu_profile_batch8"], (
        "with batches of 32 prompts instead of 8 ... the capture falls from ... to"
    )


def test_the_bimodality_judge_needs_distinct_bands_and_gets_them_with_enough_tokens():
    g = glued("appendix/verdict_criteria")
    assert g["bp_d4_2000"] < 0.8, "bands of equal weight must lie far apart ... however many tokens there are"
    assert g["bp_d6_300"] >= 0.8, "are called bimodal at D = 6"
