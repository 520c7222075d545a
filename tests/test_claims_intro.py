"""What the introduction's prose says about its glued numbers, checked over the executed page
(``tests/built_book.py``)."""

from .built_book import glued


def test_something_learned_lifts_smollm2_above_both_random_weight_twins():
    g = glued("intro")
    assert g["intro_m_max"] > max(g["intro_m_random_max"], g["intro_m_llama_small_max"]), (
        "Something learned makes the stream less Gaussian"
    )


def test_smollm2s_mean_omega_rises_from_the_embedding():
    g = glued("intro")
    assert g["intro_m_max"] > g["intro_m_first"], "Its mean Omega rises from {m_first} at the embedding"


def test_the_random_weight_twins_never_leave_the_gaussian_value():
    g = glued("intro")
    assert g["intro_twin_deviation"] < 0.005, (
        "the random-weight twin never leaves the Gaussian value ... and so does"
    )


def test_the_books_models_are_below_the_papers_range():
    g = glued("intro")
    assert g["intro_largest_m"] < 1500, "The paper's claims concern 1.5B–30B models"
