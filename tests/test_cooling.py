"""Attention cooling judged: the contrast, its interval, the sink-free entropy and the judge's calibration."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import special

from latentbook.analysis import cooling, planted_statistics, thermo
from latentbook.analysis.verdict import VERDICTS
from latentbook.capturing.attention import AttentionRows, AttentionStats
from latentbook.errors import InvalidInputError


def stats_from(e: np.ndarray, rows: float = 100.0, log_n: float = 3.0, beta: np.ndarray | None = None):
    """An ``AttentionStats`` whose normalised entropy per (layer, head) is ``e``, with and without the sink."""
    n_layers, n_heads = e.shape
    stats = AttentionStats(n_layers, n_heads)
    beta = 1.0 + 4.0 * (1.0 - e) if beta is None else beta
    for name, value in {
        "rows": rows,
        "entropy": rows * log_n * e,
        "log_keys": rows * log_n,
        "std_rows": rows,
        "logit_std": rows * beta,
    }.items():
        for field in (name, f"{name}_nosink"):
            stats.sums[field] += torch.tensor(np.broadcast_to(value, e.shape), dtype=torch.float64)
    return stats


def test_profile_is_the_chapters_normalised_entropy_and_beta():
    rng = np.random.default_rng(0)
    stats = stats_from(rng.uniform(0.2, 0.9, size=(10, 6)), beta=rng.uniform(1, 5, size=(10, 6)))
    summary = cooling.cooling_summary(stats, drop_sink=False)
    table = thermo.cooling(stats)
    np.testing.assert_allclose(summary.entropy, table["normalized_entropy"], rtol=1e-12)
    np.testing.assert_allclose(summary.beta_eff, table["beta_eff"], rtol=1e-12)
    np.testing.assert_allclose(summary.gamma, table["gamma"])
    assert summary.sink_excluded is False and summary.unit == "heads within each layer"
    for name in ("entropy", "log_keys"):  # by default the sums without the sink are read, when there are any
        stats.sums[f"{name}_nosink"] *= 2.0 if name == "entropy" else 4.0
    halved = cooling.cooling_summary(stats)
    assert halved.sink_excluded is True
    np.testing.assert_allclose(halved.entropy, table["normalized_entropy"] / 2, rtol=1e-12)


def test_planted_ratio_is_recovered_exactly_and_edges_are_ignored():
    e = np.full((10, 4), 0.8)
    e[5:] = 0.4  # layers 6-10 (gamma > 0.5): after the split at 0.42 are layers 5-9 (interior)
    e[0], e[-1] = 1.0, 0.01  # edge layers, outside both windows
    summary = cooling.cooling_summary(stats_from(e))
    before, after = cooling.attention_windows(10, 0.42)
    assert summary.before == (1, 2, 3) and summary.after == (4, 5, 6, 7, 8)
    np.testing.assert_array_equal(before, [1, 2, 3])
    expected = np.mean([0.8, 0.4, 0.4, 0.4, 0.4]) / 0.8
    assert summary.estimate == pytest.approx(expected, rel=1e-12)
    assert summary.ci[0] <= summary.estimate <= summary.ci[1]
    assert summary.ci[1] - summary.ci[0] < 1e-9  # identical heads: nothing to resample
    assert summary.n_depths == 10 and summary.beta_ratio > 1  # cooler rows, larger logit spread


def test_interval_always_contains_the_estimate():
    rng = np.random.default_rng(3)
    for i in range(30):
        pair = planted_statistics.planted_cooling(rng, present=bool(i % 2))
        for summary in pair:
            low, high = summary.ci
            assert 0 < low <= summary.estimate <= high
            assert summary.beta_ci[0] <= summary.beta_ratio <= summary.beta_ci[1]


def test_prompt_groups_are_resampled_when_there_are_enough():
    rng = np.random.default_rng(4)
    base = rng.uniform(0.3, 0.9, size=(8, 4))
    groups = [stats_from(base * rng.lognormal(0, 0.1, size=base.shape), rows=50 + g) for g in range(6)]
    grouped = cooling.cooling_summary(groups)
    assert grouped.unit.startswith("prompt groups") and grouped.n_units == 6
    few = cooling.cooling_summary(groups[: cooling.MIN_GROUPS - 1])
    assert few.unit == "heads within each layer" and few.n_units == 4
    merged = stats_from(np.zeros_like(base), rows=0.0)
    for g in groups:
        merged.merge(g)  # the groups' sums add: the grouped estimate is the merged capture's
    assert grouped.estimate == pytest.approx(cooling.cooling_summary(merged).estimate, rel=1e-12)


def rows_of(rng, n_heads: int = 3, n: int = 7, sink: float = 4.0) -> AttentionRows:
    logits = rng.normal(size=(n_heads, n, n))
    logits[..., 0] += sink  # a sink key
    valid = np.broadcast_to(np.tril(np.ones((n, n), dtype=bool)), logits.shape).copy()
    return AttentionRows(logits, valid, special.softmax(np.where(valid, logits, -np.inf), axis=-1))


def test_sink_free_entropy_is_the_renormalised_rows_entropy():
    rng = np.random.default_rng(5)
    r = rows_of(rng)
    free = cooling.row_sums(r.logits, r.valid, drop_sink=True)
    rest = r.weights[:, 1:, 1:]  # query 0 has only the sink: not a row of the sink-free statistic
    renormalised = rest / rest.sum(-1, keepdims=True)
    np.testing.assert_allclose(free["entropy"], thermo.entropy(renormalised).sum(-1), atol=1e-10)
    np.testing.assert_allclose(free["log_keys"], np.log(np.arange(1, 7)).sum(), atol=1e-12)
    np.testing.assert_array_equal(free["rows"], 6)
    full = cooling.row_sums(r.logits, r.valid, drop_sink=False)
    np.testing.assert_allclose(full["entropy"], thermo.entropy(r.weights).sum(-1), atol=1e-10)
    assert np.all(
        free["entropy"] / free["log_keys"] > full["entropy"] / full["log_keys"]
    )  # the sink sharpens


def test_rows_give_a_prompt_bootstrap_without_the_sink():
    rng = np.random.default_rng(6)
    prompts = [[rows_of(rng, sink=4.0 + 0.3 * layer) for layer in range(6)] for _ in range(6)]
    sums = cooling.sums_from_rows(prompts)
    assert sums.sink_excluded and sums.unit == "prompt" and sums.entropy.shape == (6, 6, 3)
    summary = cooling.cooling_summary(sums)
    assert summary.sink_excluded and summary.unit.startswith("prompts") and summary.n_units == 6
    assert "sink key removed" in summary.what
    with pytest.raises(InvalidInputError, match="every layer"):
        cooling.sums_from_rows([prompts[0], prompts[1][:3]])


def test_judge_verdicts():
    def summary(e_before: float, e_after: float, spread: float = 0.0, n_heads: int = 16, seed: int = 0):
        rng = np.random.default_rng(seed)
        e = np.full((12, n_heads), e_before)
        e[5:] = e_after  # layer 6 onwards: gamma > 0.42
        e = e * rng.lognormal(0, spread, size=e.shape)
        return cooling.cooling_summary(stats_from(np.clip(e, 0, 1)))

    flat_twin = summary(0.95, 0.95, 0.02)
    assert cooling.judge_cooling(summary(0.8, 0.4, 0.05), flat_twin)[0] == "holds"
    assert cooling.judge_cooling(summary(0.8, 0.4, 0.05))[0] == "holds"
    verdict, reason = cooling.judge_cooling(summary(0.6, 0.6, 0.05), flat_twin)
    assert verdict == "does not hold" and "smaller than 10%" in reason
    verdict, reason = cooling.judge_cooling(summary(0.8, 0.4, 0.05), summary(0.95, 0.47, 0.02))
    assert verdict == "does not hold" and "twin" in reason  # the twin cools as much
    assert cooling.judge_cooling(summary(0.8, 0.64, 0.5, n_heads=4), flat_twin)[0] == "inconclusive"
    assert cooling.judge_cooling(None)[0] == "not testable here"
    short = cooling.cooling_summary(stats_from(np.full((2, 4), 0.5)))
    verdict, reason = cooling.judge_cooling(short)
    assert verdict == "not testable here" and "2 attention layers" in reason
    assert np.isnan(short.estimate) and np.all(np.isnan(short.ci))
    assert cooling.judge_cooling(summary(0.8, 0.4), short)[0] == "inconclusive"
    for case in (summary(0.8, 0.4), short):
        assert cooling.judge_cooling(case)[0] in VERDICTS


def test_a_head_without_rows_stays_nan_and_is_inconclusive():
    e = np.full((10, 4), 0.5)
    stats = stats_from(e)
    for name in ("entropy", "log_keys", "rows"):
        stats.sums[name][6, 2] = stats.sums[f"{name}_nosink"][6, 2] = 0.0
    summary = cooling.cooling_summary(stats)
    assert np.isnan(summary.entropy[6]) and np.isnan(summary.estimate)
    assert cooling.judge_cooling(summary)[0] == "inconclusive"


def test_bad_input_names_the_fix():
    with pytest.raises(InvalidInputError, match="attention=True"):
        cooling.cooling_summary(object())
    with pytest.raises(InvalidInputError, match="split"):
        cooling.cooling_summary(stats_from(np.full((8, 4), 0.5)), split=1.5)
    with pytest.raises(InvalidInputError, match="empty"):
        cooling.cooling_summary(AttentionStats(8))
    with pytest.raises(InvalidInputError, match="same model"):
        cooling.cooling_summary([stats_from(np.full((8, 4), 0.5)), stats_from(np.full((8, 2), 0.5))])
    with pytest.raises(InvalidInputError, match="heads, queries, keys"):
        cooling.row_sums(np.zeros((3, 4)), np.ones((3, 4), dtype=bool))


def test_attention_sums_read_the_sink_free_sums_by_default_and_refuse_holes():
    e = np.random.default_rng(1).uniform(0.2, 0.9, size=(8, 3))
    stats = stats_from(e)
    for name in ("entropy", "log_keys"):
        stats.sums[f"{name}_nosink"] *= 2.0  # the sink-free ratio stays e; the sums tell them apart
    one = cooling.attention_sums(stats)
    assert one.sink_excluded and one.unit == "capture" and one.n_units == 1 and one.n_layers == 8
    np.testing.assert_allclose(one.entropy[0], 2 * 100 * 3.0 * e, rtol=1e-12)
    kept = cooling.attention_sums(stats, drop_sink=False)
    assert not kept.sink_excluded and kept.unit == "capture"
    np.testing.assert_allclose(kept.entropy[0], 100 * 3.0 * e, rtol=1e-12)
    old = stats_from(e)
    for name in list(old.sums):
        if name.endswith("_nosink"):
            del old.sums[name]  # a capture from before the sink-free sums
    assert not old.has_nosink
    both = cooling.attention_sums([stats, old])  # one group without them: none are read
    assert not both.sink_excluded and both.unit == "prompt group" and both.n_units == 2
    np.testing.assert_allclose(both.entropy[0], 100 * 3.0 * e, rtol=1e-12)
    with pytest.raises(InvalidInputError, match="^Pass at least one capture with attention statistics"):
        cooling.attention_sums([])
    with pytest.raises(
        InvalidInputError, match="^These attention statistics are empty: no forward was recorded"
    ):
        cooling.attention_sums([stats, AttentionStats(8)])
    with pytest.raises(
        InvalidInputError, match=r"^All prompt groups must come from the same model \(same layers"
    ):
        cooling.attention_sums([stats, stats_from(np.full((9, 3), 0.5))])
    holes = stats_from(e)
    holes.sums["rows"][[2, 5]] = 0.0  # layers 3 and 6 recorded nothing
    with pytest.raises(
        InvalidInputError, match=r"^Layers \[3, 6\] hold no attention rows \(a capture with depths="
    ):
        cooling.attention_sums(holes)
    holes.sums["rows"][:6] = 0.0
    with pytest.raises(InvalidInputError, match=r"^Layers \[1, 2, 3, 4, 5\] \.\.\. hold no attention rows"):
        cooling.attention_sums(holes)
    holes.sums["rows"][:] = 1.0
    holes.sums["rows"][:5] = 0.0
    with pytest.raises(
        InvalidInputError,
        match=r"^Layers \[1, 2, 3, 4, 5\] hold no attention rows .* needs every "
        r"layer\. Capture with all depths and attention=True\.$",
    ):
        cooling.attention_sums(holes)
    holes.sums["rows"][:] = 1.0
    holes.sums["rows"][4, 1] = 0.0  # one head without rows is not a layer without rows
    cooling.attention_sums(holes)


def _row_sums_by_loop(logits, valid, drop_sink):
    """Each row on its own: the keys left, their softmax, its entropy, and the population std of the logits."""
    out = {
        name: np.zeros(logits.shape[0]) for name in ("entropy", "log_keys", "rows", "logit_std", "std_rows")
    }
    for h in range(logits.shape[0]):
        for t in range(logits.shape[1]):
            keys = np.flatnonzero(valid[h, t])
            if drop_sink:
                keys = keys[keys != 0]
            if len(keys) == 0:
                continue
            z = logits[h, t, keys].astype(np.float64)
            q = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
            out["entropy"][h] += -np.sum(q * np.log(q))
            out["log_keys"][h] += np.log(len(keys))
            out["rows"][h] += 1
            if len(keys) > 1:
                out["logit_std"][h] += z.std()
                out["std_rows"][h] += 1
    return out


def test_row_sums_of_ragged_masks_match_a_row_by_row_calculation():
    rng = np.random.default_rng(11)
    logits = 3 * rng.normal(size=(3, 5, 9))
    valid = rng.random((3, 5, 9)) < 0.4
    valid[0, 0] = False  # a row with no key at all
    valid[1, 1] = False
    valid[1, 1, 0] = True  # only the sink: no row once it is dropped
    valid[1, 2] = False
    valid[1, 2, [0, 4]] = True  # one key left without the sink
    valid[2, 3] = False
    valid[2, 3, [3, 7]] = True  # two keys, no sink
    for drop_sink in (True, False):
        got = cooling.row_sums(logits, valid, drop_sink=drop_sink)
        expected = _row_sums_by_loop(logits, valid, drop_sink)
        for name in expected:
            np.testing.assert_allclose(got[name], expected[name], rtol=1e-12, atol=1e-12, err_msg=name)
            assert got[name].dtype == np.float64 and got[name].shape == (3,)
    default = cooling.row_sums(logits, valid)
    for name, value in cooling.row_sums(logits, valid, drop_sink=True).items():
        np.testing.assert_array_equal(default[name], value)  # the sink is dropped by default
    single = cooling.row_sums(logits.astype(np.float32), valid)  # float32 logits are read as float64
    exact = cooling.row_sums(logits.astype(np.float32).astype(np.float64), valid)
    for name in exact:
        np.testing.assert_allclose(single[name], exact[name], rtol=1e-13, atol=1e-13, err_msg=name)
    np.testing.assert_array_equal(valid[1, 1], np.eye(9, dtype=bool)[0])  # row_sums copies before dropping
    with pytest.raises(InvalidInputError, match=r"both be \(heads, queries, keys\) arrays; got \(3, 4\)"):
        cooling.row_sums(np.zeros((3, 4)), np.ones((3, 4), dtype=bool))
    with pytest.raises(InvalidInputError, match="heads, queries, keys"):
        cooling.row_sums(np.zeros((2, 3, 4)), np.ones((2, 3, 5), dtype=bool))


def test_sums_from_rows_are_the_row_sums_of_every_prompt_and_layer():
    rng = np.random.default_rng(12)
    prompts = [[rows_of(rng, n=5 + p) for _ in range(4)] for p in range(3)]
    for drop_sink in (True, False):
        sums = cooling.sums_from_rows(prompts, drop_sink=drop_sink)
        assert sums.sink_excluded is drop_sink and sums.unit == "prompt"
        for p, prompt in enumerate(prompts):
            for layer, r in enumerate(prompt):
                expected = cooling.row_sums(r.logits, r.valid, drop_sink)
                np.testing.assert_allclose(sums.entropy[p, layer], expected["entropy"], rtol=1e-12)
                np.testing.assert_allclose(sums.logit_std[p, layer], expected["logit_std"], rtol=1e-12)
                np.testing.assert_array_equal(sums.std_rows[p, layer], expected["std_rows"])
    default = cooling.sums_from_rows(prompts)
    np.testing.assert_array_equal(default.entropy, cooling.sums_from_rows(prompts, drop_sink=True).entropy)
    with pytest.raises(
        InvalidInputError, match=r"^rows_by_prompt must list, for every prompt, the AttentionRows"
    ):
        cooling.sums_from_rows([])
    with pytest.raises(InvalidInputError, match="^rows_by_prompt must list"):
        cooling.sums_from_rows([prompts[0], []])
    other = [[rows_of(rng, n_heads=2) for _ in range(4)]]
    with pytest.raises(
        InvalidInputError, match=r"^Every prompt's rows must come from the same model \(same number"
    ):
        cooling.sums_from_rows([prompts[0], other[0]])


def test_the_head_bootstrap_has_the_unbiased_variance_of_a_head_mean():
    """All layers flat at 0.5 except one after the split whose heads differ: R's draws vary only through that
    layer's head mean, whose bootstrap variance, scaled by H / (H - 1), is the unbiased s^2 / H."""
    for heads in ([0.2, 0.4, 0.5, 0.9], [0.3, 0.7]):
        e = np.full((10, len(heads)), 0.5)
        e[6] = heads  # layer 7: after the split
        summary = cooling.cooling_summary(stats_from(e), n_boot=20000, seed=1)
        assert summary.estimate == pytest.approx((4 * 0.5 + np.mean(heads)) / 5 / 0.5, rel=1e-12)
        expected = np.var(heads, ddof=1) / len(heads) / (5 * 0.5) ** 2
        assert np.var(summary.draws) == pytest.approx(expected, rel=0.05), heads
        assert np.mean(summary.draws) == pytest.approx(summary.estimate, abs=3 * np.sqrt(expected / 20000))


