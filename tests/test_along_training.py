"""Capability against the diagnostics along training (``ladder.along_training``): the test of changes between
checkpoints given the step, calibrated on planted runs (a diagnostic that moves with capability; one that only
drifts with training time; noise), and its table and correlations from ``measurements.json``."""

import numpy as np
import pytest

from latentbook.errors import InvalidInputError
from latentbook.ladder import along_training as at
from latentbook.ladder.rank_correlation import partial_spearman_ci
from latentbook.ladder.report import DIAGNOSTICS

STEPS = np.arange(1, 11) * 1000.0


def _runs(rng, kind, n_runs=3):
    """Three runs of ten checkpoints: capability rises at a random onset (a logistic step); the diagnostic
    ``tracks`` it, only ``drift``s with training time (sqrt(step) plus a random walk) or is a random walk."""
    x, y, step, run = [], [], [], []
    for k in range(n_runs):
        onset = rng.uniform(2000, 9000)
        capability = 0.4 + 0.5 / (1 + np.exp(-(STEPS - onset) / 700)) + rng.normal(0, 0.02, len(STEPS))
        walk = np.cumsum(rng.normal(0, 1, len(STEPS)))
        diagnostic = {
            "tracks": 3 * capability + rng.normal(0, 0.05, len(STEPS)),
            "drift": np.sqrt(STEPS / 1000) + 0.5 * walk,
            "noise": walk,
        }[kind]
        x += list(capability)
        y += list(diagnostic)
        step += list(STEPS)
        run += [f"a-s{k}"] * len(STEPS)
    return x, y, step, run


def _verdict(r):
    return at.along_training_verdict(r, r.p_value, 1, +1)[0]


@pytest.mark.parametrize("kind", ["drift", "noise"])
def test_a_diagnostic_that_does_not_move_with_capability_is_rarely_said_to_track_it(kind):
    rng = np.random.default_rng(3)
    words = [_verdict(at.partial_along_training(*_runs(rng, kind), n_boot=400, seed=s)) for s in range(40)]
    assert words.count("tracks capability") <= 3  # 0.05 nominal; the test runs at about 0.02 here


def test_a_diagnostic_that_moves_with_capability_is_found_in_every_planted_ladder():
    rng = np.random.default_rng(4)
    results = [at.partial_along_training(*_runs(rng, "tracks"), n_boot=400, seed=s) for s in range(15)]
    assert [_verdict(r) for r in results] == ["tracks capability"] * 15
    assert min(r.rho for r in results) > 0.6
    assert all(r.ci[0] <= r.rho <= r.ci[1] for r in results)


def test_changes_are_taken_within_runs_never_across_their_boundary():
    rng = np.random.default_rng(5)
    x, y, step, run = _runs(rng, "tracks")
    r = at.partial_along_training(x, y, step, run, n_boot=200)
    x, y, step = (np.reshape(v, (3, 10)) for v in (x, y, step))
    by_hand = partial_spearman_ci(
        np.diff(x, axis=1).ravel(), np.diff(y, axis=1).ravel(), step[:, 1:].ravel(), n_boot=200
    )
    assert r.n == 27 and r.n_runs == 3
    assert (r.rho, r.ci, r.p_value) == (by_hand.rho, by_hand.ci, by_hand.p_value)
    from scipy.stats import spearmanr

    assert r.per_run == pytest.approx([spearmanr(a, b)[0] for a, b in zip(x, y)])


def test_interleaved_runs_are_told_apart_by_their_label():
    rng = np.random.default_rng(6)
    x, y, step, run = (np.asarray(v) for v in _runs(rng, "tracks"))
    order = np.argsort(np.tile(np.arange(10), 3), kind="stable")  # checkpoint 1 of every run, then 2, ...
    a = at.partial_along_training(x, y, step, run, n_boot=200)
    b = at.partial_along_training(x[order], y[order], step[order], run[order], n_boot=200)
    assert (a.rho, a.ci, a.p_value) == (b.rho, b.ci, b.p_value)


def test_bad_input_is_named():
    x, y, step, run = _runs(np.random.default_rng(7), "noise")
    with pytest.raises(InvalidInputError, match="increasing step"):
        at.partial_along_training(x, y, step[::-1], run)
    with pytest.raises(InvalidInputError, match="finite"):
        at.partial_along_training(x, [np.nan] + y[1:], step, run)
    with pytest.raises(InvalidInputError, match=">= 3 checkpoints per run"):
        at.partial_along_training(x[:12], y[:12], step[:12], run[:12])  # the second run has two
    with pytest.raises(InvalidInputError, match="one 1-d entry"):
        at.partial_along_training(x, y[:-1], step, run)


