"""Chapter 4's tables and glued numbers (``study.chapters.spectra_tables``), on a synthetic capture with planted spikes
and hand-made profiles and contrasts: every value checked against the planted structure or a hand computation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from latentbook.analysis import bulk_fit, layer_spectra, ranks, synthetic
from latentbook.analysis.spectral_contrasts import Contrast
from latentbook.study.chapters import glue_keys
from latentbook.study.chapters import spectra_tables as tables

N_PROMPTS, PER_PROMPT, D = 200, 4, 32


@pytest.fixture(scope="module")
def planted():
    """Five depths (L = 4) of Gaussian tokens; at depth 2, ``round(L / 2)``, three directions with 30 times the
    variance; position 0 of every prompt a sink 100 times longer (the token sample leaves it out)."""
    rng = np.random.default_rng(0)
    n = N_PROMPTS * PER_PROMPT
    positions = np.tile(np.arange(PER_PROMPT), N_PROMPTS)
    states = rng.standard_normal((5, n, D))
    states[2, :, :3] *= np.sqrt(30.0)
    states[:, positions == 0] *= 100.0
    ids = np.repeat(np.arange(N_PROMPTS), PER_PROMPT)
    return synthetic.as_capture(states, ids, positions, n_vectors=n)


def _contrast(ratio, ci, n_before=3, n_after=4) -> Contrast:
    return Contrast(ratio, ci, 0.42, n_before, n_after, 0.95)


def test_label_key():
    assert tables.label_key("smollm2-135m") == "smollm2"
    assert tables.label_key("random:gemma3-270m") == "random_gemma3"


def test_depth_spectrum_leaves_the_sink_out_and_fits_the_planted_spikes(planted):
    assert tables.mid_depth(planted) == 2
    sample, eigvals, fit = tables.depth_spectrum(planted, 2)
    assert sample.n == N_PROMPTS * (PER_PROMPT - 1) and not (sample.positions == 0).any()
    np.testing.assert_allclose(eigvals, np.linalg.eigvalsh(np.cov(sample.x, rowvar=False, bias=True))[::-1])
    assert fit.n_spikes == 3
    assert fit.n_spikes == bulk_fit.mp_fit(eigvals, sample.n - 1).n_spikes


def test_noise_reference_is_gaussian_noise_of_the_shape_computed_once():
    reference = tables.noise_reference(150, 20)
    assert reference is tables.noise_reference(150, 20)  # cached per shape
    assert reference["rep"].tolist() == [0, 1, 2]
    assert (reference["n"] == 150).all() and (reference["d"] == 20).all()
    direct = layer_spectra.gaussian_reference(150, 20, n_rep=3)
    pd.testing.assert_frame_equal(reference, direct)
    assert (reference["n_spikes"] <= 1).all()  # noise alarms as rarely as built for


def test_streamed_profile_is_owned_by_the_sink_the_token_sample_leaves_out():
    """Position 0 of every prompt carries a massive first coordinate: the streamed PR collapses to about 1, the
    token sample's does not."""
    rng = np.random.default_rng(1)
    n = N_PROMPTS * PER_PROMPT
    positions = np.tile(np.arange(PER_PROMPT), N_PROMPTS)
    states = rng.standard_normal((3, n, D))
    states[:, positions == 0, 0] += 100.0
    sunk = synthetic.as_capture(states, np.repeat(np.arange(N_PROMPTS), PER_PROMPT), positions, n_vectors=n)
    streamed = tables.streamed_profile(sunk)
    np.testing.assert_allclose(streamed["gamma"], [0.0, 0.5, 1.0])
    expected = [ranks.participation_ratio(lam) for lam in sunk.all_eigvals()]
    np.testing.assert_allclose(streamed["participation_ratio"], expected)
    assert (streamed["participation_ratio"] < 1.1).all()
    sample = layer_spectra.token_sample_spectrum_profile(sunk)["participation_ratio"]
    assert (sample > 20).all()


def test_mid_depth_table_reads_each_capture_and_its_noise_reference(planted):
    calls = []

    def noise_reference(n, d):
        calls.append((n, d))
        return pd.DataFrame({"n_spikes": [0, 1], "ks": [0.02, 0.04]})

    table = tables.mid_depth_table({"a-1": planted}, noise_reference)
    n = N_PROMPTS * (PER_PROMPT - 1)
    assert calls == [(n, D)]
    row = table.iloc[0]
    _, eigvals, fit = tables.depth_spectrum(planted, 2)
    assert (row["model"], row["layer"], row["n"], row["d"], row["spikes"]) == ("a-1", 2, n, D, 3)
    assert row["KS"] == fit.ks
    assert row["top / edge"] == pytest.approx(eigvals[0] / fit.edges[1])
    assert row["top / edge"] > 10  # the planted variance 30 against an edge near (1 + sqrt(32/600))^2
    assert row["noise spikes"] == 0.5 and row["noise KS"] == pytest.approx(0.03)