def test_the_prompt_bootstrap_resamples_whole_groups():
    """Heads identical within a layer (no head variance): the draws vary with the groups drawn only. Two kinds
    of groups, R = 0.5 and R = 1 with equal sums: the grouped R is their mean-of-sums 0.75 and its draws
    spread as a resampled share of the kinds (a binomial of 6 groups)."""
    cool, flat = np.full((10, 4), 0.8), np.full((10, 4), 0.8)
    cool[4:9] = 0.4  # after-split interior layers 5-9 at half the before layers
    groups = [stats_from(cool if g % 2 else flat) for g in range(6)]
    summary = cooling.cooling_summary(groups, n_boot=4000, seed=2)
    assert summary.unit == "prompt groups, then heads within each layer" and summary.n_units == 6
    assert summary.estimate == pytest.approx(0.75, rel=1e-12)
    # a draw's R = 1 - share / 2, share ~ Binomial(6, 1/2) / 6: variance 1 / 96
    assert np.var(summary.draws) == pytest.approx(1 / 96, rel=0.08)
    assert set(np.round(summary.draws, 12)) <= {round(1 - k / 12, 12) for k in range(7)}
    assert (
        cooling.cooling_summary(groups[:4], n_boot=100).ci[1] - cooling.cooling_summary(groups[:4]).ci[0]
        < 1e-9
    )