def test_the_verdict_reads_the_holm_adjusted_p_and_the_interval_side():
    r = at.TrainingCorrelation(0.5, (0.2, 0.7), 0.01, 27, 3, (0.9, 0.8, 0.7))
    assert at.along_training_verdict(r, 0.01, 10, +1)[0] == "tracks capability"
    assert at.along_training_verdict(r, 0.06, 10, +1)[0] == "inconclusive"  # Holm takes it above 0.05
    assert at.along_training_verdict(r, 0.01, 10, -1)[0] == "does not"  # the paper expects a fall
    wide = at.TrainingCorrelation(0.5, (-0.1, 0.7), 0.01, 27, 3, (0.9, 0.8, 0.7))
    word, reason = at.along_training_verdict(wide, 0.01, 10, +1)
    assert word == "inconclusive" and "includes 0" in reason and "training time" in reason
    flat = at.TrainingCorrelation(float("nan"), (np.nan, np.nan), np.nan, 27, 3, (np.nan,) * 3)
    assert at.along_training_verdict(flat, np.nan, 10, +1)[0] == "does not"


def _entry(capability, stability, control=0.75):
    return {
        "capability": {"mean": capability},
        "omega": {"rise": {"value": capability}, "bimodality": {"coefficient": 0.4}},
        "spikes": {"n_spikes": [0, 3]},
        "contraction": {"q": 1 - capability},
        "tco": {"scores": {"stability": {"accuracy": stability}, "control": {"accuracy": control}}},
    }


def _measurements(rng):
    models = {}
    for architecture in ("l4-d64", "l8-d64"):
        for seed in range(3):
            x, y, _, _ = _runs(rng, "tracks", n_runs=1)
            control = rng.uniform(0.5, 1.0, len(x))  # a positive control unrelated to capability here
            checkpoints = {
                str(int(s)): _entry(a, b, c) for s, a, b, c in zip(STEPS[:-1], x[:-1], y[:-1], control[:-1])
            }
            models[f"{architecture}-s{seed}"] = {
                "trained": _entry(x[-1], y[-1], control[-1]),
                "train_steps": int(STEPS[-1]),
                "checkpoints": checkpoints,
            }
    models["l2-d64-s0"] = {"trained": _entry(0.5, 0.5), "train_steps": 10000}  # no checkpoints
    return {"rungs": list(models), "models": models}


def test_the_table_has_every_checkpoint_and_the_final_model_as_the_last_step():
    m = _measurements(np.random.default_rng(8))
    table = at.training_table(m)
    assert len(table) == 2 * 3 * 10 and set(table.architecture) == {"l4-d64", "l8-d64"}
    last = table[(table.run == "l8-d64-s2") & (table.step == 10000)].iloc[0]
    assert last.capability == m["models"]["l8-d64-s2"]["trained"]["capability"]["mean"]
    assert last.seed == 2 and last.contraction == pytest.approx(1 - last.capability)


def test_correlations_along_training_are_holm_adjusted_across_architectures_and_diagnostics():
    m = _measurements(np.random.default_rng(9))
    out = at.training_correlations(m, n_boot=200)
    assert set(out) == {"l4-d64", "l8-d64"} and all(set(v) == set(DIAGNOSTICS) for v in out.values())
    n_tests = 2 * len(DIAGNOSTICS)
    p = np.array([e["p_value"] for v in out.values() for e in v.values()])
    assert np.isnan(p).sum() == 4  # the constant bimodality and spike count: no test, counted as p = 1
    p = np.where(np.isfinite(p), p, 1.0)
    p_holm = np.array([e["p_holm"] for v in out.values() for e in v.values()])
    order = np.argsort(p)
    expected = np.minimum(1, np.maximum.accumulate((n_tests - np.arange(n_tests)) * p[order]))
    assert p_holm[order] == pytest.approx(expected)
    for v in out.values():
        assert v["stability"]["verdict"] == "tracks capability"  # planted: it moves with capability
        assert v["omega_rise"]["verdict"] == "tracks capability"
        assert v["contraction"]["verdict"] == "tracks capability"  # q falls as capability rises, as expected
        assert v["contraction"]["rho"] < -0.6
        assert v["bimodality"]["verdict"] == "does not"  # constant: nothing left once the step is removed
        assert v["stability"]["n"] == 27 and v["stability"]["n_tests"] == n_tests
    assert (
        at.training_correlations({"rungs": ["l2-d64-s0"], "models": {"l2-d64-s0": m["models"]["l2-d64-s0"]}})
        == {}
    )


def test_a_name_without_a_seed_is_refused():
    assert at.architecture_of("l4-d64-s12") == ("l4-d64", 12)
    with pytest.raises(InvalidInputError, match="<rung>-s<seed>"):
        at.architecture_of("l4-d64")


