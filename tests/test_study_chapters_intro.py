"""The introduction's first look (``study.chapters.intro_tables``) on stand-in captures with known profiles."""

from types import SimpleNamespace

import numpy as np
import pytest

from latentbook.analysis import omega
from latentbook.study.chapters import intro_tables


def _capture(profile, d=576):
    return SimpleNamespace(
        d_model=d, n_tokens=100, n_depths=len(profile), omega_mean=lambda: np.asarray(profile)
    )


def test_the_first_look_quotes_the_trained_profile_each_twins_peak_and_their_largest_stray():
    gauss = omega.reference_values(576)["gaussian_limit"]
    captures = {
        "smollm2-135m": _capture([0.23, 0.5, 0.52, 0.4]),
        "random:smollm2-135m": _capture([gauss, gauss + 0.001, gauss - 0.004, gauss]),
        "random:llama-small": _capture([gauss + 0.002, gauss, gauss, gauss], d=768),
        "smollm2-135m (shuffled)": _capture([0.2, 0.9, 0.9, 0.9]),  # not a twin: not counted
    }
    numbers = intro_tables.first_look_numbers(captures, {"a": 135.0, "b": 22.7, "c": 268.1})
    assert numbers["gauss"] == gauss and numbers["onehot"] == pytest.approx(1 - 1 / np.sqrt(576))
    assert (numbers["d"], numbers["n_tokens"], numbers["n_depths"]) == (576, 100, 4)
    assert (numbers["m_first"], numbers["m_max"]) == (0.23, 0.52)
    assert numbers["m_random_max"] == pytest.approx(gauss + 0.001)
    assert numbers["m_llama_small_max"] == pytest.approx(gauss + 0.002)
    assert numbers["twin_deviation"] == pytest.approx(0.004)  # below the Gaussian value counts too
    assert (numbers["smallest_m"], numbers["largest_m"]) == (22.7, 268.1)