def test_summary_describes_what_was_measured():
    e = np.full((10, 4), 0.5)
    summary = cooling.cooling_summary(stats_from(e))
    assert summary.what == (
        "H/log n (head mean) over interior layers 5-9 / 2-4 of 10 (split gamma = 0.42); sink key removed, rows "
        "renormalised; 95% percentile bootstrap over 4 heads within each layer"
    )
    assert summary.split == 0.42 and summary.level == 0.95 and summary.draws.shape == (200,)
    kept = cooling.cooling_summary(stats_from(e), drop_sink=False, split=0.5, level=0.9, n_boot=20)
    assert "over interior layers 6-9 / 2-5 of 10 (split gamma = 0.5)" in kept.what
    assert "sink key included (a capture from before sink-excluded sums); 90% percentile" in kept.what
    assert kept.split == 0.5 and kept.level == 0.9 and kept.draws.shape == (20,)
    assert cooling.cooling_summary(stats_from(np.full((2, 4), 0.5))).what == (
        "2 attention layers: no interior layer on both sides of gamma = 0.42 (0 before, 0 after), so no contrast"
    )
    for kwargs in (
        {"split": 0.0},
        {"split": 1.0},
        {"n_boot": 19},
        {"n_boot": 100.0},
        {"level": 1.0},
        {"level": 0},
    ):
        with pytest.raises(
            InvalidInputError, match=r"^Use 0 < split < 1, an integer n_boot >= 20 and 0 < level < 1"
        ):
            cooling.cooling_summary(stats_from(e), **kwargs)


