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


# --- the numbers each section of the chapter glues --------------------------------------------------------------


def _with_intervals(m, n=512):
    """Wilson intervals of every accuracy and the programs per hop, as ``measure_ladder`` records them."""
    for entry in m["models"].values():
        for kind in ("trained", "null"):
            c = entry[kind]["capability"]
            c["ci"] = {h: list(verdict.wilson_interval(a, n)) for h, a in c["accuracy"].items()}
            c["n_per_hop"] = n
    return m


def test_the_ladder_and_task_numbers_count_models_seeds_names_and_baselines(measurements):
    from latentbook.ladder.task import TaskSpec

    m, logs = measurements
    architectures = ct.architecture_table(ct.model_table(m, logs))
    numbers = ct.ladder_numbers(m, architectures)
    assert (numbers["n_models"], numbers["n_architectures"], numbers["n_seeds"]) == (4, 2, 2)
    assert numbers["measured_by"] == ct.measured_by(m)
    task = ct.task_numbers(TaskSpec(n_heldout=20), m)
    assert (task["n_statements"], task["k"], task["max_hops"]) == (6, 8, 4)
    assert (task["n_train_names"], task["n_heldout_names"]) == (76, 20)
    assert [task[f"floor_{h}"] for h in range(1, 5)] == [0.4] * 4
    assert [task[f"first_{h}"] for h in range(1, 5)] == [0.42] * 4


def test_the_training_numbers_add_up_the_hours_and_read_the_checkpoint_stride(measurements):
    from latentbook.ladder.train import TrainConfig

    m, logs = measurements
    models = ct.model_table(m, logs)
    along = pd.DataFrame({"architecture": ["l8-d64", "l4-d64", "l8-d64"], "step": [500, 1000, 500]})
    numbers = ct.training_numbers(TrainConfig(steps=3000, lr=2e-3), models, along, [500, 1000, 1500])
    assert (numbers["steps"], numbers["batch"], numbers["lr"], numbers["gate"]) == (3000, 64, 2e-3, 0.9)
    assert numbers["total_hours"] == pytest.approx((2 + 2 + 4 + 4) / 60)
    assert numbers["longest_hours"] == pytest.approx(4 / 60)
    assert numbers["checkpoint_every"] == 500 and numbers["checkpointed"] == "l4-d64, l8-d64"


def test_a_model_binds_where_its_whole_interval_clears_both_baselines(measurements):
    m, logs = measurements
    _with_intervals(m)
    assert all(ct.beats_baselines(m, "l4-d64-s0").values())
    # 0.45 of 512 at 3 hops: its interval reaches below the first-value baseline of 0.42
    assert ct.beats_baselines(m, "l2-d64-s1") == {"1": True, "2": True, "3": False, "4": False}
    # above guessing (0.40) but not above answering the first value (0.42): binds nothing
    m["models"]["l2-d64-s1"]["trained"]["capability"]["ci"] = {h: [0.41, 0.6] for h in "1234"}
    assert not any(ct.beats_baselines(m, "l2-d64-s1").values())
    models = ct.model_table(m, logs)
    numbers = ct.capability_numbers(m, models, ct.architecture_table(models))
    assert (numbers["n_binding"], numbers["n_fails3"]) == (3, 1)
    assert numbers["smallest"] == "l2-d64" and numbers["smallest_acc3"] == pytest.approx((0.5 + 0.45) / 2)
    assert numbers["best"] == "l4-d64-s0" and (numbers["best_acc1"], numbers["best_acc3"]) == (1.0, 0.97)
    lo, hi = verdict.wilson_interval(0.97, 512)
    assert (numbers["best_acc3_lo"], numbers["best_acc3_hi"]) == pytest.approx((lo, hi))
    assert numbers["best_null_acc3"] == 0.4 and numbers["n_per_hop"] == 512
    caps = [np.mean(acc) for name, _, _, acc, *_ in MODELS if name.startswith("l2-d64")]
    assert numbers["seed_spread"] == pytest.approx(max(caps) - min(caps))
    assert numbers["seed_spread_architecture"] == "l2-d64" and numbers["reached90"] == "reached"
    m["models"]["l4-d64-s0"]["trained"]["capability"]["accuracy"]["3"] = 0.85
    assert ct.capability_numbers(m, models, ct.architecture_table(models))["reached90"] == "did not reach"


