"""What chapter 8 (book/verdict.md) says about its glued numbers, checked over the executed chapter.

``glued("verdict")`` reads the last build's values (``tests/built_book.py``); each test quotes the prose it holds.
"""

from __future__ import annotations

from .built_book import glued


def test_every_claim_was_measured_on_every_trained_run():
    g = glued("verdict")
    assert g["vd_n_trained_verdicts"] == g["vd_n_claims_measured"] * g["vd_n_trained_runs"], (
        "claims were measured on ... trained runs, ... verdicts in all"
    )


def test_no_verdict_is_in_the_papers_range_without_a_large_capture():
    g = glued("verdict")
    assert g["vd_n_results"] > 0 or g["vd_n_in_range"] == 0, "this chapter neither confirms nor refutes it"


def test_smollm2_and_minilm_stay_liquid_as_their_twins_do():
    g = glued("verdict")
    assert g["vd_liquid_smollm2"] == g["vd_liquid_minilm"] == "uninformative", (
        "SmolLM2 and MiniLM stay liquid, as do the random twins: that row is uninformative"
    )


def test_gemma_is_solid_on_raw_m_and_liquid_once_cleaned():
    g = glued("verdict")
    assert (g["vd_liquid_gemma3"], g["vd_liquid_clean_gemma3"]) == ("does not hold", "uninformative"), (
        "Gemma 3 270M is 'solid' ...; once they are removed it is liquid"
    )
    assert g["vd_gemma_cross_m"] > g["vd_gemma_solid"] > g["vd_gemma_clean_m"], (
        "m = ... above ...; without them its highest m is ..."
    )


def test_gemmas_massive_activations_begin_before_it_turns_solid_and_make_raw_ms_step():
    g = glued("verdict")
    assert g["vd_gemma_onset"] <= g["vd_gemma_cross_gamma"], "after its massive activations begin at ..."
    assert g["vd_massive_step_gemma3"] == "holds", "solid ... where its massive activations begin"


def test_scale_is_what_a_laptop_cannot_reach():
    g = glued("verdict")
    assert g["vd_n_results"] > 0 or g["vd_scaling"] == "not testable here", (
        "it is exactly what a laptop cannot reach"
    )


def test_the_ladder_has_no_critical_depth_of_its_own():
    g = glued("verdict")
    assert str(g["vd_ladder_critical_depth"]).startswith(("none", "not measured")), (
        "What the ladder does not show is the paper's claim in its own terms"
    )


def test_the_learned_basis_row_tells_a_code_off_the_axes_from_heavy_tails():
    g = glued("verdict")
    assert g["vd_e2e_lb_found"] >= 0.8, "it finds ... of planted sparse codes written off the coordinate axes"
    assert g["vd_e2e_lb_false_high"] <= 0.05, "at a Wilson bound of at most ..."