def test_judge_at_its_thresholds_and_its_reasons():
    import dataclasses

    base = cooling.cooling_summary(stats_from(np.full((10, 4), 0.5)))

    def case(low, high, estimate=None, draws=None, sink=True):
        estimate = (low + high) / 2 if estimate is None else estimate
        draws = np.full(200, estimate) if draws is None else draws
        return dataclasses.replace(base, estimate=estimate, ci=(low, high), draws=draws, sink_excluded=sink)

    judge = cooling.judge_cooling
    assert judge(case(0.51, 0.8), min_effect=0.5)[0] == "does not hold"  # low above 1 - 0.5
    assert judge(case(0.5, 0.8, estimate=0.6), min_effect=0.5)[0] == "inconclusive"  # low at the threshold
    assert judge(case(0.2, 0.5, estimate=0.4), min_effect=0.5)[0] == "inconclusive"  # high at the threshold
    assert judge(case(0.2, 0.49, estimate=0.4), min_effect=0.5)[0] == "holds"
    verdict, reason = judge(case(0.2, 0.49, estimate=0.4), min_effect=0.5)
    assert reason == (
        "H/log n after / before gamma = 0.42 = 0.400 [0.200, 0.490] (heads within each layer bootstrap, sink "
        "removed): a fall of 50% or more"
    )
    verdict, reason = judge(case(0.5, 0.8, estimate=0.6, sink=False), min_effect=0.5)
    assert reason.endswith(
        "(heads within each layer bootstrap, sink key included): the interval reaches above 0.50"
    )
    verdict, reason = judge(case(0.95, 0.99))
    assert reason.endswith(": any fall is smaller than 10%")
    verdict, reason = judge(case(float("nan"), float("nan"), estimate=0.5))  # an estimate without an interval
    assert verdict == "inconclusive" and reason.endswith(
        ": the entropy is undefined at some depth (a head recorded no rows)"
    )
    assert judge(None)[1] == "no attention statistics: capture with lb.capture(..., attention=True)"
    # the twin: relative draws 0.4 / 0.8 = 0.5 exactly, at the threshold 1 - 0.5
    model = case(0.2, 0.45, estimate=0.4, draws=np.full(200, 0.4))
    at = case(0.7, 0.9, estimate=0.8, draws=np.full(200, 0.8))
    verdict, reason = judge(model, at, min_effect=0.5)
    assert verdict == "inconclusive" and reason.startswith("H/log n after / before gamma = 0.42 = 0.400")
    assert "; over the random twin's 0.800: 0.500 [0.500, 0.500]: the interval reaches above 0.50" in reason
    below = case(0.7, 0.9, estimate=0.81, draws=np.full(200, 0.81))
    assert judge(model, below, min_effect=0.5)[0] == "holds"
    above = case(0.7, 0.9, estimate=0.79, draws=np.full(200, 0.79))
    verdict, reason = judge(model, above, min_effect=0.5)
    assert verdict == "does not hold" and reason.endswith(": not 50% below the twin's")
    for twin in (case(0.7, 0.9, estimate=float("nan")), dataclasses.replace(at, before=())):
        verdict, reason = judge(model, twin, min_effect=0.5)
        assert verdict == "inconclusive" and reason.endswith(
            ": the random twin has no contrast to compare with"
        )