def test_the_correlation_table_and_figure_show_every_architecture_and_diagnostic():
    import matplotlib

    matplotlib.use("Agg")
    from latentbook.ladder import figures

    m = _measurements(np.random.default_rng(10))
    correlations = at.training_correlations(m, n_boot=200)
    table = at.correlation_table(correlations)
    assert len(table) == 2 * len(DIAGNOSTICS)
    row = table[(table.architecture == "l8-d64") & (table.diagnostic == DIAGNOSTICS["stability"][0])].iloc[0]
    entry = correlations["l8-d64"]["stability"]
    assert (row.rho, row["p (Holm)"], row.verdict) == (entry["rho"], entry["p_holm"], entry["verdict"])
    assert row["95% CI"] == f"[{entry['ci'][0]:+.2f}, {entry['ci'][1]:+.2f}]"
    fig = figures.along_training(at.training_table(m), correlations)
    axes = np.array(fig.axes).reshape(len(DIAGNOSTICS), 2)
    assert axes[0, 1].get_title().startswith("l8-d64\nrho = ")
    stability = axes[list(DIAGNOSTICS).index("stability"), 1]
    lines = [line for line in stability.get_lines() if len(line.get_xdata()) == 10]
    assert len(lines) == 3  # one line per seed through its ten checkpoints
    run = at.training_table(m).query("run == 'l8-d64-s1'")
    assert any(np.allclose(line.get_ydata(), run.stability) for line in lines)


def test_the_verdict_table_gets_one_row_per_architecture_and_diagnostic_along_training():
    from latentbook.study import ladder_rows

    m = _measurements(np.random.default_rng(11))
    correlations = at.training_correlations(m)
    rows = ladder_rows.training_rows(m)
    assert len(rows) == 2 * len(DIAGNOSTICS)
    assert {r.run for r in rows} == {"ladder, along training"} and {r.claim for r in rows} == {
        "reasoning_diagnostics"
    }
    by = {(r.model.split(",")[0], r.measured.split(" changes")[0]): r for r in rows}
    stability = by["ladder:l8-d64", DIAGNOSTICS["stability"][0]]
    entry = correlations["l8-d64"]["stability"]
    assert (stability.value, stability.ci_low, stability.ci_high) == (entry["rho"], *entry["ci"])
    assert stability.verdict == "holds" and stability.reason == entry["reason"]
    flat = by["ladder:l8-d64", DIAGNOSTICS["bimodality"][0]]
    assert flat.verdict == "does not hold" and np.isnan(flat.value)
    assert ladder_rows.training_rows({"rungs": [], "models": {}}) == []


def test_a_second_control_removes_what_the_diagnostic_shares_with_it():
    """``y`` follows ``x`` only through ``c`` (a positive control that tracks capability): given the step alone the
    partial rho is large, given the step and ``c`` it is near 0 and its interval holds 0; one control given as a
    column is the one-control formula, and a constant second control changes nothing."""
    from latentbook.ladder.rank_correlation import partial_spearman_ci

    rng = np.random.default_rng(7)
    n = 60
    step = rng.permutation(n).astype(float)
    c = rng.standard_normal(n)
    x = c + 0.3 * rng.standard_normal(n)
    y = c + 0.3 * rng.standard_normal(n)
    alone = partial_spearman_ci(x, y, step, n_boot=300)
    both = partial_spearman_ci(x, y, np.column_stack([step, c]), n_boot=300)
    assert alone.rho > 0.6 and alone.p_value < 0.01
    assert abs(both.rho) < 0.2 and both.ci[0] < 0 < both.ci[1] and both.p_value > 0.05
    as_column = partial_spearman_ci(x, y, step[:, None], n_boot=300)
    assert as_column.rho == pytest.approx(alone.rho) and as_column.ci == pytest.approx(alone.ci)
    constant = partial_spearman_ci(x, y, np.column_stack([step, np.ones(n)]), n_boot=300)
    assert constant.rho == pytest.approx(alone.rho, abs=1e-9)
    # the residual form agrees with the formula where both apply
    from latentbook.ladder.rank_correlation import _ranks, _residual_correlation

    assert _residual_correlation(_ranks(x), _ranks(y), _ranks(step)[:, None]) == pytest.approx(alone.rho)


def test_along_training_controls_tco_stability_for_its_positive_control():
    """The checkpoints' TCO stability tracks capability given the step, but not once the change of its positive
    control is removed too (issue 49: rho -0.04, p 0.85 on l4-d64); the reason names both controls."""
    from latentbook.study.ladder_rows import ladder_measurements

    m = ladder_measurements()
    if m is None:
        pytest.skip("no ladder measurements in results/")
    stability = at.training_correlations(m, n_boot=400)["l4-d64"]["stability"]
    assert stability["control"] == "training step and the positive control"
    assert "given the step and the positive control" in stability["reason"]
    assert stability["verdict"] == "inconclusive" and stability["ci"][0] < 0 < stability["ci"][1]
    table = at.training_table(m)
    x, y = (
        table[table["architecture"] == "l4-d64"]
        .sort_values(["run", "step"])[["capability", "stability"]]
        .T.values
    )
    rows = table[table["architecture"] == "l4-d64"].sort_values(["run", "step"])
    step_only = at.partial_along_training(x, y, rows["step"], rows["run"], n_boot=400)
    assert step_only.rho > 0.4  # what the step alone leaves: the positive control's share