def test_mid_depth_glue_reads_models_and_twins():
    table = pd.DataFrame(
        {
            "model": ["smollm2-135m", "random:smollm2-135m"],
            "spikes": [12, 40],
            "KS": [0.3, 0.2],
            "top / edge": [50.0, 5.0],
            "noise spikes": [0.3, 0.7],
            "noise KS": [0.05, 0.04],
        }
    )
    assert tables.mid_depth_glue(table, ["smollm2-135m"]) == {
        "mid_spikes_smollm2": 12,
        "mid_spikes_random_smollm2": 40,
        "mid_ks_smollm2": 0.3,
        "mid_top_smollm2": 50.0,
        "mid_noise_ks_max": 0.05,
        "mid_noise_spikes_max": 0.7,
        "mid_min_spikes": 12,
        "mid_max_spikes": 40,
    }


def test_pr_jump_glue_finds_the_largest_rise_of_the_interior_pr():
    profile = pd.DataFrame(
        {
            "gamma": [0.0, 0.25, 0.5, 0.75, 1.0],
            "participation_ratio": [100.0, 2.0, 3.0, 12.0, 0.5],  # edges left out: the rise 3 -> 12 counts
            "top_coordinate": [1.0, 90.0, 80.0, 4.0, 2.0],
        }
    )
    assert tables.pr_jump_glue({"gemma3-270m": profile}, ["gemma3-270m"]) == {
        "jump_gamma_gemma3": 0.75,
        "jump_factor_gemma3": 4.0,
        "jump_top_before_gemma3": 80.0,
        "jump_top_after_gemma3": 4.0,
    }


def test_contrast_table_and_glue_with_the_direction():
    contrasts = {
        "minilm-l6": _contrast(0.8, (0.7, 0.9)),
        "random:minilm-l6": _contrast(1.2, (1.1, 1.3), n_before=2, n_after=5),
        "minilm-l6 (shuffled)": _contrast(1.0, (0.9, 1.1)),
    }
    table = tables.contrast_table(contrasts)
    assert table["model"].tolist() == list(contrasts)
    assert table["PR after / before"].tolist() == [0.8, 1.2, 1.0]
    assert table["CI low"].tolist() == [0.7, 1.1, 0.9] and table["CI high"].tolist() == [0.9, 1.3, 1.1]
    assert table["depths before"].tolist() == [3, 2, 3] and table["depths after"].tolist() == [4, 5, 4]
    assert tables.pr_direction(contrasts["minilm-l6 (shuffled)"]) == "does not change detectably"
    glued = tables.contrast_glue(contrasts, ["minilm-l6"])
    assert glued == {
        "prc_minilm": 0.8,
        "prc_minilm_lo": 0.7,
        "prc_minilm_hi": 0.9,
        "prc_minilm_dir": "falls",
        "prc_random_minilm": 1.2,
        "prc_random_minilm_lo": 1.1,
        "prc_random_minilm_hi": 1.3,
        "prc_random_minilm_dir": "rises",
    }
    assert "sp_prc_random_minilm_dir" in glue_keys("sp", glued)


def test_mean_share_glue_skips_the_embedding_and_takes_the_smallest_pr_ratio():
    profiles = {
        "smollm2-135m": pd.DataFrame(
            {
                "mean_share": [0.9, 0.2, 0.5],
                "pr_uncentred": [4.0, 2.0, 3.0],
                "participation_ratio": [8.0, 8.0, 6.0],
            }
        ),
        "random:smollm2-135m": pd.DataFrame(
            {
                "mean_share": [0.1, 0.05, 0.02],
                "pr_uncentred": [1.0, 9.0, 9.0],
                "participation_ratio": [10.0, 9.0, 9.0],
            }
        ),
    }
    assert tables.mean_share_glue(profiles, ["smollm2-135m"]) == {
        "mean_share_smollm2": 50.0,
        "mean_share_random_smollm2": 5.0,
        "pr_uncentred_min": 0.1,
    }


def test_depth_spectrum_matches_the_chapter_4_token_sample(planted):
    sample = layer_spectra.token_sample(planted, 3)
    got, eigvals, _ = tables.depth_spectrum(planted, 3)
    np.testing.assert_array_equal(got.x, sample.x)
    np.testing.assert_allclose(eigvals, layer_spectra.sample_eigvals(sample.x))