def test_relative_contrast_pairs_draws_up_to_the_shorter_list():
    e = np.full((10, 4), 0.8)
    e[5:] = 0.4
    e = e * np.random.default_rng(3).lognormal(0, 0.1, size=e.shape)
    model = cooling.cooling_summary(stats_from(e), n_boot=300, level=0.9)
    twin = cooling.cooling_summary(stats_from(np.full((10, 4), 0.9)), n_boot=200)
    estimate, (low, high) = cooling.relative_contrast(model, twin)
    assert estimate == pytest.approx(model.estimate / twin.estimate, rel=1e-12)
    ratios = model.draws[:200] / twin.draws
    assert (low, high) == pytest.approx(tuple(np.percentile(ratios, [5, 95])), rel=1e-12)  # the lower level


def test_planted_sums_put_the_planted_profile_where_it_says():
    rng = np.random.default_rng(5)
    sums = planted_statistics.planted_sums(
        rng, 12, 6, 3, fall=0.0, head_spread=0.0, sink_heads=0.0, prompt_noise=0.0
    )
    e = sums.entropy / sums.log_keys
    np.testing.assert_allclose(e[:, 1:-1], 0.6, rtol=1e-12)  # the default level, flat without a fall
    np.testing.assert_allclose(e[:, 0], 0.95, rtol=1e-12)  # the first layer near uniform
    np.testing.assert_allclose(e[:, -1], 0.3 * 0.6, rtol=1e-12)  # the last sharp
    np.testing.assert_allclose(sums.logit_std / sums.std_rows, 1 + 4 * (1 - e), rtol=1e-12)
    assert sums.unit == "prompt group" and not sums.sink_excluded and sums.entropy.shape == (3, 12, 6)
    assert np.all(sums.rows == sums.rows[:, :1, :1]) and sums.rows.min() >= 40 and sums.rows.max() < 400
    assert planted_statistics.planted_sums(rng, 12, 6, 1, fall=0.3).unit == "capture"
    fallen = planted_statistics.planted_sums(
        rng, 40, 6, 2, fall=0.5, level=0.8, head_spread=0.0, sink_heads=0.0, prompt_noise=0.0
    )
    e = fallen.entropy / fallen.log_keys
    # 0.8 (1 - 0.5 s): the step s is ~0.03 at gamma = 0.05 and ~1 at 0.975
    assert np.all((0.78 < e[:, 1]) & (e[:, 1] < 0.8)) and np.all((0.4 < e[:, -2]) & (e[:, -2] < 0.405))
    sinks = planted_statistics.planted_sums(rng, 12, 400, 2, fall=0.0, sink_heads=1.0, prompt_noise=0.0)
    e = sinks.entropy / sinks.log_keys
    assert 0.03 <= e.min() < 0.04 and 0.14 < e.max() <= 0.15  # every head a sink head: U(0.03, 0.15)
    np.testing.assert_allclose(e[0], e[1], rtol=1e-12)  # no prompt noise: the groups agree
    spread = planted_statistics.planted_sums(
        rng, 12, 400, 2, fall=0.0, head_spread=0.3, sink_heads=0.0, prompt_noise=0.0
    )
    log_e = np.log(spread.entropy / spread.log_keys)[0, 1:-1]
    assert np.std(log_e, axis=1) == pytest.approx(np.full(10, 0.3), rel=0.15)  # log-normal heads
    noisy = planted_statistics.planted_sums(
        rng, 6, 50, 400, fall=0.0, level=0.1, head_spread=0.0, sink_heads=0.0, prompt_noise=0.2
    )
    log_e = np.log(noisy.entropy / noisy.log_keys)[:, 1:-1]  # interior layers: flat at 0.1
    assert np.std(log_e.mean((1, 2))) == pytest.approx(0.2, rel=0.15)  # a factor shared by a group's cells
    within = log_e - log_e.mean((1, 2), keepdims=True)
    assert np.std(within) == pytest.approx(0.2, rel=0.15)  # and one of its own for each cell
    clipped = planted_statistics.planted_sums(rng, 12, 50, 2, fall=1.5, level=0.99, head_spread=0.5)
    e = clipped.entropy / clipped.log_keys
    assert e.min() == 0.0 and e.max() == 1.0  # a normalised entropy stays in [0, 1]


