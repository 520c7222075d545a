"""Chapter 3's tables and glued numbers (``study.chapters.omega_tables``) and its figures (``view.omega_figures``),
on synthetic captures and hand-made profiles: every value checked against a reference formula or a hand
computation, every figure against the data it was given."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from types import SimpleNamespace  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from latentbook.analysis import bimodality, confounds, omega, synthetic, transition  # noqa: E402
from latentbook.analysis.omega_profiles import Profile  # noqa: E402
from latentbook.analysis.transition import Transition  # noqa: E402
from latentbook.study.chapters import glue_keys  # noqa: E402
from latentbook.study.chapters import omega_tables as tables  # noqa: E402
from latentbook.view import omega_figures  # noqa: E402

N_PROMPTS, PER_PROMPT, D = 64, 8, 64
GAUSS_LIMIT = 1 - np.sqrt(2 / np.pi)


@pytest.fixture(scope="module")
def planted():
    """Depth 0: Gaussian. Depth 1: + a massive coordinate (1000, axis 5) on every first-position token.
    Depth 2: one-hot tokens (random axes and signs). States kept for hand computations."""
    rng = np.random.default_rng(0)
    n = N_PROMPTS * PER_PROMPT
    positions = np.tile(np.arange(PER_PROMPT), N_PROMPTS)
    prompt_ids = np.repeat(np.arange(N_PROMPTS), PER_PROMPT)
    states = rng.standard_normal((3, n, D))
    states[1, positions == 0, 5] = 1000.0
    states[2] = np.eye(D)[rng.integers(0, D, n)] * rng.choice([-1.0, 1.0], (n, 1))
    cap = synthetic.as_capture(states, prompt_ids, positions, name="planted", n_vectors=n)
    return SimpleNamespace(cap=cap, states=states, positions=positions, prompt_ids=prompt_ids)


def _profile(m, gamma=None, width=0.02):
    m = np.asarray(m, dtype=float)
    gamma = np.linspace(0, 1, len(m)) if gamma is None else np.asarray(gamma)
    return Profile(gamma, m, m - width / 2, m + width / 2, 100, 10, "prompt", 0.95)


def test_label_key_names_twins_and_shuffled_runs():
    assert tables.label_key("smollm2-135m") == "smollm2"
    assert tables.label_key("random:gemma3-270m") == "random_gemma3"
    assert tables.label_key("minilm-l6 (shuffled)") == "minilm_shuffled"


def test_reference_table_matches_the_formulas_per_model():
    references = tables.reference_table({"wide": 64, "narrow": 16}, k=4)
    assert list(references.index) == ["wide", "narrow"]
    for name, d in (("wide", 64), ("narrow", 16)):
        row = references.loc[name]
        assert row["d"] == d
        assert row["one-hot 1-1/sqrt(d)"] == pytest.approx(1 - 1 / np.sqrt(d))
        assert row["measured one-hot"] == pytest.approx(1 - 1 / np.sqrt(d))
        assert row["4-sparse 1-sqrt(k/d)"] == pytest.approx(1 - np.sqrt(4 / d))
        assert row["measured 4-sparse"] == pytest.approx(1 - np.sqrt(4 / d))
        assert row["Gaussian (exact, this d)"] == pytest.approx(omega.gaussian_omega(d))
        assert row["measured Gaussian (mean of 4096)"] == pytest.approx(omega.gaussian_omega(d), abs=0.005)
        assert row["Gaussian limit 1-sqrt(2/pi)"] == pytest.approx(GAUSS_LIMIT)
    values = tables.reference_glue(references, model="narrow")
    assert values == {
        "gauss_limit": pytest.approx(GAUSS_LIMIT),
        "gauss_narrow": pytest.approx(omega.gaussian_omega(16)),
        "gauss_measured_narrow": references.loc["narrow", "measured Gaussian (mean of 4096)"],
        "onehot_narrow": pytest.approx(0.75),
    }


def test_boosted_omega_sets_the_first_coordinates():
    zeros = np.zeros((3, 16))
    assert tables.boosted_omega(zeros, 1, 5.0) == pytest.approx(1 - 1 / 4)  # one-hot
    assert tables.boosted_omega(zeros, 4, 5.0) == pytest.approx(1 - np.sqrt(4 / 16))  # 4-sparse
    base = synthetic.gaussian(2000, 256, seed=3)
    assert tables.boosted_omega(base, 1, 100.0) == pytest.approx(omega.massive_omega(256, 100.0), abs=0.01)


def test_width_table_and_glue_carry_the_paper_levels():
    table = tables.width_table((64, omega.PAPER_WIDTH))
    assert list(table.index) == [64, omega.PAPER_WIDTH]
    assert table.loc[64, "one coordinate at 100 s.d."] == pytest.approx(omega.massive_omega(64, 100.0))
    assert table.loc[64, "0.69, same Hoyer sparseness"] == pytest.approx(
        0.69 * (1 - 1 / 8) / (1 - 1 / np.sqrt(5120))
    )
    # at the paper's own width every structure gives the level back
    for level in ("0.69", "0.90"):
        for structure in ("Hoyer sparseness", "massive coordinate"):
            assert table.loc[omega.PAPER_WIDTH, f"{level}, same {structure}"] == pytest.approx(float(level))
    values = tables.width_glue(table, [576, 64, 2048], at=64)
    assert values["paper_width"] == 5120 and values["min_width"] == 64 and values["max_width_d"] == 2048
    assert values["massive100_64"] == table.loc[64, "one coordinate at 100 s.d."]
    assert values["massive100_5120"] == pytest.approx(omega.massive_omega(5120, 100.0))
    assert values["liquid_hoyer_64"] == table.loc[64, "0.69, same Hoyer sparseness"]
    assert values["solid_hoyer_64"] == table.loc[64, "0.90, same Hoyer sparseness"]
    assert values["liquid_massive_64"] == table.loc[64, "0.69, same massive coordinate"]
    assert values["solid_massive_64"] == table.loc[64, "0.90, same massive coordinate"]


def test_m_summary_reads_each_profile():
    profiles = {"a-1": _profile([0.2, 0.5, 0.3], width=0.04), "random:a-1": _profile([0.25, 0.2, 0.21, 0.22])}
    table = tables.m_summary_table(profiles)
    assert table.loc["a-1"].to_dict() == pytest.approx(
        {
            "m at gamma=0": 0.2,
            "max m": 0.5,
            "gamma of max": 0.5,
            "m at gamma=1": 0.3,
            "mean CI width": 0.04,
            "prompts resampled": 10,
        }
    )
    assert table.loc["random:a-1", "gamma of max"] == 0.0 and table.loc["random:a-1", "m at gamma=1"] == 0.22
    values = tables.m_summary_glue(table)
    assert values["a_mmax"] == 0.5 and values["a_gmax"] == 0.5 and values["random_a_m0"] == 0.25
    assert values["random_a_ciw"] == pytest.approx(0.02) and len(values) == 10


def test_permutation_shares_use_the_fitted_depths_only():
    null = pd.DataFrame(
        {
            "gamma": np.linspace(0, 1, 6),
            "sample": [9.0, 9.0, 0.5, 0.6, 0.4, 9.0],  # the edges (depths 0, 1 and 5) must be left out
            "permutation": [0.0, 0.0, 0.4, 0.3, 0.4, 0.0],
            "gaussian": [0.0, 0.0, 0.2, 0.2, 0.2, 0.0],
            "share_permutation": [5.0, 5.0, 0.9, 0.5, 1.1, 5.0],
        }
    )
    shares = tables.permutation_share_table({"m-1": null})
    assert shares.loc["m-1"].to_dict() == pytest.approx(
        {
            "median share explained by the permutation": 0.9,
            "largest |m - m_perm|": 0.3,
            "mean m - m_gauss": (0.3 + 0.4 + 0.2) / 3,
        }
    )
    assert tables.permutation_share_glue(shares) == pytest.approx({"m_perm_share": 0.9, "m_perm_gap": 0.3})


@pytest.fixture(scope="module")
def mixed():
    """A trained-like capture bimodal at depth 1 (every other token nearly one-hot, within each prompt) and
    Gaussian at depths 0 and 2, and its Gaussian "random:" twin."""
    rng = np.random.default_rng(1)
    n = N_PROMPTS * PER_PROMPT
    positions = np.tile(np.arange(PER_PROMPT), N_PROMPTS)
    prompt_ids = np.repeat(np.arange(N_PROMPTS), PER_PROMPT)
    states = rng.standard_normal((3, n, D))
    spiky = positions % 2 == 1
    states[1, spiky] = 0.1 * states[1, spiky]
    states[1, spiky, rng.integers(0, D, spiky.sum())] = 10.0
    twin = rng.standard_normal((3, n, D))
    return {
        "m-1": synthetic.as_capture(states, prompt_ids, positions),
        "random:m-1": synthetic.as_capture(twin, prompt_ids, positions),
    }


def test_bimodality_verdicts_counts_and_glue(mixed):
    verdicts = tables.bimodality_verdicts(mixed, k=4)
    assert len(verdicts) == 6 and list(verdicts["l"]) == [0, 1, 2, 0, 1, 2]
    trained = verdicts[verdicts["capture"] == "m-1"].set_index("l")
    assert trained.loc[1, "verdict"] == "bimodal"
    assert list(verdicts.loc[verdicts["capture"] == "random:m-1", "verdict"]) == ["unimodal"] * 3
    assert trained.loc[1, "gamma"] == 0.5
    # confounds removed only where a trained capture is not unimodal
    assert (
        trained["verdict, confounds removed"].notna().tolist() == (trained["verdict"] != "unimodal").tolist()
    )
    assert verdicts.loc[verdicts["capture"] == "random:m-1", "verdict, confounds removed"].isna().all()
    cap = mixed["m-1"]
    values, ids = omega.samples(cap, 1, drop_top_dims=4, drop_first=True)
    assert (
        trained.loc[1, "verdict, confounds removed"] == bimodality.bimodality(values, prompt_ids=ids).verdict
    )

    counts = tables.bimodality_counts(verdicts, ["random:m-1", "m-1"])
    assert list(counts.index) == ["random:m-1", "m-1"]
    expected = trained["verdict"].value_counts()
    for verdict in ("bimodal", "inconclusive", "unimodal"):
        assert counts.loc["m-1", verdict] == expected.get(verdict, 0)
    assert counts.loc["random:m-1"].tolist() == [0, 0, 3, 0]
    assert (
        counts.loc["m-1", "bimodal, confounds removed"]
        == (trained["verdict, confounds removed"] == "bimodal").sum()
    )
    glued = tables.bimodality_glue(counts)
    assert glued["m_n_bimodal"] == counts.loc["m-1", "bimodal"] >= 1
    assert glued["m_n_depths"] == 3 and glued["random_m_n_depths"] == 3
    assert glued["random_m_n_bimodal"] == 0 and glued["nulls_n_bimodal"] == 0
    assert glued["m_n_bimodal_clean"] == counts.loc["m-1", "bimodal, confounds removed"]
    shown = tables.not_unimodal_table(verdicts)
    assert ("m-1", 1) in shown.index and "distinct values" not in shown.columns
    assert not (shown["verdict"] == "unimodal").any()


def test_edge_glue_and_settings():
    m = np.array([0.1, 0.3, 0.35, 0.37, 0.36, 0.50])
    assert tables.edge_glue(m, key="x") == pytest.approx(
        {"x_edge0": 0.1, "x_edge1": 0.3, "x_edge2": 0.35, "x_interior_step": 0.02, "x_last_step": 0.14}
    )
    assert tables.transition_settings_glue() == {
        "min_depths": transition.MIN_FITTED + sum(transition.SKIP),
        "max_switch": transition.MAX_WIDTH,
        "bic_margin": 10,
    }


def _transition(gamma_c, amplitude, has_transition, delta_bic, reason=""):
    return Transition(
        gamma_c=gamma_c, ci=(gamma_c - 0.05, gamma_c + 0.05), amplitude=amplitude, amplitude_ci=(0.0, 1.0),
        width=0.01, base=0.3, has_transition=has_transition, reason=reason, noise=0.001, delta_bic=delta_bic,
        bic={}, level=0.95, ci_method="test", fitted_gamma=np.zeros(0), fitted=np.zeros(0),
    )  # fmt: skip


def test_fit_table_and_glue():
    captures = {"a-1": None, "random:a-1": None, "short-1": SimpleNamespace(n_depths=7)}
    fits = {
        "a-1": _transition(0.42, 0.2, True, {"linear": 40.0, "kink": 15.0}),
        "random:a-1": _transition(0.6, -0.003, False, {"linear": -2.0, "kink": 3.0}, reason="jump too small"),
    }
    table = tables.fit_table(captures, fits)
    assert list(table.index) == ["a-1", "random:a-1", "short-1"]
    assert table.loc["a-1", "transition"] == "yes" and table.loc["a-1", "closest null"] == "kink"
    assert table.loc["a-1", "delta BIC"] == 15.0 and table.loc["a-1", "reason"] == "a jump beyond every null"
    assert (table.loc["a-1", "CI low"], table.loc["a-1", "CI high"]) == pytest.approx((0.37, 0.47))
    assert (
        table.loc["random:a-1", "closest null"] == "linear" and table.loc["random:a-1", "delta BIC"] == -2.0
    )
    assert table.loc["random:a-1", "reason"] == "jump too small"
    assert table.loc["short-1", "transition"] == "not testable"
    assert table.loc["short-1", "reason"] == "7 depths: too few after the edges"
    assert np.isnan(table.loc["short-1", "gamma_c"])
    values = tables.fit_glue(table, fits)
    assert values == {
        "n_transitions": 1,
        "n_fitted": 2,
        "transition_list": "a-1 (gamma_c = 0.42, jump +0.200)",
        "a_gamma_c": 0.42,
        "a_jump": 0.2,
        "random_a_gamma_c": 0.6,
        "random_a_jump": -0.003,
    }
    none = tables.fit_glue(table.drop(index="a-1"), {"random:a-1": fits["random:a-1"]})
    assert none["transition_list"] == "none" and none["n_transitions"] == 0


def test_transition_fits_skips_captures_with_too_few_depths(planted):
    assert not transition.is_testable(planted.cap.n_depths)
    assert tables.transition_fits({"planted": planted.cap}) == {}


def test_sink_table_and_glue_measure_the_first_position(planted):
    cap, states, first = planted.cap, planted.states, planted.positions == 0
    ratios = {"planted": confounds.massive_ratio(cap), "random:planted": np.array([1.0, 2.5, 1.5])}
    peak = {"planted": 1}
    table = tables.sink_table({"planted": cap}, ["planted"], ratios, peak)
    row = table.loc["planted"]
    assert row["peak depth l"] == 1 and row["gamma"] == 0.5 and row["ratio"] == ratios["planted"][1]
    assert row["position-0 tokens in sample"] == N_PROMPTS
    by_token = omega.omega(states[1])
    assert row["mean Omega, position 0"] == pytest.approx(by_token[first].mean(), rel=1e-5)
    assert row["mean Omega, other positions"] == pytest.approx(by_token[~first].mean(), rel=1e-5)
    assert row["mean Omega, position 0"] > 0.8 > 0.3 > row["mean Omega, other positions"]
    abs_mean = np.abs(states[1]).mean(0)
    assert row["top coordinate: mean |h| / median"] == pytest.approx(
        abs_mean[5] / np.median(abs_mean), rel=1e-4
    )
    values = tables.sink_glue(table, ratios)
    assert values == {
        "planted_top_mean_ratio": row["top coordinate: mean |h| / median"],
        "planted_peak_ratio": row["ratio"],
        "planted_peak_gamma": 0.5,
        "planted_omega_pos0": row["mean Omega, position 0"],
        "planted_omega_rest": row["mean Omega, other positions"],
        "random_max_ratio": 2.5,
    }


def test_treatment_table_and_glue(planted):
    cap = planted.cap
    assert tables.max_m_depth(cap) == 2  # the one-hot depth
    treated = tables.treatment_table({"planted": cap}, ["planted"], {"planted": 1}, k=1)
    assert list(treated.index) == [("planted", 1), ("planted", 2)]  # {max m, peak, L} = {2, 1, 2}
    for layer in (1, 2):
        expected = confounds.treatments(cap, layer, k=1)
        assert treated.loc[("planted", layer)].drop("gamma").to_dict() == pytest.approx(expected)
    assert treated.loc[("planted", 2), "as captured"] == pytest.approx(1 - 1 / np.sqrt(D))
    values = tables.treatment_glue(
        treated, {"planted": cap}, {"planted": 1}, GAUSS_LIMIT, k=1, at_peak_of="planted"
    )
    assert values["rotated_max_dev"] == pytest.approx((treated["rotated"] - GAUSS_LIMIT).abs().max())
    assert values["planted_peak_asis"] == treated.loc[("planted", 1), "as captured"]
    assert values["planted_peak_centred"] == treated.loc[("planted", 1), "centred"]
    assert values["planted_peak_clean"] == treated.loc[("planted", 1), "all removed"]
    at_max = treated.loc[("planted", 2)]
    assert values["planted_treat_gamma"] == 1.0
    assert values["planted_treat_asis"] == at_max["as captured"]
    assert values["planted_treat_nofirst"] == at_max["first position dropped"]
    assert values["planted_treat_notop"] == at_max["top-1 dims dropped"]
    assert values["planted_treat_centred"] == at_max["centred"]
    assert values["planted_treat_rotated"] == at_max["rotated"]
    assert values["planted_treat_clean"] == at_max["all removed"]


def test_cleaned_table_and_glue():
    testable = _profile(np.linspace(0.2, 0.3, 14))
    cleaned = {"long-1": testable, "short-1": _profile([0.3, 0.4, 0.35])}
    table = tables.cleaned_table(cleaned, n_boot=20)
    fit = transition.critical_depth(testable.gamma, testable.m, n_boot=20)
    assert table.loc["long-1", "transition"] == ("yes" if fit.has_transition else "no") == "no"
    assert table.loc["long-1", "gamma_c"] == fit.gamma_c and table.loc["long-1", "jump b"] == fit.amplitude
    assert table.loc["long-1", "max m (cleaned)"] == pytest.approx(0.3)
    assert table.loc["short-1", "transition"] == "not testable"
    assert table.loc["short-1", "reason"] == "3 depths: too few after the edges"
    assert table.loc["short-1", "m at gamma=1 (cleaned)"] == 0.35
    values = tables.cleaned_glue(table, cleaned)
    assert values == pytest.approx(
        {
            "long_clean_mmax": 0.3, "long_clean_gmax": 1.0, "long_clean_m1": 0.3,
            "short_clean_mmax": 0.4, "short_clean_gmax": 0.5, "short_clean_m1": 0.35,
            "n_clean_transitions": 0,
        }
    )  # fmt: skip
    assert glue_keys("ch3", values)["ch3_short_clean_gmax"] == 0.5


def test_planted_models_of_chapter_3_separate_codes_from_a_massive_coordinate():
    """The chapter's claims about its planted models, checked: all lift raw m and m_perm alike; the sparse code
    moves both standardised profiles, the class code only the verdict's m_z (median and MAD), the massive
    coordinate neither. A standardisation that kept the scales (or a planted model without its code) fails here."""
    planted_tables = tables.planted_null_tables(d=128)
    glued = tables.planted_glue(planted_tables)
    parts = tables.decomposition_table(planted_tables)
    decomposed = tables.decomposition_glue(parts)
    assert min(glued["sparse_code_mstep"], glued["class_code_mstep"], glued["massive_mstep"]) > 0.1
    assert max(glued["sparse_code_permgap"], glued["massive_permgap"]) < 0.02
    assert decomposed["sparse_code_zstep"] > 0.1 and decomposed["sparse_code_sstep"] > 0.1
    assert decomposed["class_code_zstep"] > 0.1 > 0.03 > decomposed["class_code_sstep"]
    assert max(decomposed["massive_zstep"], decomposed["massive_sstep"]) < 0.02
    assert decomposed["massive_largest_part"] == "scale"
    for label in parts.index:  # the three parts add up to m - g
        assert parts.loc[label, list(tables.DECOMPOSITION)].sum() == pytest.approx(parts.loc[label, "m - g"])


def test_scope_sentence_counts_in_words():
    from latentbook.study.verdict_table import scope_sentence

    counts = pd.DataFrame({"holds": [2, 1, 0], "does not hold": [0, 3, 0]}, index=["in", "below", "any"])
    assert scope_sentence(counts, ["in", "any"]) == "2 holds"
    assert scope_sentence(counts, ["below"]) == "1 holds, 3 does not hold"
    assert scope_sentence(counts, ["any"]) == "no verdicts"


def test_boosted_curves_tabulate_boosted_omega_by_size_and_count():
    base = synthetic.gaussian(64, 32, seed=2)
    curves = tables.boosted_curves(base, [1.0, 10.0, 100.0], counts=(1, 3))
    assert list(curves.columns) == [1, 3] and curves.index.tolist() == [1.0, 10.0, 100.0]
    assert curves.index.name == "c"
    for j in (1, 3):
        for c in (1.0, 10.0, 100.0):
            assert curves.loc[c, j] == tables.boosted_omega(base, j, c)
    assert curves[1].is_monotonic_increasing  # a larger coordinate dominates the norm more


def test_omega_at_depths_keys_each_nearest_depth_once_by_its_gamma(planted):
    fake = SimpleNamespace(n_layers=8, gamma=np.arange(9) / 8, omega_samples=lambda layer: np.full(3, layer))
    samples = tables.omega_at_depths(fake)
    assert list(samples) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert [values[0] for values in samples.values()] == [0, 2, 4, 6, 8]
    assert list(tables.omega_at_depths(fake, gammas=(0.5, 0.52))) == [0.5]  # one depth, once
    cap = planted.cap
    on_capture = tables.omega_at_depths(cap, gammas=(1.0,))
    assert list(on_capture) == [1.0] and np.array_equal(on_capture[1.0], cap.omega_samples(2))


def test_size_glue_reads_the_models_named_in_millions():
    captures = {
        name: SimpleNamespace(provenance={"n_parameters": n})
        for name, n in (("a", 135_000_000), ("b", 22_700_000), ("random:b", 9e9))
    }
    assert tables.size_glue(captures, ["a", "b"]) == {"smallest_m": 22.7, "largest_m": 135.0}


def test_boosted_omega_curves_draw_one_line_per_count_and_the_gaussian_value():
    curves = pd.DataFrame({1: [0.3, 0.6, 0.9], 2: [0.3, 0.7, 0.85]}, index=pd.Index([1.0, 10.0, 100.0]))
    ax = omega_figures.boosted_omega_curves(curves, 64)
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"1 massive coordinate", "2 massive coordinates", "Gaussian"}
    assert list(lines["2 massive coordinates"].get_ydata()) == [0.3, 0.7, 0.85]
    assert lines["Gaussian"].get_ydata()[0] == pytest.approx(omega.gaussian_omega(64))
    assert ax.get_xscale() == "log" and "d = 64" in ax.get_title()
    plt.close("all")


def test_profile_panel_draws_every_run_of_the_model_with_its_band():
    profiles = {
        "a-1": _profile([0.2, 0.5, 0.3]),
        "random:a-1": _profile([0.2, 0.21, 0.2]),
        "a-1 (shuffled)": _profile([0.2, 0.5, 0.4]),
        "b-1": _profile([0.9, 0.9, 0.9]),  # another model: not on a-1's panel
    }
    ax = omega_figures.profile_panel(profiles, "a-1", "m", GAUSS_LIMIT, captured=_profile([0.6, 0.6, 0.6]))
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {
        "a-1",
        "random:a-1",
        "a-1 (shuffled)",
        r"Gaussian $1-\sqrt{2/\pi}$",
        "a-1, as captured",
    }
    assert list(lines["a-1 (shuffled)"].get_ydata()) == [0.2, 0.5, 0.4]
    assert lines["a-1, as captured"].get_color() == "grey"
    assert len(ax.collections) == 3 and ax.get_title() == "a-1"  # one band per run
    plt.close("all")


def test_null_panel_draws_three_curves_for_the_model_and_its_twin():
    def table(offset):
        return pd.DataFrame(
            {
                "gamma": [0.0, 0.5, 1.0],
                "sample": [0.5 + offset] * 3,
                "permutation": [0.4] * 3,
                "gaussian": [0.2] * 3,
            }
        )

    ax = omega_figures.null_panel({"a-1": table(0.1), "random:a-1": table(0.0), "b-1": table(0.3)}, "a-1")
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert len(lines) == 6 and ax.get_title() == "a-1"
    assert list(lines["a-1: tokens"].get_ydata()) == [0.6] * 3
    assert lines["random:a-1: coordinates permuted"].get_linestyle() == "--"
    assert lines["a-1: Gaussian, same covariance"].get_color() == "C2"
    plt.close("all")


def test_standardised_panel_draws_m_m_perm_m_s_and_m_z():
    table = pd.DataFrame(
        {
            "gamma": [0.0, 1.0],
            "sample": [0.3, 0.7],
            "permutation": [0.3, 0.69],
            "standardised": [0.2, 0.21],
            "m_z": [0.2, 0.5],
        }
    )
    ax = omega_figures.standardised_panel(table, "massive (planted)")
    drawn = {line.get_label().split(":")[0]: list(line.get_ydata()) for line in ax.get_lines()}
    assert drawn == {
        "$m$": [0.3, 0.7],
        r"$m_\mathrm{perm}$": [0.3, 0.69],
        "$m_s$": [0.2, 0.21],
        "$m_z$": [0.2, 0.5],
    }
    assert ax.get_title() == "massive (planted)"
    plt.close("all")
