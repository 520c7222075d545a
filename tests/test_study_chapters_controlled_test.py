"""Chapter 7's tables of the seeded ladder (``study.chapters.controlled_test_tables``) on a synthetic
``measurements.json``: two architectures of two seeds, each with known capability and TCO scores."""

import numpy as np
import pandas as pd
import pytest

from latentbook.analysis import verdict
from latentbook.analysis.tco import TCOScores
from latentbook.study.chapters import controlled_test_tables as ct


def _rate(accuracy, n=800):
    low, high = verdict.wilson_interval(accuracy, n)
    return {"accuracy": accuracy, "ci": [low, high], "n": n}


def _scores(control, stability, bag=0.55, first=0.5):
    return {
        "control": _rate(control),
        "stability": _rate(stability),
        "control_bag": _rate(bag),
        "control_first": _rate(first),
        "stability_bag": _rate(bag),
        "stability_first": _rate(first),
        "control_kway": _rate(control - 0.1),
        "stability_kway": _rate(stability - 0.1),
        "control_kway_bag": _rate(0.4),
        "control_kway_first": _rate(0.35),
        "depths": [3],
        "best_depth_control": control,
    }


def _entry(layers, parameters, accuracy, tco):
    return {
        "n_layers": layers,
        "d_model": 64,
        "n_parameters": parameters,
        "capability": {
            "mean": float(np.mean(accuracy)),
            "accuracy": {str(h + 1): a for h, a in enumerate(accuracy)},
            "guess_floor": {str(h + 1): 0.4 for h in range(len(accuracy))},
            "first_value_floor": {str(h + 1): 0.42 for h in range(len(accuracy))},
        },
        "tco": {"scores": tco},
    }


# (name, layers, parameters, accuracy by hops, control, stability): l4-d64-s1 answers but its value does not
# reach the hops in the query's code; l2-d64-s1 cannot even decode it within the query step
MODELS = [
    ("l2-d64-s0", 2, 96_000, [0.9, 0.6, 0.5, 0.45], 0.75, 0.85),
    ("l2-d64-s1", 2, 96_000, [0.7, 0.5, 0.45, 0.4], 0.56, 0.55),
    ("l4-d64-s0", 4, 178_000, [1.0, 0.98, 0.97, 0.93], 0.95, 0.98),
    ("l4-d64-s1", 4, 178_000, [0.99, 0.95, 0.9, 0.86], 0.95, 0.54),
]