def test_five_groups_are_enough_for_the_prompt_bootstrap_and_one_sided_windows_give_no_contrast():
    rng = np.random.default_rng(9)
    groups = [stats_from(rng.uniform(0.3, 0.9, size=(8, 4))) for _ in range(5)]
    assert cooling.cooling_summary(groups).unit == "prompt groups, then heads within each layer"
    assert cooling.cooling_summary(groups[:4]).unit == "heads within each layer"
    one_sided = cooling.cooling_summary(
        stats_from(np.full((10, 4), 0.5)), split=0.15
    )  # no interior layer before
    assert one_sided.before == () and one_sided.after == (1, 2, 3, 4, 5, 6, 7, 8) and not one_sided.testable
    assert np.isnan(one_sided.estimate) and one_sided.draws.size == 0 and np.all(np.isnan(one_sided.ci))
    assert one_sided.what == (
        "10 attention layers: no interior layer on both sides of gamma = 0.15 (0 before, 8 after), so no contrast"
    )
    np.testing.assert_allclose(one_sided.entropy, 0.5)  # the profile is there all the same
    after_none = cooling.cooling_summary(stats_from(np.full((10, 4), 0.5)), split=0.9)
    assert (
        after_none.before == (1, 2, 3, 4, 5, 6, 7, 8) and after_none.after == () and not after_none.testable
    )
    assert cooling.judge_cooling(after_none)[0] == "not testable here"


