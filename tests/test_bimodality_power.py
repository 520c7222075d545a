"""analysis.bimodality_power: the bimodality judge's power for the paper's two bands, and the rule that keeps a
"does not hold" only where that power reaches 80 %."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from latentbook.analysis import bimodality_power as bp
from latentbook.analysis.bimodality import bimodality, design_effect
from latentbook.analysis.verdict import Row, judge_bimodality, paper_jump
from latentbook.study.evidence import with_bimodality_power


def test_power_is_near_zero_for_bands_too_close_and_near_one_for_distinct_ones():
    assert bp.power(2000, 1.5) == 0.0  # one mode: two Gaussians 1.5 sd apart make a unimodal density
    assert bp.power(2000, 8.0) >= 0.95


def test_power_grows_with_the_sample_and_falls_with_the_number_of_depths():
    small, large = bp.power(60, 6.0), bp.power(1500, 6.0)
    assert small < 0.5 <= 0.9 <= large
    assert bp.power(300, 5.0, n_depths=40) <= bp.power(300, 5.0, n_depths=1)


def test_power_is_the_least_favourable_band_share():
    """Bands 4 sd apart, 17 depths: one share is seen less often than the other, and that one counts."""
    quarter = bp.power(1500, 4.0, n_depths=17, shares=(0.25,))
    half = bp.power(1500, 4.0, n_depths=17, shares=(0.5,))
    assert quarter != half
    assert bp.power(1500, 4.0, n_depths=17) == min(quarter, half)


def test_power_matches_the_judge_on_samples_drawn_as_it_says():
    """What the power claims is the judge's hit rate on fresh samples of the same mixture (other seeds)."""
    rng = np.random.default_rng(7)
    hits = [
        bimodality(rng.standard_normal(800) + 5.0 * (rng.random(800) < 0.25)).verdict == "bimodal"
        for _ in range(60)
    ]
    assert abs(np.mean(hits) - bp.power(800, 5.0, shares=(0.25,), draws=60)) < 0.2


def test_power_is_nan_where_it_cannot_be_read():
    assert math.isnan(bp.power(10, 8.0))
    assert math.isnan(bp.power(float("nan"), 8.0))
    assert math.isnan(bp.power(500, float("nan")))
    assert bp.power(500, float("inf")) == bp.power(500, bp.MAX_SEPARATION) >= 0.95  # no spread: two spikes


def _result(values, prompt_ids=None):
    return bimodality(values, prompt_ids=prompt_ids)


def test_run_power_reads_the_best_depth_and_the_runs_own_spread():
    rng = np.random.default_rng(0)
    jump = paper_jump(576)
    few, many = _result(rng.normal(0.3, 0.02, 40)), _result(rng.normal(0.3, 0.02, 3000))
    both = bp.run_power([few, many], [0.02, 0.02], d=576)
    assert both == pytest.approx(bp.power(3000, jump / 0.02, n_depths=2))
    assert bp.run_power([few, many], [0.02, jump / 3.0], d=576) <= bp.run_power([few], [0.02], d=576) + 1.0
    wide = bp.run_power([many], [jump / 3.0], d=576)  # the run's spread leaves the bands 3 sd apart
    assert wide < 0.8 <= bp.run_power([many], [jump / 8.0], d=576)
    assert math.isnan(bp.run_power([many], [0.02, 0.03], d=576))  # one spread per depth
    assert math.isnan(bp.run_power([], [], d=576))
    assert bp.run_power([many], [0.0], d=576) >= 0.95  # no spread at all: the bands would be two spikes


def test_prompt_correlated_tokens_count_as_fewer_samples():
    """Tokens of one prompt share an offset: the judge reads ``n / deff`` of them, and so does the power."""
    rng = np.random.default_rng(3)
    ids = np.repeat(np.arange(20), 60)
    values = rng.normal(0.3, 0.02, 1200) + rng.normal(0, 0.03, 20)[ids]
    clustered = _result(values, prompt_ids=ids)
    assert clustered.n_effective == pytest.approx(1200 / design_effect(values, ids))
    assert clustered.n_effective < 200
    spread = float(values.std())
    assert bp.run_power([clustered], [spread], d=576) < bp.run_power([_result(values)], [spread], d=576)


NOT_FOUND = ("does not hold", "bimodal at 0 of 9 interior depths after gamma = 0.42 (Holm)")


def test_judge_power_keeps_a_powered_absence_and_weighs_the_rest():
    assert bp.judge_power(NOT_FOUND, 0.95)[0] == "does not hold"
    assert "would have seen" in bp.judge_power(NOT_FOUND, 0.95)[1]
    for weak in (0.79, 0.0, float("nan")):
        verdict, reason = bp.judge_power(NOT_FOUND, weak)
        assert verdict == "inconclusive" and "no evidence of absence" in reason
    shared = (
        "does not hold",
        "bimodal at 2 of 9 ..., where the permutation null or shuffled words are bimodal too",
    )
    assert bp.judge_power(shared, 0.0) == shared  # the modes were found and explained: not a power question
    assert bp.judge_power(("holds", "bimodal at 2 of 9"), 0.0) == ("holds", "bimodal at 2 of 9")


def _row(verdict_reason):
    verdict, reason = verdict_reason
    return Row("bimodality", "m", "trained", 1e8, "", 0.0, math.nan, math.nan, "", verdict, reason, "")


def test_the_weighing_turns_an_unpowered_absence_into_inconclusive_end_to_end():
    """A run whose Omega values are unimodal and widely spread: the paper's bands would sit 2 sd apart in it, which
    the three tests cannot separate, so its "does not hold" is no evidence of absence; a tight run keeps it."""
    rng = np.random.default_rng(1)
    jump = paper_jump(576)
    results, spreads = [], []
    for width in (jump / 2.0, jump / 2.0):
        values = rng.normal(0.3, width, 1500)
        results.append(_result(values))
        spreads.append(float(values.std()))
    judged = judge_bimodality(results, results)
    assert judged[0] == "does not hold"
    m = SimpleNamespace(bimodal=results, d_model=576)
    assert with_bimodality_power(_row(judged), m, spreads).verdict == "inconclusive"
    assert with_bimodality_power(_row(judged), m, None).verdict == "inconclusive"  # spread unknown
    tight = [s / 5 for s in spreads]
    assert with_bimodality_power(_row(judged), m, tight).verdict == "does not hold"


def test_the_power_table_is_power_on_its_grid_and_rises_along_both_axes():
    table = bp.power_table((100, 1500), (3.0, 8.0), n_depths=10)
    assert list(table.columns) == ["D = 3", "D = 8"] and list(table.index) == [100, 1500]
    assert table.loc[1500, "D = 8"] == bp.power(1500, 8.0, 10) and table.loc[100, "D = 3"] == bp.power(
        100, 3.0, 10
    )
    assert (
        table.loc[1500, "D = 8"] >= table.loc[100, "D = 8"]
        and table.loc[1500, "D = 8"] >= table.loc[1500, "D = 3"]
    )
