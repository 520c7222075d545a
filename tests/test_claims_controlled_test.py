"""What chapter 7's prose says about its glued numbers, checked over the executed page (``tests/built_book.py``)."""

from .built_book import glued


def test_answering_the_first_value_written_is_close_to_guessing():
    g = glued("controlled_test")
    for h in range(1, int(g["ch7_max_hops"]) + 1):
        assert abs(g[f"ch7_first_{h}"] - g[f"ch7_floor_{h}"]) < 0.1, "close to guessing"


def test_no_model_is_deep_enough_for_the_critical_depth_fit():
    g = glued("controlled_test")
    assert g["ch7_max_depths"] < g["ch7_min_depths"], (
        "The critical-depth fit needs {min_depths} depths and these models have at most {max_depths}"
    )
    assert g["ch7_n_testable"] == 0, (
        "the deepest model here has {max_depths}, so {n_testable} ... are testable"
    )


def test_capability_grows_with_size_across_the_ladder():
    g = glued("controlled_test")
    assert g["ch7_size_rho"] > 0, "Across the ladder it grows with size"


def test_the_clustered_interval_enumerates_every_distinct_resample():
    g = glued("controlled_test")
    assert g["ch7_n_inexact_intervals"] == 0, "every one of the {n_resamples} distinct resamples"


def test_the_ladder_is_too_shallow_for_the_omega_fit():
    g = glued("controlled_test")
    assert g["ch7_lm_max_depths"] < g["ch7_lm_fit_depths"], (
        "the Omega fit needs {fit_depths} depths, which no rung has"
    )


def test_training_removes_the_mid_depth_intrinsic_dimension_peak():
    g = glued("controlled_test")
    assert g["ch7_lm_id_null"] > g["ch7_lm_id_trained"], (
        "here the random initialisation makes the mid-depth bump and training removes it"
    )


def test_no_model_has_a_massive_activation_onset():
    g = glued("controlled_test")
    assert g["ch7_lm_onsets"] == 0, "No model, trained or not, has a massive-activation onset"


def test_the_deepest_rungs_lens_converges_next_to_its_output():
    g = glued("controlled_test")
    assert g["ch7_lm_lens_deepest"] < 1.0, (
        "converges where a model this shallow must, at or next to its output"
    )


def test_every_variant_that_learns_the_lookup_changes_names_and_mlps_at_once():
    g = glued("controlled_test")
    assert g["ch7_plateau_n_learnt_both_changes"] == g["ch7_plateau_n_learnt"], (
        "each of them changes two things at once: the names no longer share a direction ... and the MLPs are "
        "silent at the start"
    )


def test_fresh_codes_from_the_start_never_leave_the_first_stage():
    g = glued("controlled_test")
    assert g["ch7_names_fresh_stages"] == "-", "the first stage does not end within the budget"


def test_fixed_codes_do_not_carry_to_held_out_names():
    g = glued("controlled_test")
    assert g["ch7_names_fixed_heldout3"] < g["ch7_names_v1_floor3"] + 0.1, (
        "the lookup it learnt is one over its own names, not binding"
    )


def test_the_ladders_setting_of_fresh_codes_learns_and_binds():
    g = glued("controlled_test")
    assert g["ch7_names_ladder_heldout3"] > g["ch7_names_v1_floor3"] + 0.1, (
        "the only setting of the three that both learns and binds"
    )
