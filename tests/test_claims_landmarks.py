"""What chapter 9's prose says about its glued numbers, checked over the executed page (``tests/built_book.py``)."""

from __future__ import annotations

import math

import pytest

from .built_book import glued

PRE_NORM_TWINS = ("random_smollm2", "random_gemma3")  # SmolLM2's and Gemma's twins; MiniLM's is post-norm


@pytest.fixture(scope="module")
def g():
    return glued("landmarks")


def test_gride_reads_the_noisy_cloud_closer_than_twonn(g):
    dim, two_nn, gride = (g[f"cl_planted_noisy_{k}"] for k in ("dim", "two_nn", "gride"))
    assert two_nn > dim and abs(gride - dim) < abs(two_nn - dim), (
        "Noise is another matter: ... TwoNN reads ..., because at the scale of the nearest neighbour the noise "
        "*is* the manifold"
    )


def test_no_random_twin_has_massive_activations(g):
    assert all(math.isnan(g[f"cl_random_{m}_onset"]) for m in ("smollm2", "gemma3", "minilm")), (
        "Random twins. No massive activations."
    )


def test_smollm2s_onset_is_a_property_of_the_trained_weights_whatever_the_text(g):
    onset, shuffled = g["cl_smollm2_onset"], g["cl_smollm2_shuffled_onset"]
    assert not math.isnan(onset) and not math.isnan(shuffled), (
        "Massive activations appear at ...; on shuffled words"
    )
    assert abs(shuffled - onset) < 0.05, "a property of the trained weights whatever the text"


def test_smollm2s_onset_is_chapter_1s_rms_jump(g):
    assert abs(g["cl_smollm2_step_gamma"] - g["cl_smollm2_onset"]) < 1e-6, (
        "This is the jump in the stream's RMS that chapter 1 finds in SmolLM2"
    )


@pytest.mark.parametrize("twin", PRE_NORM_TWINS)
def test_pre_norm_twins_update_less_and_less_and_their_lens_still_converges(twin, g):
    assert g[f"cl_{twin}_update_last"] < g[f"cl_{twin}_update_first"] / 3, (
        "In the pre-norm twins ... the update norm ... fall[s] from the first depths on"
    )
    assert g[f"cl_{twin}_two_nn_last"] < g[f"cl_{twin}_two_nn_first"], (
        "and TwoNN's intrinsic dimension fall from the first depths on"
    )
    assert not math.isnan(g[f"cl_{twin}_lens"]), "and yet the logit lens converges"


def test_the_post_norm_twin_keeps_its_update_norm_flat(g):
    assert g["cl_random_minilm_update_max"] < 1.25 * g["cl_random_minilm_update_min"], (
        "MiniLM's post-norm twin keeps its update norm flat"
    )


def test_no_run_has_an_omega_jump_so_no_landmark_coincides_with_one(g):
    jumps = {k: v for k, v in g.items() if k.endswith("_jump") and not k.startswith("cl_n_")}
    assert jumps and all(math.isnan(v) for v in jumps.values()), (
        "dashed: its Omega jump, where one is found (none is)"
    )
    assert g["cl_n_trained_with_jump"] == 0, "so no landmark can coincide with one"
