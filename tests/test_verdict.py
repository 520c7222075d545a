"""The verdict's criteria on inputs whose answer is known, and the table end to end on planted captures,
including capture files picked up from a results folder and the ladder's rows."""

from __future__ import annotations

import dataclasses
import json
import types

import numpy as np
import pandas as pd
import pytest

import latentbook as lb
from latentbook.analysis import (
    bimodality,
    calibration,
    omega,
    spectral_contrasts,
    synthetic,
    tco,
    transition,
    verdict,
)
from latentbook.analysis.bimodality_power import band_spreads
from latentbook.ladder import report
from latentbook.study import ladder_rows, paths, rows
from latentbook.study import verdict_table as study_verdict
from latentbook.study.measure import measure, n_parameters

# --- planted captures ----------------------------------------------------------------------------------------


def _planted_states(
    gamma_c: float | None,
    n_depths: int = 21,
    n_prompts: int = 150,
    per_prompt: int = 4,
    d: int = 48,
    seed: int = 0,
):
    """Tokens that turn from dense Gaussian (Omega ~0.20) to one-hot-like (one coordinate each, Omega ~0.86) at
    ``gamma_c`` (a steep sigmoid in the fraction of sparse tokens); ``None``: dense at every depth (the null).
    One coordinate per token is structure within tokens: the coordinate-permuted sample has a Poisson number of
    large coordinates per token (none for 37 %), so the excess over the permutation null jumps too."""
    rng = np.random.default_rng(seed)
    n = n_prompts * per_prompt
    gamma = np.arange(n_depths) / (n_depths - 1)
    states = rng.standard_normal((n_depths, n, d))
    if gamma_c is not None:
        share = 1 / (1 + np.exp(-(gamma - gamma_c) / 0.01))
        order = rng.random(n)
        support = np.argsort(rng.random((n, d)), axis=1)[:, :1]
        mask = np.zeros((n, d), dtype=bool)
        np.put_along_axis(mask, support, True, axis=1)
        for depth in range(n_depths):
            sparse = order < share[depth]
            # one coordinate each, over a floor of 1e-4: exact one-hot vectors would all have the same Omega
            states[depth, sparse] *= mask[sparse] + 1e-4 * ~mask[sparse]
    ids = np.repeat(np.arange(n_prompts), per_prompt)
    positions = np.tile(np.arange(1, per_prompt + 1), n_prompts)
    return states, ids, positions


@pytest.fixture(scope="module")
def planted():
    return synthetic.as_capture(*_planted_states(0.42), name="planted", n_vectors=600)


@pytest.fixture(scope="module")
def null():
    return synthetic.as_capture(*_planted_states(None), name="random:planted", n_vectors=600)


# --- criteria on known answers ---------------------------------------------------------------------------------


def test_critical_depth_and_jump_criteria_on_planted_curves():
    at_paper = transition.critical_depth(*_curve(0.42, 0.21))
    assert verdict.judge_critical_depth(at_paper, 41)[0] == "holds"
    assert verdict.judge_jump(at_paper)[0] == "holds"
    late = transition.critical_depth(*_curve(0.80, 0.21))
    verdict_late, reason_late = verdict.judge_critical_depth(late, 41)
    assert late.has_transition and verdict_late == "does not hold" and "outside" in reason_late
    small = transition.critical_depth(*_curve(0.42, 0.05, noise=0.002))
    assert small.has_transition and verdict.judge_jump(small)[0] == "does not hold"
    flat = transition.critical_depth(*_curve(0.42, 0.0))
    assert verdict.judge_critical_depth(flat, 41)[0] == "does not hold"
    assert verdict.judge_jump(flat)[0] == "does not hold"
    assert verdict.judge_critical_depth(None, 7)[0] == "not testable here"
    # a twin with the same jump: the trained model does not beat its null, and so has no critical depth either
    assert verdict.judge_jump(at_paper, at_paper)[0] == "does not hold"
    judged, why = verdict.judge_critical_depth(at_paper, 41, at_paper)
    assert judged == "does not hold" and "beyond the null" in why
    # a transition smaller than the paper's jump still has a critical depth (its size is omega_jump's claim) ...
    medium = transition.critical_depth(*_curve(0.42, 0.09, noise=0.002))
    assert verdict.judge_jump(medium)[0] == "does not hold"
    assert verdict.judge_critical_depth(medium, 41)[0] == "holds"
    assert verdict.judge_critical_depth(at_paper, 41, flat)[0] == "holds"
    # ... unless a twin with the same step explains it, or the step is not clearly a transition's
    assert verdict.judge_critical_depth(medium, 41, medium)[0] == "does not hold"
    # NaN in either interval is no evidence: NaN compares False with the bars and would have read as "holds"
    nan = float("nan")
    assert verdict.judge_jump(dataclasses.replace(at_paper, amplitude_ci=(nan, nan)))[0] == "does not hold"
    assert (
        verdict.judge_jump(at_paper, dataclasses.replace(flat, amplitude_ci=(nan, nan)))[0] == "does not hold"
    )
    assert verdict.judge_critical_depth(small, 41)[0] == "does not hold"
    # a twin with a smaller step of its own at the same depth: the model beats its jump, yet the depth is the
    # architecture's (the planted class code written in model and twin alike, the model's norm growing)
    judged, why = verdict.judge_critical_depth(at_paper, 41, medium)
    assert verdict.judge_jump(at_paper, medium, verdict.MIN_TRANSITION)[0] == "holds"
    assert judged == "does not hold" and "architecture's" in why
    # a twin whose own step lies elsewhere does not explain this one
    elsewhere = transition.critical_depth(*_curve(0.75, 0.09, noise=0.001))
    assert verdict.places_gamma_c(elsewhere)
    assert verdict.judge_critical_depth(at_paper, 41, elsewhere)[0] == "holds"


