"""Attention cooling judged: the contrast, its interval, the sink-free entropy and the judge's calibration."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import special

from latentbook.analysis import cooling, thermo
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
        pair = cooling.planted_cooling(rng, present=bool(i % 2))
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


def test_calibration_on_planted_cooling():
    """At most 5 % false "holds" on planted-absent pairs, at least 80 % found on planted-present ones."""
    rng = np.random.default_rng(2026)
    n_absent, n_present = 100, 150  # found runs ~82 % (1000 pairs): more present pairs, a steadier rate

    def holds(present: bool) -> bool:
        return cooling.judge_cooling(*cooling.planted_cooling(rng, present))[0] == "holds"

    false = sum(holds(False) for _ in range(n_absent))
    found = sum(holds(True) for _ in range(n_present))
    assert false <= 0.05 * n_absent, f"{false} false holds in {n_absent}"
    assert found >= 0.80 * n_present, f"{found} found in {n_present}"