def test_planted_cooling_draws_the_documented_sizes_and_effects():
    rng = np.random.default_rng(21)
    depths, heads, groups = set(), set(), set()
    for i in range(40):
        present = bool(i % 2)
        model, twin = planted_statistics.planted_cooling(rng, present, n_boot=30)
        assert model.draws.shape == (30,) and twin.draws.shape == (30,)
        assert model.n_depths == twin.n_depths and model.unit == twin.unit and model.n_units == twin.n_units
        depths.add(model.n_depths)
        (groups if model.unit.startswith("prompt groups") else heads).add(model.n_units)
        if present:  # the model's non-sink heads fall by 0.4-0.6, the twin's by at most 0.03
            assert 0.4 < model.estimate < 0.95 and twin.estimate > 0.93
    assert depths == {8, 12, 18, 24, 30} and heads <= {4, 8, 12, 16} and groups == {8, 30} and len(heads) >= 3


def test_calibration_on_planted_cooling():
    """At most 5 % false "holds" on planted-absent pairs, at least 80 % found on planted-present ones."""
    rng = np.random.default_rng(2026)
    n_absent, n_present = 100, 150  # found runs ~82 % (1000 pairs): more present pairs, a steadier rate

    def holds(present: bool) -> bool:
        return cooling.judge_cooling(*planted_statistics.planted_cooling(rng, present))[0] == "holds"

    false = sum(holds(False) for _ in range(n_absent))
    found = sum(holds(True) for _ in range(n_present))
    assert false <= 0.05 * n_absent, f"{false} false holds in {n_absent}"
    assert found >= 0.80 * n_present, f"{found} found in {n_present}"