def _curve(gamma_c, amplitude, noise=0.01):
    curve = synthetic.order_parameter_curve(
        gamma_c=gamma_c, amplitude=amplitude, noise=noise, n_layers=40, seed=3
    )
    return curve.gamma, curve.m


def test_liquid_criterion_maps_the_paper_threshold_to_each_width():
    assert verdict.solid_threshold(5120) == pytest.approx(verdict.SOLID_THRESHOLD)
    expected = verdict.SOLID_THRESHOLD * (1 - 1 / 24) / (1 - 1 / np.sqrt(5120))  # same Hoyer sparseness
    assert verdict.solid_threshold(576) == pytest.approx(expected)
    assert verdict.min_jump(576) == pytest.approx(verdict.MIN_JUMP * (1 - 1 / 24) / (1 - 1 / np.sqrt(5120)))
    t = verdict.solid_threshold(576)
    assert verdict.judge_liquid(t - 0.05, (t - 0.06, t - 0.04), 0.3, 576)[0] == "holds"
    assert verdict.judge_liquid(t + 0.05, (t + 0.04, t + 0.06), 0.1, 576)[0] == "does not hold"
    assert verdict.judge_liquid(t, (t - 0.01, t + 0.01), 0.1, 576)[0] == "inconclusive"
    # 0.78 is below the paper's 0.795 at d = 5120 but above the threshold at d = 576
    assert verdict.judge_liquid(0.78, (0.777, 0.783), 0.1, 5120)[0] == "holds"
    assert verdict.judge_liquid(0.78, (0.777, 0.783), 0.1, 576)[0] == "does not hold"