@pytest.fixture
def measurements():
    models = {
        name: {
            "trained": _entry(layers, p, acc, _scores(control, stability)),
            "null": _entry(layers, p, [0.4] * 4, _scores(0.52, 0.51)),
        }
        for name, layers, p, acc, control, stability in MODELS
    }
    logs = {
        name: {
            "stages": [{"step": 0, "hops": 1}, {"step": 900, "hops": 1 + layers // 2}],
            "seconds": 60.0 * layers,
        }
        for name, layers, *_ in MODELS
    }
    return {"rungs": [name for name, *_ in MODELS], "models": models}, logs


def test_one_row_per_model_with_its_seed_curriculum_and_accuracy_by_hops(measurements):
    m, logs = measurements
    table = ct.model_table(m, logs).set_index("model")
    assert list(table.index) == m["rungs"]
    assert table.loc["l4-d64-s1", "seed"] == 1 and table.loc["l4-d64-s1", "architecture"] == "l4-d64"
    assert table.loc["l4-d64-s1", "longest chain trained on"] == 3
    assert table.loc["l4-d64-s1", "train minutes"] == pytest.approx(4.0)
    assert table.loc["l2-d64-s1", "capability"] == pytest.approx(np.mean([0.7, 0.5, 0.45, 0.4]))
    assert table.loc["l2-d64-s1", "3-hop"] == 0.45


def test_the_seeds_of_an_architecture_are_pooled_and_their_spread_kept(measurements):
    m, logs = measurements
    models = ct.model_table(m, logs)
    pooled = ct.architecture_table(models)
    assert list(pooled.index) == ["l2-d64", "l4-d64"]  # by size
    row = pooled.loc["l2-d64"]
    caps = [np.mean(acc) for name, _, _, acc, *_ in MODELS if name.startswith("l2-d64")]
    assert row.seeds == 2 and row.parameters == 96_000
    assert (row.capability, row.lowest, row.highest) == pytest.approx((np.mean(caps), min(caps), max(caps)))
    assert row["1-hop"] == pytest.approx(0.8) and row["train minutes"] == pytest.approx(2.0)
    assert ct.seed_spread(models) == pytest.approx(max(caps) - min(caps))  # the l2 seeds differ most


def test_the_tco_table_judges_every_model_against_its_null(measurements):
    m, _ = measurements
    tco = ct.tco_table(m).set_index("model")
    for name, *_, control, stability in MODELS:
        scores = TCOScores.from_dict(m["models"][name]["trained"]["tco"]["scores"])
        null = TCOScores.from_dict(m["models"][name]["null"]["tco"]["scores"])
        assert tco.loc[name, "verdict"] == verdict.judge_tco(scores, null)[0]
        assert tco.loc[name, "null alone"] == verdict.judge_tco(null)[0]
        assert (tco.loc[name, "control"], tco.loc[name, "stability"]) == (control, stability)
        assert tco.loc[name, "bar (bag, first value)"] == 0.55
    assert tco.loc["l4-d64-s0", "verdict"] == "holds"
    assert tco.loc["l4-d64-s1", "verdict"] == "does not hold"  # the control passes, stability does not
    assert tco.loc["l2-d64-s1", "verdict"] == "inconclusive"  # no positive control
    counts = ct.tco_counts(ct.tco_table(m))
    assert counts.loc["l4-d64"].tolist() == [1, 1, 0] and counts.loc["l2-d64"].tolist() == [1, 0, 1]
    assert list(counts.columns) == ["holds", "does not hold", "inconclusive"]


def test_the_partial_table_carries_the_correlations_numbers():
    c = {
        "stability": {
            "label": "TCO stability",
            "expected_sign": 1,
            "level": {"rho": 0.5, "p_value": 0.04, "verdict": "predicts capability"},
            "partial": {
                "rho": 0.2,
                "ci": [-0.1, 0.45],
                "p_value": 0.2,
                "p_holm": 0.8,
                "verdict": "inconclusive",
            },
            "shift": {"verdict": "inconclusive"},
        },
        "contraction": {
            "label": "q",
            "expected_sign": -1,
            "level": {"rho": -0.7, "p_value": 0.01, "verdict": "predicts capability"},
            "partial": {"rho": -0.6, "ci": [-0.8, -0.3], "p_value": 0.002, "p_holm": 0.01, "verdict": "x"},
            "shift": {"verdict": "does not"},
        },
    }
    table = ct.partial_table(c)
    assert isinstance(table, pd.DataFrame) and list(table.diagnostic) == ["TCO stability", "q"]
    row = table.iloc[1]
    assert row["expected sign"] == "-" and row["95% CI"] == "[-0.80, -0.30]"
    assert (row.rho, row.p, row["partial rho | size"], row["Holm p"]) == (-0.7, 0.01, -0.6, 0.01)
    assert (row.verdict, row["plain verdict"], row["shift verdict"]) == (
        "x",
        "predicts capability",
        "does not",
    )


def test_a_seeded_ladder_gets_one_tco_row_per_architecture_agreeing_seeds_or_inconclusive(measurements):
    from latentbook.study import ladder_rows

    m, _ = measurements
    rows = {row.model: row for row in ladder_rows.tco_rows(m)}
    assert set(rows) == {"ladder:l2-d64 (2 seeds)", "ladder:l4-d64 (2 seeds)"}
    mixed = rows["ladder:l4-d64 (2 seeds)"]  # one seed holds, the other does not: the seeds disagree
    assert mixed.verdict == "inconclusive" and "disagree" in mixed.reason
    assert "l4-d64-s0: holds" in mixed.reason and "l4-d64-s1: does not hold" in mixed.reason
    assert mixed.value == pytest.approx((0.98 + 0.54) / 2)
    s0, s1 = (m["models"][f"l4-d64-s{k}"]["trained"]["tco"]["scores"]["stability"]["ci"] for k in (0, 1))
    assert (mixed.ci_low, mixed.ci_high) == (min(s0[0], s1[0]), max(s0[1], s1[1]))
    assert mixed.parameters == 178_000 and mixed.claim == "tco"
    for k in (0, 1):  # make both seeds of l2-d64 pass
        m["models"][f"l2-d64-s{k}"]["trained"]["tco"]["scores"] = _scores(0.9, 0.9)
    agreed = {row.model: row for row in ladder_rows.tco_rows(m)}["ladder:l2-d64 (2 seeds)"]
    assert agreed.verdict == "holds" and agreed.reason.startswith("all 2 seeds agree")
    unseeded = {"rungs": ["l4-d64"], "models": {"l4-d64": m["models"]["l4-d64-s0"]}}
    (row,) = ladder_rows.tco_rows(unseeded)  # ladder v1: one row per rung, as before
    assert row.model == "ladder:l4-d64" and row.verdict == "holds"


def test_the_capability_figure_draws_the_mean_of_each_architectures_seeds_and_select_keeps_some(measurements):
    import matplotlib

    matplotlib.use("Agg")
    from latentbook.errors import InvalidInputError
    from latentbook.ladder import figures, report

    m, _ = measurements
    ax = figures.capability_by_architecture(m).axes[0]
    means = {line.get_label(): line.get_ydata() for line in ax.get_lines() if "seeds" in line.get_label()}
    assert set(means) == {"l2-d64 (2 seeds)", "l4-d64 (2 seeds)"}
    assert means["l4-d64 (2 seeds)"] == pytest.approx([0.995, 0.965, 0.935, 0.895])
    dots = [line for line in ax.get_lines() if line.get_marker() == "." and line.get_label().startswith("_")]
    assert len(dots) == 4  # one per seed
    some = report.select(m, ["l4-d64-s1", "l2-d64-s0"])
    assert some["rungs"] == ["l4-d64-s1", "l2-d64-s0"] and set(some["models"]) == {"l4-d64-s1", "l2-d64-s0"}
    assert some["models"]["l2-d64-s0"] is m["models"]["l2-d64-s0"] and len(m["rungs"]) == 4
    with pytest.raises(InvalidInputError, match="l9-d64-s0"):
        report.select(m, ["l9-d64-s0"])


def test_the_details_table_has_a_row_per_model_and_null_with_each_diagnostic():
    def entry(n_depths, gamma_c, has_transition, spikes, q):
        transition = {"gamma_c": gamma_c, "ci": [0.3, 0.5], "has_transition": has_transition}
        return {
            "omega": {
                "gamma": list(np.linspace(0, 1, n_depths)),
                "rise": {"value": 0.012, "ci": [0.004, 0.02]},
                "bimodality": {"verdict": "unimodal"},
                "transition": transition,
            },
            "spikes": {"n_spikes": [3, spikes], "bound": 7},
            "contraction": {"q": q, "ci": [q - 0.01, q + 0.01]},
        }

    m = {
        "rungs": ["l8-d64-s0", "l2-d64-s0"],
        "models": {
            "l8-d64-s0": {"trained": entry(9, 0.42, True, 5, 0.8), "null": entry(9, 0.6, False, 12, 0.97)},
            "l2-d64-s0": {"trained": entry(3, None, False, 2, 0.9), "null": entry(3, None, False, 1, 1.0)},
        },
    }
    table = ct.diagnostic_details(m).set_index(["model", "kind"])
    assert len(table) == 4
    row = table.loc[("l8-d64-s0", "trained")]
    assert (row.depths, row.transition, row.gamma_c) == (9, "yes", "0.42 [0.30, 0.50]")
    assert (row["spikes (last depth)"], row["k-1"], row.q, row["q 95% CI"]) == (5, 7, 0.8, "[0.790, 0.810]")
    assert row["rise 95% CI"] == "[+0.004, +0.020]" and row["bimodality (last depth)"] == "unimodal"
    assert table.loc[("l8-d64-s0", "null"), "transition"] == "no"
    assert table.loc[("l2-d64-s0", "null"), "transition"] == "not testable"
    assert table.loc[("l2-d64-s0", "null"), "gamma_c"] == "-"


def test_a_span_prints_its_ends_or_the_one_value_they_round_to():
    assert ct.span_text(pd.Series([0.5597, 0.61, 0.5601])) == "0.560 to 0.610"
    assert ct.span_text(pd.Series([0.55971, 0.55974])) == "0.560"
    assert ct.span_text(pd.Series([2.0, 7.0]), digits=0) == "2 to 7"


def test_the_capability_scatter_colours_by_architecture_and_titles_the_partial_rho(measurements):
    import matplotlib

    matplotlib.use("Agg")
    from latentbook.ladder import figures, report

    m, _ = measurements
    for k, name in enumerate(m["rungs"]):
        for kind, shift in (("trained", 0.0), ("null", 1.0)):
            m["models"][name][kind].update(
                omega={"rise": {"value": 0.01 * k + shift}, "bimodality": {"coefficient": 0.3 + shift}},
                spikes={"n_spikes": [0, k]},
                contraction={"q": 0.9 - 0.1 * k},
            )
    m["correlations"] = report.correlations(m)
    fig = figures.capability_scatter(m)
    panels = [ax for ax in fig.axes if ax.axison]
    assert len(panels) == len(report.DIAGNOSTICS)
    contraction = panels[list(report.DIAGNOSTICS).index("contraction")]
    trained, null = contraction.collections[0], contraction.collections[1]  # l2-d64's two seeds
    points = np.asarray(trained.get_offsets())
    assert points[:, 0].tolist() == pytest.approx([0.9, 0.8])
    assert points[:, 1].tolist() == pytest.approx([np.mean(MODELS[0][3]), np.mean(MODELS[1][3])])
    assert np.asarray(null.get_offsets())[:, 0].tolist() == pytest.approx([0.9, 0.8])
    colours = [tuple(np.round(c.get_facecolor()[0], 3)) for c in contraction.collections]
    assert colours[0] == colours[1] != colours[2] == colours[3]  # one colour per architecture
    partial = m["correlations"]["contraction"]["partial"]
    assert f"partial given size {partial['rho']:+.2f}" in contraction.get_title()
    legend = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert legend == ["l2-d64", "l4-d64", "trained", "untrained null"]


def test_the_ladder_findings_name_each_estimate_and_what_predicts(measurements):
    m, _ = measurements

    def partial(rho, ci, p_holm, verdict):
        return {"partial": {"rho": rho, "ci": ci, "p_holm": p_holm, "verdict": verdict}}

    m["correlations"] = {
        "stability": partial(0.62, [0.03, 0.91], 0.04, "predicts capability"),
        "spikes": partial(-0.56, [-0.86, -0.21], 0.068, "inconclusive"),
        "bimodality": {"level": {}},  # no partial (fewer than four rungs when measured): left out
    }
    found = ct.ladder_findings(m)
    assert found["across"] == (
        "TCO stability +0.62 [+0.03, +0.91] (Holm p 0.040, predicts capability); "
        "spikes above MP -0.56 [-0.86, -0.21] (Holm p 0.068, inconclusive)"
    )
    assert found["predicts"] == "TCO stability"
    assert (found["along"], found["tracks"]) == ("no checkpoints measured", "none")
    m["correlations"]["stability"]["partial"]["verdict"] = "does not"
    assert ct.ladder_findings(m)["predicts"] == "none"
    for name, depths in zip(m["rungs"], (9, 9, verdict.MIN_DEPTHS - 1, verdict.MIN_DEPTHS)):
        m["models"][name]["trained"]["omega"] = {"gamma": list(np.linspace(0, 1, depths))}
    assert ct.ladder_findings(m)["critical_depth"] == (
        f"1 of its 4 models have the {verdict.MIN_DEPTHS} depths a critical-depth fit needs"
    )
    m["models"][m["rungs"][3]]["trained"]["omega"]["gamma"].pop()
    assert ct.ladder_findings(m)["critical_depth"].endswith(f"(the deepest has {verdict.MIN_DEPTHS - 1})")


def test_the_ladder_findings_along_training_name_the_architecture(measurements, monkeypatch):
    from latentbook.ladder import along_training

    m, _ = measurements
    along = {
        "l4-d64": {
            "stability": {"rho": 0.61, "ci": [0.26, 0.85], "p_holm": 0.007, "verdict": "tracks capability"},
            "contraction": {"rho": -0.25, "ci": [-0.62, 0.2], "p_holm": 1.0, "verdict": "inconclusive"},
        }
    }
    monkeypatch.setattr(along_training, "training_correlations", lambda _: along)
    found = ct.ladder_findings(m)
    assert found["along"] == (
        "l4-d64: TCO stability +0.61 [+0.26, +0.85] (Holm p 0.007, tracks capability); "
        "l4-d64: contraction factor q -0.25 [-0.62, +0.20] (Holm p 1.000, inconclusive)"
    )
    assert found["tracks"] == "TCO stability (l4-d64)" and found["across"] == "none measured"


def test_a_seeded_ladders_diagnostic_rows_name_its_architectures_and_seeds(measurements):
    from latentbook.ladder import report
    from latentbook.study import ladder_rows

    m, _ = measurements
    for k, name in enumerate(m["rungs"]):
        for kind in ("trained", "null"):
            m["models"][name][kind].update(
                omega={"rise": {"value": 0.01 * k}, "bimodality": {"coefficient": 0.3}},
                spikes={"n_spikes": [0, k]},
                contraction={"q": 0.9 - 0.1 * k},
            )
    m["correlations"] = report.correlations(m)
    rows = ladder_rows.diagnostic_rows(m)
    assert {row.model for row in rows} == {
        "ladder of 4 trained Llamas (2 architectures x 2 seeds) and their untrained nulls"
    }
    m["rungs"] = m["rungs"][:3]
    m["correlations"] = report.correlations(m)
    assert ladder_rows.diagnostic_rows(m)[0].model == (
        "ladder of 3 trained Llamas (l2-d64 x 2 seeds, l4-d64 x 1 seeds) and their untrained nulls"
    )


def test_the_clustered_verdict_leads_the_findings_the_rows_and_its_table(measurements):
    """Where ``correlations`` has a ``clustered`` entry (a seeded ladder), the verdict chapter's words, the ladder's
    rows and chapter 7's table carry it, not the partial rho that counts models as independent."""
    from latentbook.study import ladder_rows

    m, _ = measurements
    clustered = {
        "controls": "log parameters and the positive control",
        "rho": 0.15,
        "ci": [-0.36, 0.37],
        "rho_within": -0.01,
        "p_within": 0.98,
        "p_holm": 1.0,
        "n_tests": 5,
        "n": 18,
        "n_clusters": 6,
        "verdict": "inconclusive",
        "reason": "why",
    }
    partial = {"rho": 0.62, "ci": [0.03, 0.91], "p_holm": 0.04, "n": 18, "verdict": "predicts capability"}
    m["correlations"] = {
        "stability": {
            "label": "TCO stability",
            "claim": "claim 5",
            "expected_sign": 1,
            "level": {"rho": 0.7, "n": 18, "p_value": 0.001, "verdict": "predicts capability"},
            "shift": {"verdict": "inconclusive"},
            "partial": partial,
            "clustered": clustered,
        }
    }
    found = ct.ladder_findings(m)
    assert found["across"] == "TCO stability +0.15 [-0.36, +0.37] (Holm p 1.000, inconclusive)"
    assert found["predicts"] == "none"
    (row,) = ladder_rows.diagnostic_rows(m)
    assert (row.value, row.ci_low, row.ci_high, row.verdict) == (0.15, -0.36, 0.37, "inconclusive")
    assert "beyond log parameters and the positive control" in row.measured
    assert "would be +0.62 (Holm p 0.040): holds" in row.reason
    table = ct.clustered_table(m["correlations"])
    assert table.iloc[0].to_dict() == {
        "diagnostic": "TCO stability",
        "given": "log parameters and the positive control",
        "partial rho": 0.15,
        "95% CI (architectures)": "[-0.36, +0.37]",
        "within rho": -0.01,
        "within p": 0.98,
        "Holm p": 1.0,
        "verdict": "inconclusive",
    }
    del m["correlations"]["stability"]["clustered"]
    assert ct.ladder_findings(m)["predicts"] == "TCO stability"
    assert ct.clustered_table(m["correlations"]).empty


def test_the_chapter_says_how_many_models_older_code_measured(measurements):
    from latentbook.ladder.diagnostics import diagnostics_hash
    from latentbook.ladder.report import V2_COMMAND

    m, _ = measurements
    for entry in m["models"].values():
        entry["measured_by"] = diagnostics_hash()
    m["models"]["l4-d64-s0"]["checkpoints"] = {"500": {"measured_by": diagnostics_hash()}}
    assert ct.measured_by(m) == "all 5 models and checkpoints were measured by the code that builds this page"
    m["models"]["l2-d64-s1"]["measured_by"] = "older code"
    m["models"]["l4-d64-s0"]["checkpoints"]["500"]["measured_by"] = "older code"
    clause = ct.measured_by(m)
    assert (
        clause.startswith("2 of the 5 models and checkpoints were measured by older code")
        and V2_COMMAND in clause
    )
    for entry in m["models"].values():
        entry["measured_by"] = "older code"
    assert ct.measured_by(m).startswith("all 5 models and checkpoints were measured by older code")
