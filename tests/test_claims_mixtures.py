"""What chapter 6's prose says about its glued numbers, checked over the executed page (``tests/built_book.py``)."""

from __future__ import annotations

import pytest

from .built_book import glued


@pytest.fixture(scope="module")
def g():
    return glued("mixtures")


def test_no_mixture_has_more_spikes_than_the_bound(g):
    assert g["mx_max_excess"] <= 0, "No mixture shows more spikes than the bound"


def test_weakly_separated_classes_are_invisible_below_the_bbp_threshold(g):
    assert g["mx_weak_theta_max"] < g["mx_bbp"], "below the BBP threshold"
    assert g["mx_weak_max"] == 0, "the classes are there, the spectrum cannot see them"


def test_the_bag_of_values_bar_lies_above_the_chance_band(g):
    assert g["mx_bag"] > g["mx_band_hi"], (
        "The bar a *binding* representation must clear is therefore ..., not chance"
    )


def test_a_bag_of_values_scores_chance_on_the_two_way_pairs(g):
    assert abs(g["mx_tco_bag_two_way"] - g["mx_two_way_chance"]) < 1e-9, (
        "Chance is ..., and a bag of values scores as much"
    )


def test_prototypes_after_gamma_c_in_the_decoders_and_not_in_their_twins(g):
    one_cloud, called = "one cloud or undecided", "prototypes"
    assert g["mx_smollm2_pt_early_called"] == one_cloud and g["mx_smollm2_pt_early_high"] < 0, (
        "one cloud tells its tokens better"
    )
    assert g["mx_smollm2_pt_late_called"] == called, "and prototypes at"
    assert g["mx_smollm2_pt_early_gamma"] < 0.42 < g["mx_smollm2_pt_late_gamma"], "before and after gamma_c"
    assert g["mx_gemma3_pt_early_called"] == g["mx_gemma3_pt_late_called"] == called, (
        "prototypes at both depths"
    )
    for stem in ("smollm2", "gemma3"):
        for when in ("early", "late"):
            assert g[f"mx_random_{stem}_pt_{when}_called"] == one_cloud, "its twin at neither"
    assert g["mx_random_minilm_pt_late_called"] == called, "MiniLM's twin is called prototypes too"
    assert g["mx_pt_n_lower_bounds"] == g["mx_pt_n_tests"], "BIC chose the largest number of prototypes tried"