def _depths(bimodal: bool, n_depths: int = 4, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    samples = [calibration.planted_omega_samples(rng, 48, 24, bimodal, 5.0, 0.4) for _ in range(n_depths)]
    return [bimodality.bimodality(values, prompt_ids=ids) for values, ids in samples]


def test_bimodality_criterion_needs_modes_beyond_both_nulls_and_none_in_the_twin():
    real, flat = _depths(True, seed=1), _depths(False, seed=2)
    assert all(b.verdict == "bimodal" for b in real) and all(b.verdict == "unimodal" for b in flat)
    assert verdict.judge_bimodality(real, flat, flat, flat)[0] == "holds"
    assert verdict.judge_bimodality(flat, flat, flat, flat)[0] == "does not hold"
    word, reason = verdict.judge_bimodality(real, flat, _depths(True, seed=3), flat)
    assert word == "does not hold" and "shuffled" in reason
    assert verdict.judge_bimodality(real, _depths(True, seed=4), flat, flat)[0] == "does not hold"
    word, reason = verdict.judge_bimodality(real, flat, flat, _depths(True, seed=5))
    assert word == "does not hold" and "twin" in reason
    assert verdict.judge_bimodality([], [], None, None)[0] == "not testable here"


def _spikes(before, after, settled=True, half=1.0, difference=None):
    difference = (after - before - half, after - before + half) if difference is None else difference
    return spectral_contrasts.SpikeContrast(
        before,
        after,
        (before - half, before + half),
        (after - half, after + half),
        settled,
        0.42,
        5,
        5,
        20,
        0.95,
        np.zeros(3),
        0 if settled else 2,
        0 if settled else 7,
        difference,
    )


def test_spikes_criterion_never_judges_an_unsettled_count():
    assert verdict.judge_spikes(_spikes(3, 8))[0] == "holds"
    assert verdict.judge_spikes(_spikes(8, 3))[0] == "does not hold"
    assert verdict.judge_spikes(_spikes(3, 4, half=1.0))[0] == "inconclusive"
    # the separate intervals overlap, the paired difference is above 0: the pairing decides
    assert verdict.judge_spikes(_spikes(3, 4, half=1.0, difference=(0.5, 1.5)))[0] == "holds"
    assert verdict.judge_spikes(_spikes(3, 8, difference=(-1.0, 9.0)))[0] == "inconclusive"
    assert verdict.judge_spikes(_spikes(0, 0, difference=(0.0, 0.0)))[0] == "does not hold"  # no increase
    assert verdict.judge_spikes(_spikes(3, 8, difference=(float("nan"),) * 2))[0] == "inconclusive"
    assert verdict.judge_spikes(_spikes(3, 8), twin=_spikes(3, 9))[0] == "does not hold"
    word, reason = verdict.judge_spikes(_spikes(3, 200, settled=False))
    assert word == "inconclusive" and "lower bounds" in reason


def test_concentration_and_contraction_criteria():
    def contrast(ratio, low, high):
        return spectral_contrasts.Contrast(ratio, (low, high), 0.42, 4, 5, 0.95)

    assert verdict.judge_concentration(contrast(0.5, 0.4, 0.6))[0] == "holds"
    assert verdict.judge_concentration(contrast(0.95, 0.85, 1.05))[0] == "inconclusive"  # straddles 0.9
    assert verdict.judge_concentration(contrast(0.95, 0.92, 0.98))[0] == "does not hold"  # a fall, too small
    assert verdict.judge_concentration(contrast(1.2, 1.1, 1.3))[0] == "does not hold"  # a rise
    assert verdict.judge_concentration(contrast(0.86, 0.83, 0.899))[0] == "holds"
    assert verdict.judge_concentration(contrast(0.86, 0.83, 0.9))[0] == "inconclusive"
    # a twin nearly as low: the ratio of the two, 0.89 [0.72, 1.12], straddles 0.9 as a model's own interval can
    assert verdict.judge_concentration(contrast(0.5, 0.4, 0.6), contrast(0.55, 0.5, 0.6))[0] == "inconclusive"
    assert verdict.judge_concentration(contrast(0.5, 0.4, 0.6), contrast(0.9, 0.8, 0.95))[0] == "holds"
    # a twin that falls too: the model must fall 10 % below it, by the interval of the difference of the logs
    # (the class-code twin of the planted record: the model 0.80 [0.79, 0.81] against the twin's 0.82 [0.82, 0.83]
    # passed a plain "below the twin")
    assert (
        verdict.judge_concentration(contrast(0.8, 0.79, 0.81), contrast(0.82, 0.82, 0.83))[0]
        == "does not hold"
    )
    assert verdict.judge_concentration(contrast(0.7, 0.69, 0.71), contrast(0.82, 0.8, 0.83))[0] == "holds"
    # [0.843, 0.912] over the twin: it may fall 10 % beyond the twin's, or not
    judged, reason = verdict.judge_concentration(contrast(0.71, 0.69, 0.74), contrast(0.82, 0.8, 0.83))
    assert judged == "inconclusive" and "[0.843, 0.912]" in reason
    # the two half-widths add in quadrature, not in full: 0.72 lies above 0.9 * 0.795 (the ends compared), yet the
    # ratio's interval reaches only 0.890; NaN in the twin's interval is no evidence
    assert verdict.judge_concentration(contrast(0.7, 0.68, 0.72), contrast(0.82, 0.795, 0.845))[0] == "holds"
    nan = float("nan")
    assert verdict.judge_concentration(contrast(0.5, 0.4, 0.6), contrast(0.8, nan, nan))[0] == "does not hold"
    # nor in the model's own: without a twin NaN compares False with the bar and would have read as "holds"
    assert verdict.judge_concentration(contrast(nan, nan, nan))[0] == "does not hold"
    assert (
        verdict.judge_concentration(contrast(0.5, 0.4, nan), contrast(1.0, 0.99, 1.01))[0] == "does not hold"
    )
    # a twin above 1 asks only for the bar: 0.899 holds against a twin at [1.02, 1.05] as without a twin
    assert verdict.judge_concentration(contrast(0.86, 0.83, 0.899), contrast(1.03, 1.02, 1.05))[0] == "holds"


def test_a_raw_spectral_row_holds_only_where_its_cleaned_row_holds():
    """A covariance that falls where the correlation matrix does not is a few coordinates' (massive or rogue):
    the raw row takes the cleaned row's verdict there, with both reasons; every other raw verdict stands."""
    raw = ("holds", "PR after / before = 0.100 [0.090, 0.110]")
    assert verdict.beside_cleaned(raw, ("holds", "cleaned 0.7")) == raw
    judged, reason = verdict.beside_cleaned(raw, ("does not hold", "correlation PR 1.0"))
    assert judged == "does not hold" and "0.100" in reason and "correlation PR 1.0" in reason
    assert verdict.beside_cleaned(raw, ("inconclusive", "straddles"))[0] == "inconclusive"
    # the paper's statistic that sees no fall keeps its own verdict, whatever the cleaned row says
    for word in ("does not hold", "inconclusive", "not testable here"):
        assert verdict.beside_cleaned((word, "raw"), ("holds", "cleaned")) == (word, "raw")
        assert verdict.beside_cleaned((word, "raw"), ("does not hold", "cleaned")) == (word, "raw")


def test_tco_criterion_on_persistent_and_transient_classes():
    def summary(code, seed):
        planted = synthetic.planted_binding(
            np.random.default_rng(seed), code, n_programs=120, n_depths=9, d=32, strength=5.0
        )
        return tco.score_token_states(planted, planted.written, gamma=np.arange(9) / 8)

    kept, lost, bag = summary("stable", 0), summary("per step", 1), summary("bag", 2)
    assert kept.stability.accuracy > 0.85 and verdict.judge_tco(kept)[0] == "holds"
    assert lost.control.accuracy > 0.85 and lost.stability.accuracy == pytest.approx(0.5, abs=0.08)
    assert verdict.judge_tco(lost)[0] == "does not hold"
    assert (
        verdict.judge_tco(bag)[0] == "not testable here"
    )  # no within-step decoding: the control is at chance
    assert verdict.judge_tco(kept, twin=kept)[0] == "does not hold"
    assert verdict.judge_tco(kept, twin=bag)[0] == "holds"


def test_wilson_interval_matches_its_formula_edge_cases():
    low, high = verdict.wilson_interval(0.5, 100)
    assert low == pytest.approx(0.4038, abs=1e-3) and high == pytest.approx(0.5962, abs=1e-3)
    assert verdict.wilson_interval(0.0, 10)[0] == 0.0
    with pytest.raises(lb.InvalidInputError):
        verdict.wilson_interval(0.5, 0)


def test_scaling_criterion():
    t = [transition.critical_depth(*_curve(0.42, a, noise=0.005)) for a in (0.15, 0.25, 0.35)]
    grows = [("s", 1e8, t[0]), ("m", 1e9, t[1]), ("l", 1e10, t[2])]
    assert verdict.judge_scaling(grows)[0] == "holds"
    assert verdict.judge_scaling(grows)[2] == pytest.approx(1.0)
    shrinks = [("s", 1e8, t[2]), ("m", 1e9, t[1]), ("l", 1e10, t[0])]
    assert verdict.judge_scaling(shrinks)[0] == "does not hold"
    flat = transition.critical_depth(*_curve(0.42, 0.0))
    small_only = [("s", 1e8, flat), ("m", 2e8, flat), ("e", 2e7, None)]
    assert verdict.judge_scaling(small_only)[0] == "not testable here"
    assert verdict.judge_scaling([*small_only, ("big", 7e9, flat)])[0] == "does not hold"


def test_parameter_counts():
    cap = synthetic.as_capture(np.zeros((3, 4, 8)) + 1.0, name="Qwen/Qwen2.5-1.5B")
    assert n_parameters(cap) == (1.5e9, True)
    cap = synthetic.as_capture(np.zeros((3, 4, 8)) + 1.0, name="random:smollm2-135m")
    assert n_parameters(cap) == (135e6, True)
    cap.provenance["n_parameters"] = 134_515_008
    assert n_parameters(cap) == (134_515_008.0, True)
    cap = synthetic.as_capture(np.zeros((3, 4, 8)) + 1.0, name="my-model")
    assert n_parameters(cap) == (12.0 * 2 * 64, False)


# --- end to end -------------------------------------------------------------------------------------------------


def test_measure_and_rows_on_a_planted_transition_and_its_null(planted, null):
    runs = {
        "planted": measure(planted, n_boot=60),
        "random:planted": measure(null, n_boot=60),
    }
    spreads = {"planted": band_spreads(planted, 0.42), "random:planted": band_spreads(null, 0.42)}
    table = study_verdict.runs_table(runs, results_dir=None, ladder=False, spreads=spreads)
    got = table.set_index(["claim", "model"])
    # every claim measured on both runs, each with the verdict its planted answer calls for
    expected = {
        "critical_depth": ("holds", "does not hold"),  # a jump at 0.42; none
        "omega_jump": ("holds", "does not hold"),
        "omega_jump_cleaned": ("holds", "does not hold"),
        "stays_liquid": ("does not hold", "holds"),  # one-hot tokens: Omega ~0.86 > 0.69 at d = 48
        "stays_liquid_cleaned": ("does not hold", "holds"),
        # after 0.42 all tokens are one-hot: one mode, and no spread, where the paper's bands would be two spikes
        # (power 100 %); the null's Gaussian tokens are tight enough for them too
        "bimodality": ("does not hold", "does not hold"),
        # one coordinate per token, drawn uniformly: the covariance stays isotropic (PR 48 before and after).
        # The plug-in PR fell here (its tr(C^2) carries E|x|^4, which one-hot tokens raise); the cross-prompt
        # PR reads the covariance: 1.01 [0.96, 1.07]
        "spectral_concentration": ("does not hold", "does not hold"),
        # one-hot tokens over all 48 coordinates keep the covariance isotropic in 47 of them (effective rank 47
        # of 48): bias-corrected, the ratio is 0.991 [0.968, 1.015], no fall to MAX_CONCENTRATION = 0.9 (the
        # uncorrected 0.905 [0.883, 0.926] was the sample's bias: one-hot tokens spread the eigenvalues unlike
        # Gaussian ones)
        "effective_rank": ("does not hold", "does not hold"),
        "mp_spikes": ("holds", "does not hold"),
        "attention_cooling": ("not testable here", "not testable here"),  # no attention statistics
    }
    for claim, (in_planted, in_null) in expected.items():
        assert (got.loc[(claim, "planted"), "verdict"], got.loc[(claim, "random:planted"), "verdict"]) == (
            in_planted,
            in_null,
        ), claim
    # the values behind them: where the jump is, and Omega of one-hot and of Gaussian tokens at d = 48
    row = got.loc[("critical_depth", "planted")]
    assert abs(row["value"] - 0.42) <= 0.03 and row["ci_low"] <= 0.42 <= row["ci_high"]
    assert got.loc[("stays_liquid", "planted"), "value"] == pytest.approx(1 - 1 / np.sqrt(48), abs=0.005)
    assert got.loc[("stays_liquid", "random:planted"), "value"] == pytest.approx(
        omega.gaussian_omega(48), abs=0.005
    )
    jump, flat = got.loc[("omega_jump", "planted")], got.loc[("omega_jump", "random:planted")]
    assert jump["ci_low"] > 0.2 and flat["ci_low"] < 0 < flat["ci_high"]
    # ratios after / before: 1 in the null; in the planted run the population's effective rank goes from 48
    # (isotropic Gaussian) to 47 (one-hot over 48 coordinates: isotropic off the mean), which the bias-corrected
    # interval covers, well clear of a 10 % fall; the PR does not fall either
    rank = got.loc[("effective_rank", "planted")]
    assert rank["ci_low"] <= 47 / 48 <= rank["ci_high"] and rank["ci_low"] > verdict.MAX_CONCENTRATION
    assert (
        got.loc[("spectral_concentration", "planted"), "ci_low"]
        < 1
        < got.loc[("spectral_concentration", "planted"), "ci_high"]
    )
    for claim in ("spectral_concentration", "effective_rank"):
        null_row = got.loc[(claim, "random:planted")]
        assert null_row["ci_low"] < 1 < null_row["ci_high"]
    assert got.loc[("mp_spikes", "random:planted"), "value"] == 0
    # every measured claim has a row for both runs, plus the large-model rows, all with a command
    assert {"planted", "random:planted"} <= set(table["model"])
    big = table[table["run"] == "not run"]
    assert len(big) >= 6 and (big["verdict"] == "not testable here").all()
    assert big["command"].str.startswith(("latentbook capture Qwen/Qwen2.5-32B", "python -c")).all()


def test_results_folder_captures_are_picked_up(tmp_path, planted, monkeypatch):
    results = tmp_path / "results"
    results.mkdir()
    planted.save(results / "planted.safetensors")
    (results / "broken.safetensors").write_bytes(b"not a capture")
    table = study_verdict.runs_table({}, results_dir=results, ladder=False, n_boot=60)
    rows = table[table["run"] == "results file"].set_index("claim")
    assert set(rows["model"]) == {"planted (planted.safetensors)"}
    assert rows.loc["critical_depth", "verdict"] == "holds"
    assert rows.loc["critical_depth", "command"].startswith("latentbook capture planted")
    assert len(table.attrs["problems"]) == 1 and "broken.safetensors" in table.attrs["problems"][0]

    (tmp_path / "_toc.yml").write_text("format: jb-book\n")
    (tmp_path / "book").mkdir()
    monkeypatch.delenv("LATENTBOOK_RESULTS", raising=False)
    assert paths.find_results_dir(tmp_path / "book") == results
    monkeypatch.setenv("LATENTBOOK_RESULTS", str(tmp_path / "elsewhere"))
    assert paths.find_results_dir(tmp_path / "book") == tmp_path / "elsewhere"


def _ladder_measurements(correlations: dict, partial: bool = True) -> dict:
    """A ladder's ``measurements.json`` with the partial correlations given (rho, interval, verdict), a plain one
    that predicts capability, and no TCO blocks; ``partial=False``: as written before the partial existed."""
    rungs = ["l1-d64", "l2-d64", "l4-d64", "l4-d128"]
    entries = {}
    for name, (rho, ci, word, sign) in correlations.items():
        level = {"rho": 0.9, "ci": [0.2, 1.0], "p_value": 0.0125, "n": 4, "verdict": "predicts capability"}
        entries[name] = {
            "label": f"{name} label",
            "expected_sign": sign,
            "claim": f"claim of {name}",
            "level": {**level, "reason": f"{name} plain reason"},
            "shift": {**level, "verdict": "inconclusive", "reason": f"{name} shift reason"},
        }
        if partial:
            entries[name]["partial"] = {
                "control": "log parameter count",
                "rho": rho,
                "ci": ci,
                "p_value": 0.0125,
                "p_holm": 0.0375,
                "n_tests": len(correlations),
                "n": 4,
                "verdict": word,
                "reason": f"{name} reason",
            }
    return {
        "rungs": rungs,
        "models": {r: {"trained": {}, "null": {}} for r in rungs},
        "correlations": entries,
    }


def test_ladder_rows_carry_the_rank_correlations_numbers_and_an_honest_row_otherwise(tmp_path):
    """Each diagnostic's row has the partial Spearman rho given size as its value inside its bootstrap interval
    (numbers read as numbers from ``measurements.json``) and its verdict, the ladder's words turned into the table's,
    whatever the plain rho says; without a partial: "inconclusive"; none measured: "not yet run"."""
    (row,) = ladder_rows.ladder_rows(tmp_path / "measurements.json")
    assert row.verdict == "not yet run" and row.claim == "reasoning_diagnostics"
    assert "measurements.json" in row.reason and row.command == report.V2_COMMAND  # the book's ladder

    planted = {  # name -> (rho, interval, the ladder's verdict, expected sign)
        "omega_rise": (0.2, [-1.0, 1.0], "inconclusive", 1),
        "bimodality": (0.8857142857142858, [0.19999999999999998, 1.0], "predicts capability", 1),
        "contraction": (0.5, [0.1234, 0.9876], "does not", -1),
        "spikes": (float("nan"), [float("nan"), float("nan")], "does not", 1),  # the same on every rung
    }
    path = tmp_path / "measurements.json"
    path.write_text(json.dumps(_ladder_measurements(planted)))
    got = ladder_rows.ladder_rows(path)
    assert [r.claim for r in got] == ["reasoning_diagnostics"] * 4  # no TCO blocks: no tco rows
    expected_words = {"omega_rise": "inconclusive", "bimodality": "holds", "contraction": "does not hold"}
    for r, (name, (rho, (low, high), _, sign)) in zip(got, planted.items()):
        if name == "spikes":
            assert (
                np.isnan(r.value)
                and np.isnan(r.ci_low)
                and np.isnan(r.ci_high)
                and r.verdict == "does not hold"
            )
            continue
        assert (r.value, r.ci_low, r.ci_high) == (rho, low, high), name
        assert r.ci_low <= r.value <= r.ci_high and r.verdict == expected_words[name]
        assert r.measured.startswith(
            f"{name} label predicts capability beyond size (claim of {name}): partial Spearman rho given log "
            f"parameters = {rho:+.2f} (n = 4, Holm-adjusted p = 0.037 over 4 diagnostics); plain Spearman rho = +0.90"
        )
        assert r.paper.endswith(f"(expected sign {'+' if sign > 0 else '-'})")
        assert r.reason == f"{name} reason; plain correlation: holds; trained-minus-null: inconclusive"
        assert r.run == "ladder"
        assert (
            r.model
            == "ladder of 4 trained Llamas (l1-d64, l2-d64, l4-d64, l4-d128) and their untrained nulls"
        )
    frame = pd.DataFrame([dataclasses.asdict(r) for r in got], columns=list(verdict.COLUMNS))
    assert len(study_verdict.interval_problems(frame)) == 0
    np.testing.assert_array_equal(
        study_verdict.to_csv_frame(frame)["estimate"], [p[0] for p in planted.values()]
    )

    path.write_text(json.dumps(_ladder_measurements(planted, partial=False)))
    stale = ladder_rows.ladder_rows(path)
    assert [r.verdict for r in stale] == ["inconclusive"] * 4 and all(np.isnan(r.value) for r in stale)
    assert all(r.reason.startswith(ladder_rows.NO_PARTIAL) and "recorrelate" in r.reason for r in stale)
    path.write_text(json.dumps(_ladder_measurements({"x": (0.1, [0.0, 0.2], "maybe", 1)})))
    with pytest.raises(lb.InvalidInputError, match="maybe"):
        ladder_rows.ladder_rows(path)
    path.write_text(json.dumps(_ladder_measurements({})))
    (row,) = ladder_rows.ladder_rows(path)
    assert row.verdict == "not yet run" and "no rows" in row.reason


def test_tco_rows_read_the_positive_control_and_the_twin():
    """``rows.tco_row`` (what ``claim_rows`` appends for a run with a ``tco`` summary): its value is the stability
    with an interval around it, the trained run judged against its twin's summary."""
    shape = dict(n_programs=120, n_depths=9, d=32, strength=5.0)
    stable = synthetic.planted_binding(np.random.default_rng(4), "stable", **shape)
    bag = synthetic.planted_binding(np.random.default_rng(5), "bag", **shape)
    kept, twin = tco.score_token_states(stable, stable.written), tco.score_token_states(bag, bag.written)
    run = types.SimpleNamespace(label="planted", parameters=1e6, model_name="planted")
    null = types.SimpleNamespace(label="random:planted", parameters=1e6, model_name="random:planted")
    row, twin_row = (
        rows.tco_row(run, "trained", kept, twin),
        rows.tco_row(null, "null: random weights", twin),
    )
    assert row.claim == "tco" and row.verdict == "holds" and row.value == kept.stability.accuracy
    assert twin_row.verdict == "not testable here" and "positive control is at chance" in twin_row.reason
    for r in (row, twin_row):
        assert r.ci_low <= r.value <= r.ci_high
    assert rows.tco_row(run, "trained", kept, kept).verdict == "does not hold"  # the twin is as stable


def test_scope_of_a_verdict_follows_the_papers_range():
    """The paper's range is the sizes it analysed (1.5B-30B+): below it every sized claim is out of range, the
    small-model claims included (its small models are the bottom of that suite); an encoder is another kind."""
    assert verdict.scope_of("omega_jump", 135e6) == verdict.BELOW_RANGE
    assert verdict.scope_of("omega_jump", 7.6e9) == verdict.IN_RANGE
    assert verdict.scope_of("critical_depth", verdict.SMALL_MODEL) == verdict.IN_RANGE  # 1.5B is in range
    assert verdict.scope_of("critical_depth", 0.999 * verdict.SMALL_MODEL) == verdict.BELOW_RANGE
    assert verdict.scope_of("stays_liquid", 135e6) == verdict.BELOW_RANGE
    assert verdict.scope_of("stays_liquid_cleaned", 268e6) == verdict.BELOW_RANGE
    assert verdict.scope_of("stays_liquid", 1.5e9) == verdict.IN_RANGE
    assert verdict.scope_of("stays_liquid", 0.999 * verdict.SMALL_END) == verdict.IN_RANGE
    assert verdict.scope_of("stays_liquid", verdict.SMALL_END) == verdict.ABOVE_RANGE
    assert (
        verdict.scope_of("stays_liquid", 32e9) == verdict.ABOVE_RANGE
    )  # a small-model claim on a large model
    assert verdict.scope_of("omega_jump", 7.6e9, encoder=True) == verdict.OTHER_KIND
    assert verdict.scope_of("stays_liquid", 23e6, encoder=True) == verdict.OTHER_KIND
    assert verdict.scope_of("attention_cooling", 23e6, encoder=True) == verdict.ANY_SIZE
    assert verdict.scope_of("attention_cooling", 135e6) == verdict.ANY_SIZE
    assert verdict.scope_of("mp_spikes", float("nan")) == verdict.SIZE_UNKNOWN
    row = verdict.Row("omega_jump", "m", "trained", 135e6, "", 0.0, 0.0, 0.0, "", "does not hold", "", "")
    assert row.scope == verdict.BELOW_RANGE
    with pytest.raises(lb.errors.InvalidInputError, match="scope"):
        verdict.Row("omega_jump", "m", "trained", 1e9, "", 0.0, 0.0, 0.0, "", "holds", "", "", "big")


def test_scope_counts_never_count_a_small_models_large_model_claim_against_the_paper():
    from latentbook.study.verdict_table import scope_counts

    rows = [
        verdict.Row("omega_jump", "small", "trained", 135e6, "", 0.0, 0.0, 0.0, "", "does not hold", "", ""),
        verdict.Row("omega_jump", "big", "trained", 7e9, "", 0.0, 0.0, 0.0, "", "holds", "", ""),
        verdict.Row("attention_cooling", "small", "trained", 135e6, "", 0.0, 0.0, 0.0, "", "holds", "", ""),
        verdict.Row(
            "omega_jump", "random:small", "null: random weights", 135e6, "", 0, 0, 0, "", "holds", "", ""
        ),
    ]
    counts = scope_counts(pd.DataFrame([dataclasses.asdict(r) for r in rows]))
    assert counts.loc[verdict.BELOW_RANGE, "does not hold"] == 1
    assert counts.loc[verdict.IN_RANGE, "holds"] == 1 and counts.loc[verdict.IN_RANGE, "does not hold"] == 0
    assert counts.loc[verdict.ANY_SIZE, "holds"] == 1
    assert int(counts.to_numpy().sum()) == 3  # the null run is not counted


def test_transition_words_say_where_how_large_or_why_not():
    from latentbook.study.verdict_table import transition_words

    at_paper = transition.critical_depth(*_curve(0.42, 0.21))
    words = transition_words(at_paper)
    assert words.startswith(f"a transition at gamma_c = {at_paper.gamma_c:.2f} [") and "jump +0.2" in words
    flat = transition.critical_depth(*_curve(0.42, 0.0))
    assert transition_words(flat) == f"no transition ({flat.reason})"
    assert transition_words(None) == "too few depths for a fit"


def test_a_glance_cell_shared_by_rows_that_disagree_says_so():
    """The ladder has one ``reasoning_diagnostics`` row per diagnostic under one model: the table at a glance
    shows their common verdict, or "mixed" with the counts, never the first row's word for all of them."""
    from latentbook.study.verdict_table import MIXED, cell_verdict, summary

    table = pd.DataFrame(
        {
            "claim": ["reasoning_diagnostics"] * 3 + ["omega_jump"],
            "model": ["ladder"] * 3 + ["smollm2-135m"],
            "verdict": ["inconclusive", "holds", "inconclusive", "does not hold"],
        }
    )
    glance = summary(table)
    assert glance.loc["reasoning_diagnostics", "ladder"] == f"{MIXED}: 2 inconclusive, 1 holds"
    assert glance.loc["omega_jump", "smollm2-135m"] == "does not hold"
    assert cell_verdict(["holds", "holds"]) == "holds"