def test_the_diagnostic_numbers_count_transitions_bimodality_and_spikes_within_the_bound():
    details = pd.DataFrame(
        {
            "depths": [9, 9, 3, 12],
            "transition": ["no", "not testable", "not testable", "yes"],
            "bimodality (last depth)": ["bimodal", "unimodal", "unimodal", "bimodal"],
            "spikes (last depth)": [3, 7, 8, 12],
            "k-1": [7, 7, 7, 7],
        }
    )
    numbers = ct.diagnostic_numbers(details)
    assert (numbers["n_transitions"], numbers["n_testable"], numbers["n_measured"]) == (1, 2, 4)
    assert (numbers["max_depths"], numbers["min_depths"]) == (12, verdict.MIN_DEPTHS)
    assert (numbers["n_bimodal"], numbers["n_within_bound"]) == (2, 2)


def test_the_tco_numbers_count_verdicts_and_architectures_whose_seeds_agree(measurements):
    from latentbook.analysis import tco

    m, _ = measurements
    for name in m["rungs"]:  # nulls whose control fails alone, but one that passes it
        passes = name == "l2-d64-s1"
        m["models"][name]["null"]["tco"]["scores"] = _scores(0.9, 0.9) if passes else _scores(0.56, 0.55)
    numbers = ct.tco_numbers(ct.tco_table(m))
    assert (numbers["tco_n_holds"], numbers["tco_n_not"], numbers["tco_n_inconclusive"]) == (2, 1, 1)
    assert (numbers["tco_not_list"], numbers["tco_inconclusive_list"]) == ("l4-d64-s1", "l2-d64-s1")
    assert numbers["tco_n_agree"] == 0  # both architectures split
    assert numbers["tco_n_null_pass"] == 1
    m["models"]["l2-d64-s0"]["null"]["tco"]["scores"] = _scores(0.5, 0.5)  # a control at chance: not testable
    assert ct.tco_numbers(ct.tco_table(m))["tco_n_null_pass"] == 1
    assert numbers["tco_bar"] == "0.550" and numbers["two_way_chance"] == tco.TWO_WAY_CHANCE
    assert (numbers["tco_margin"], numbers["tco_folds"]) == (verdict.TCO_MARGIN, tco.N_FOLDS)
    m["models"]["l4-d64-s1"]["trained"]["tco"]["scores"] = _scores(0.95, 0.98)
    numbers = ct.tco_numbers(ct.tco_table(m))
    assert numbers["tco_n_agree"] == 1 and numbers["tco_not_list"] == "none"


def test_the_partial_numbers_take_sizes_rank_correlation_and_count_each_verdict(measurements):
    from scipy.stats import spearmanr

    m, logs = measurements
    models = ct.model_table(m, logs)
    verdicts = pd.DataFrame(
        {
            "diagnostic": ["rise", "spikes", "stability"],
            "verdict": ["inconclusive", "does not", "predicts capability"],
            "plain verdict": ["predicts capability", "does not", "predicts capability"],
        }
    )
    numbers = ct.partial_numbers(models, verdicts)
    expected = spearmanr(models["capability"], np.log(models["parameters"])).statistic
    assert numbers["size_rho"] == pytest.approx(expected) and numbers["size_rho"] > 0
    assert (numbers["n_diagnostics"], numbers["n_predicts"], numbers["n_does_not"]) == (3, 1, 1)
    assert numbers["n_inconclusive"] == 1 and numbers["predicts_partial_list"] == "stability"
    assert numbers["predicts_level_list"] == "rise; stability"
    verdicts["verdict"] = "inconclusive"
    assert ct.partial_numbers(models, verdicts)["predicts_partial_list"] == "none"


