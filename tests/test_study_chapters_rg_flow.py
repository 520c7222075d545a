"""Chapter 5's tables and glued numbers (``study.chapters.rg_flow_tables``), on a planted contraction chain and hand-made
fits: every value checked against the planted ``q``, the criterion or a hand computation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from latentbook.analysis import contraction, flow, synthetic
from latentbook.analysis.contraction import ContractionFit, GainFit
from latentbook.study.chapters import glue_keys
from latentbook.study.chapters import rg_flow_tables as tables


def _fit(q, ci, start=3, stop=7) -> ContractionFit:
    return ContractionFit(q, ci, start, stop, 10, np.ones(stop - start + 1), 0.95)


def _gain(q, ci, n_prompts=24, relevant=1.0) -> GainFit:
    """A fit whose relevant gain is ``relevant``: the transverse gain alone is ``q * relevant``."""
    alone = (q * relevant, (ci[0] * relevant, ci[1] * relevant))
    return GainFit(
        "m",
        q,
        ci,
        np.array([q]),
        np.array([ci]),
        4,
        8,
        10,
        n_prompts,
        4,
        0.95,
        *alone,
        relevant,
        (relevant,) * 2,
        q,
        ci,
    )


def _chain_capture(q: float, n_prompts: int = 100, per_prompt: int = 4, d: int = 24, steps: int = 8):
    chain = synthetic.contraction_chain(
        n_prompts * per_prompt, d, steps, q, k_signal=4, signal_scale=10.0, seed=0
    )
    ids = np.repeat(np.arange(n_prompts), per_prompt)
    positions = np.tile(np.arange(1, per_prompt + 1), n_prompts)
    return synthetic.as_capture(chain.states, ids, positions, n_vectors=n_prompts * per_prompt)


FITS = {
    "smollm2-135m": _fit(0.9, (0.85, 0.95)),
    "random:smollm2-135m": _fit(1.1, (1.05, 1.2), start=2, stop=9),
    "smollm2-135m (shuffled)": _fit(1.0, (0.9, 1.1)),
}


def test_label_key():
    assert tables.label_key("smollm2-135m") == "smollm2"
    assert tables.label_key("random:gemma3-270m") == "random_gemma3"


def test_q_word_reads_where_the_interval_lies():
    assert tables.q_word(_fit(0.9, (0.8, 0.99))) == "below 1"
    assert tables.q_word(_fit(1.1, (1.01, 1.2))) == "above 1"
    assert tables.q_word(_fit(1.0, (0.9, 1.1))) == "compatible with 1"


def test_q_table_has_one_row_per_fit():
    table = tables.q_table(FITS)
    assert table["model"].tolist() == list(FITS)
    assert table["q per layer"].tolist() == [0.9, 1.1, 1.0]
    assert table["CI low"].tolist() == [0.85, 1.05, 0.9]
    assert table["CI high"].tolist() == [0.95, 1.2, 1.1]
    assert table["layers"].tolist() == ["3-7", "2-9", "3-7"]
    assert table["contracts"].tolist() == [True, False, False]


def test_q_glue_names_models_twins_and_the_shuffled_run():
    glued = tables.q_glue(FITS, ["smollm2-135m"])
    assert glued == {
        "q_smollm2": 0.9,
        "q_smollm2_lo": 0.85,
        "q_smollm2_hi": 0.95,
        "q_smollm2_word": "below 1",
        "q_random_smollm2": 1.1,
        "q_random_smollm2_lo": 1.05,
        "q_random_smollm2_hi": 1.2,
        "q_random_smollm2_word": "above 1",
        "q_shuffled": 1.0,
        "q_shuffled_word": "compatible with 1",
    }
    assert "rg_q_random_smollm2_word" in glue_keys("rg", glued)


def test_k_sensitivity_table_recovers_the_planted_q_with_the_right_k():
    captures = {"planted": _chain_capture(0.8), "flat": _chain_capture(1.0)}
    table = tables.k_sensitivity_table(captures, ks=(4, 8))
    assert list(table.index) == ["planted", "flat"]
    assert list(table.columns) == ["q with k = 4", "q with k = 8"]
    assert table.loc["planted", "q with k = 4"] == pytest.approx(0.8, abs=0.02)
    assert table.loc["flat", "q with k = 4"] == pytest.approx(1.0, abs=0.02)
    direct = contraction.contraction_after(captures["planted"], split=0.42, k=8, n_boot=20).q
    assert table.loc["planted", "q with k = 8"] == direct


def test_gain_table_and_glue_with_the_verdict_against_the_twin():
    gain_fits = {
        "smollm2-135m": _gain(0.8, (0.75, 0.85)),
        "random:smollm2-135m": _gain(0.98, (0.96, 1.0)),
        "gemma3-270m": _gain(0.97, (0.96, 0.99)),
        "random:gemma3-270m": _gain(0.9, (0.85, 0.95)),
        "minilm-l6": _gain(1.0, (0.99, 1.01), relevant=0.88),
        "random:minilm-l6": _gain(0.99, (0.98, 1.0)),
    }
    gain_fits["random:gemma3-270m"] = dataclasses.replace(gain_fits["random:gemma3-270m"], steady=0.97)
    table = tables.gain_table(gain_fits)
    assert table["run"].tolist() == list(gain_fits)
    assert table["median block"].tolist() == [0.8, 0.98, 0.97, 0.97, 1.0, 0.99]
    assert table["q = q⊥ / q∥"].tolist() == [0.8, 0.98, 0.97, 0.9, 1.0, 0.99]
    assert table["CI low"].tolist() == [0.75, 0.96, 0.96, 0.85, 0.99, 0.98]
    assert table["CI high"].tolist() == [0.85, 1.0, 0.99, 0.95, 1.01, 1.0]
    assert table["q⊥ (transverse alone)"].tolist() == pytest.approx([0.8, 0.98, 0.97, 0.9, 0.88, 0.99])
    assert table["q∥ (relevant)"].tolist() == [1.0, 1.0, 1.0, 1.0, 0.88, 1.0]
    assert table["depths"].tolist() == ["4-8"] * 6
    glued = tables.gain_glue(gain_fits, ["smollm2-135m", "gemma3-270m", "minilm-l6"])
    assert glued["gain_smollm2"] == 0.8 and glued["gain_random_smollm2_hi"] == 1.0
    assert glued["gain_gemma3_lo"] == 0.96 and glued["gain_random_gemma3"] == 0.9
    assert glued["gain_minilm_perp"] == pytest.approx(0.88) and glued["gain_minilm_par"] == 0.88
    assert glued["gain_smollm2_verdict"] == "holds"  # below MAX_Q and below the twin
    assert glued["gain_gemma3_verdict"] == "does not hold"  # at or above MAX_Q
    assert glued["gain_minilm_verdict"] == "does not hold"  # every direction shrinks alike
    assert "gain_random_smollm2_verdict" not in glued


def _ar_sequences(rhos, n_prompts=60, length=12, d=200, seed=0):
    """Per depth, ``h_t = rho h_{t-1} + sqrt(1 - rho^2) e_t`` along each prompt (so ``C(r) ~ rho^r``); position 0
    of every prompt a sink, one long shared vector, that the profile must leave out."""
    rng = np.random.default_rng(seed)
    hidden = np.empty((len(rhos), n_prompts, length, d))
    for depth, rho in enumerate(rhos):
        h = rng.standard_normal((n_prompts, d))
        for t in range(length):
            h = rho * h + np.sqrt(1 - rho**2) * rng.standard_normal((n_prompts, d))
            hidden[depth, :, t] = h
    hidden[:, :, 0] = 0.0
    hidden[:, :, 0, 0] = 100.0
    return hidden, np.ones((n_prompts, length), dtype=bool)


def test_distance_profile_reads_the_planted_correlation_without_the_first_position():
    rhos = [0.2, 0.5, 0.8]
    hidden, mask = _ar_sequences(rhos)
    profile = tables.distance_profile(hidden, mask, max_distance=6)
    assert mask.all()  # the caller's mask is left as it was
    np.testing.assert_allclose(profile.gamma, [0.0, 0.5, 1.0])
    assert profile.correlation.shape == (3, 7)
    np.testing.assert_allclose(profile.correlation[:, 0], 1.0)
    np.testing.assert_allclose(profile.correlation[:, 1], rhos, atol=0.05)
    np.testing.assert_allclose(profile.length[1:], [-1 / np.log(r) for r in rhos[1:]], rtol=0.15)
    kept = mask.copy()
    kept[:, 0] = False
    np.testing.assert_array_equal(
        profile.correlation, flow.distance_correlation(hidden, kept, max_distance=6)
    )


def test_distance_glue_reads_depth_one_and_the_last_depth_at_distances_one_and_eight():
    correlation = np.arange(3 * 9, dtype=float).reshape(3, 9)  # depth l, distance r -> 9 l + r
    profile = tables.DistanceProfile(np.array([0.0, 0.5, 1.0]), correlation, np.array([1.0, 2.0, 4.0]))
    glued = tables.distance_glue({"random:smollm2-135m": profile}, ["random:smollm2-135m"])
    assert glued == {
        "c1_first_random_smollm2": 10.0,
        "c1_last_random_smollm2": 19.0,
        "c8_first_random_smollm2": 17.0,
        "c8_last_random_smollm2": 26.0,
        "xi_first_random_smollm2": 2.0,
        "xi_last_random_smollm2": 4.0,
    }