def test_the_clustered_numbers_count_resamples_draws_and_the_smallest_holm_p(measurements):
    from scipy.stats import spearmanr

    m, logs = measurements

    def clustered(label, p_holm, verdict_word, exact=True):
        k = {"controls": "log parameters", "rho": 0.1, "ci": [-0.2, 0.4], "rho_within": 0.0, "p_within": 0.5}
        k |= {"p_holm": p_holm, "verdict": verdict_word, "n_clusters": 2, "n_permutations": 4}
        return {"label": label, "clustered": k | {"exact_interval": exact}}

    m["correlations"] = {
        "spikes": clustered("spikes", 0.6, "inconclusive"),
        "contraction": clustered("q", 0.2, "inconclusive", exact=False),
        "stability": clustered("TCO stability", 0.01, "predicts capability"),
        "rise": {"label": "rise"},  # no clustered test: left out
    }
    numbers = ct.clustered_numbers(m, ct.clustered_table(m["correlations"]))
    assert (numbers["n_within_orders"], numbers["n_resamples"], numbers["n_draws"]) == (4, 3, 4)
    assert numbers["n_inexact_intervals"] == 1
    assert (numbers["n_clustered_predicts"], numbers["n_clustered_inconclusive"]) == (1, 2)
    assert numbers["clustered_predicts_list"] == "TCO stability"
    assert (numbers["min_within_holm"], numbers["min_within_holm_name"]) == (0.01, "TCO stability")
    capability = ct.model_table(m, logs)["capability"]
    control = [control for *_, control, _ in MODELS]
    assert numbers["control_capability_rho"] == pytest.approx(spearmanr(capability, control).statistic)


def test_the_along_numbers_count_checkpoints_changes_and_what_tracks():
    along = pd.DataFrame({"step": range(12)})
    table = pd.DataFrame(
        {
            "architecture": ["l4-d64", "l4-d64", "l8-d64"],
            "diagnostic": ["q", "spikes", "TCO stability"],
            "changes": [9, 9, 9],
            "verdict": ["tracks capability", "does not", "tracks capability"],
        }
    )
    numbers = ct.along_numbers(along, table)
    assert (numbers["n_checkpoints"], numbers["n_changes"], numbers["n_tests"]) == (12, 9, 3)
    assert (numbers["n_tracks"], numbers["n_does_not"], numbers["n_inconclusive"]) == (2, 1, 0)
    assert numbers["tracks_list"] == "l4-d64: q; l8-d64: TCO stability"
    table["verdict"] = "inconclusive"
    assert ct.along_numbers(along, table)["tracks_list"] == "none"


def test_the_landmark_numbers_count_what_is_found_and_where_the_lens_converges():
    from latentbook.analysis import transition
    from latentbook.study import ladder_landmarks

    def landmarks(id_peak, onset, lens_gamma):
        return [
            {"landmark": "ID peak (Gride)", "found": id_peak, "gamma": 0.5 if id_peak else np.nan},
            {"landmark": "massive onset", "found": onset, "gamma": 0.3 if onset else np.nan},
            {"landmark": "lens convergence", "found": lens_gamma is not None, "gamma": lens_gamma or np.nan},
        ]

    def model(depths, trained, untrained):
        return {
            "trained": {"n_depths": depths, "landmarks": trained},
            "init": {"n_depths": depths, "landmarks": untrained},
        }

    record = {
        "date": "2026-12-05T10:00:00",
        "models": {
            "l2-d64-s0": model(3, landmarks(False, False, 1.0), landmarks(True, False, None)),
            "l8-d64-s0": model(9, landmarks(True, False, 0.875), landmarks(True, False, None)),
            "l8-d64-s1": model(9, landmarks(False, False, 0.75), landmarks(True, False, None)),
            "l8-d64-s2": model(9, landmarks(False, False, None), landmarks(False, False, None)),
        },
    }
    numbers = ct.landmark_numbers(record, ladder_landmarks.landmark_rows(record))
    assert numbers["date"] == "2026-12-05" and numbers["written_by"] == ladder_landmarks.written_by(record)
    assert (numbers["n"], numbers["max_depths"]) == (4, 9)
    assert numbers["fit_depths"] == transition.MIN_FITTED + sum(transition.SKIP)
    assert (numbers["id_trained"], numbers["id_null"], numbers["onsets"]) == (1, 3, 0)
    assert (numbers["lens_found"], numbers["lens_last"]) == (3, 1)
    assert numbers["lens_deepest"] == pytest.approx(np.median([0.875, 0.75]))  # the 9-depth models only


def test_the_diagnostic_spans_give_each_diagnostics_range_under_the_keys_the_prose_names(measurements):
    from latentbook.ladder import report
    from latentbook.study.chapters import glue_keys

    m, _ = measurements
    for k, name in enumerate(m["rungs"]):
        for kind, shift in (("trained", 0.0), ("null", 1.0)):
            m["models"][name][kind].update(
                omega={"rise": {"value": 0.01 * k + shift}, "bimodality": {"coefficient": 0.3 + shift}},
                spikes={"n_spikes": [0, 2 * k]},
                contraction={"q": 0.9 - 0.1 * k},
            )
    spans = ct.diagnostic_spans(m)
    assert list(spans.index) == list(report.DIAGNOSTICS)
    assert spans.loc["spikes"].tolist() == [0.0, 6.0, 0.0, 6.0]
    assert spans.loc["omega_rise", ["null_lo", "null_hi"]].tolist() == pytest.approx([1.0, 1.03])
    assert spans.loc["contraction", ["trained_lo", "trained_hi"]].tolist() == pytest.approx([0.6, 0.9])
    glued = glue_keys("ch7", spans)
    assert glued["ch7_stability_trained_hi"] == 0.98 and isinstance(glued["ch7_spikes_null_hi"], float)


def test_the_spike_bounds_allow_k_minus_1_values_and_one_fewer_than_the_held_out_names():
    from latentbook.ladder.task import TaskSpec

    details = pd.DataFrame({"spikes (last depth)": [3, 8, 7, 12]})
    bounds = ct.spike_bounds(TaskSpec(n_values=8, n_heldout=20), details)
    assert bounds == {"name_bound": 19, "value_bound": 7, "n_above_values": 2}


def test_the_plateau_numbers_name_what_learns_and_whether_it_changes_both_names_and_mlps():
    from latentbook.ladder import report

    def variant(names, mlp, train, heldout, name_init=None):
        return {"names": names, "mlp": mlp, "name_init": name_init, "final_loss": 1.0} | {
            "train_names_accuracy": train,
            "heldout_accuracy": heldout,
        }

    plateau = {
        "guessing_baseline": 0.55,
        "settings": {"steps": 600},
        "variants": {
            "llama": variant("frozen", "stock", 0.54, 0.5),
            "names iid": variant("frozen", "stock", 0.59, 0.5, name_init="iid"),
            "no MLP": variant("frozen", "none", 0.56, 0.5),
            "names iid, no MLP": variant("frozen", "none", 1.0, 0.82, name_init="iid"),
            "names trained": variant("trained", "stock", 0.9, 0.3),
        },
    }
    runs, learnt = report.plateau_table(plateau, margin=0.2)
    numbers = ct.plateau_numbers(plateau, runs, learnt, 0.2)
    assert (numbers["n"], numbers["n_learnt"], numbers["n_learnt_both_changes"]) == (5, 2, 1)
    assert numbers["learnt"] == "“names iid, no MLP”; “names trained”"
    assert (numbers["best"], numbers["best_train"], numbers["best_heldout"]) == (
        "names iid, no MLP",
        1.0,
        0.82,
    )
    assert (numbers["llama"], numbers["names_iid"], numbers["no_MLP"]) == (0.54, 0.59, 0.56)
    assert (numbers["guess"], numbers["margin"], numbers["steps"]) == (0.55, 0.2, 600)


def test_the_names_numbers_read_each_setting_and_the_first_ladders_baseline():
    from latentbook.ladder import diagnostics, report, train

    def variant(fresh_from, heldout3, train3, stages):
        return {
            "fresh_names_from": fresh_from,
            "heldout": {"1": 0.9, "3": heldout3},
            "training_names": {"1": 0.95, "3": train3},
            "stages": [{"step": 0}] + [{"step": s} for s in stages],
        }

    bench = {
        "settings": {"steps": 5000},
        "variants": {
            "fixed, then fresh": variant(2, 0.86, 0.85, [2365, 4022]),
            "fresh from the start": variant(1, 0.3, 0.29, []),
            "fixed throughout": variant(5, 0.42, 0.77, [2365]),
        },
    }
    numbers = ct.names_numbers(bench, report.names_table(bench))
    assert numbers["steps"] == 5000
    assert (numbers["ladder_heldout3"], numbers["ladder_train3"], numbers["ladder_stages"]) == (
        0.86,
        0.85,
        "2365, 4022",
    )
    assert (numbers["fresh_heldout3"], numbers["fresh_stages"]) == (0.3, "-")
    assert (numbers["fixed_train3"], numbers["fixed_stages"]) == (0.77, "2365")
    # the benchmark's programs are the first ladder's, whose queried chains are not balanced: the first value
    # written is the stronger baseline there
    first = diagnostics.first_value_floor(train.LADDER_SPEC, 3)
    assert numbers["v1_floor3"] == first > diagnostics.guess_floor(train.LADDER_SPEC, 3)
