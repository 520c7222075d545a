"""The calibration harness: each judge of the verdict meets its targets on planted families (claim present and
absent, with the real models' nuisances), and the harness itself catches a judge that is too lenient."""

from __future__ import annotations

import numpy as np
import pytest

import latentbook as lb
from latentbook.analysis import calibration, interval_coverage, planted_statistics, verdict


@pytest.mark.parametrize(
    ("claims", "n_cases"),
    [
        (("critical_depth", "omega_jump", "stays_liquid", "spectral_concentration"), 20),
        (("bimodality", "effective_rank"), 6),
    ],
)
def test_every_judge_meets_its_targets_on_planted_families(claims, n_cases):
    table = calibration.calibrate_statistics(n_cases=n_cases, seed=11, claims=claims, n_token_cases=n_cases)
    assert set(table["claim"]) == set(claims)
    assert {"present", "absent"} <= set(table["planted"])
    absent = table[table["planted"] == "absent"]
    present = table[table["planted"] == "present"]
    assert (absent["holds"] <= calibration.MAX_FALSE_HOLDS).all(), absent
    assert (present["holds"] >= calibration.MIN_FOUND).all(), present
    assert calibration.meets_targets(table).all()
    rates = table[list(verdict.VERDICTS)].sum(axis=1)
    assert np.allclose(rates, 1.0)
    assert (table["holds_ci_low"] <= table["holds"]).all() and (
        table["holds"] <= table["holds_ci_high"]
    ).all()


def test_a_judge_that_rewards_imprecision_fails_its_calibration(monkeypatch):
    """The old rule ("holds" when the interval merely meets 0.42 +- 0.1) on jumps far from 0.42 whose interval is
    stretched: the harness must flag it."""

    def overlap_rule(trans, n_depths, twin_trans=None):
        if trans is None or not trans.has_transition:
            return "does not hold", ""
        return ("holds", "") if trans.ci[0] - 0.3 <= 0.52 and trans.ci[1] >= 0.32 else ("does not hold", "")

    monkeypatch.setattr(verdict, "judge_critical_depth", overlap_rule)
    table = calibration.calibrate_statistics(n_cases=10, seed=3, claims=("critical_depth",))
    assert not calibration.meets_targets(table)["critical_depth"]


def test_planted_profiles_carry_the_nuisances():
    rng = np.random.default_rng(0)
    p = planted_statistics.planted_profile(rng, 30, "flat", jump=0.2, gamma_c=0.5, base=0.5)
    assert p.m.shape == (31,) and p.draws.shape == (planted_statistics.N_DRAWS, 31)
    assert abs(p.m[0] - p.m[2]) >= 0.09  # the rise out of the embedding
    assert np.mean(p.m[16:29]) - np.mean(p.m[2:15]) == pytest.approx(0.2, abs=0.03)
    assert p.draws.std(0).max() < np.abs(np.diff(p.m[2:-1])).mean()  # sampling noise below the misfit
    with pytest.raises(lb.InvalidInputError):
        planted_statistics.background(p.gamma, "wiggle", rng)
    with pytest.raises(lb.InvalidInputError):
        calibration.calibrate_statistics(n_cases=0)


def test_interval_coverage_on_planted_truths():
    """Nominal 95 % intervals on prompt-clustered tokens and on profiles with the real models' nuisances. The
    jump's interval covered 0.69-0.77 while it was centred on the two-line gap alone, which a curved background
    biases; with the local fits' own bootstrap intervals in its hull it covers 0.95 (100 seeds, the appendix's)
    and 0.97 here. The effective rank's covered 0.68 before its jackknife bias correction (n ~ d biases it) and
    0.93 after."""
    table = interval_coverage.coverage(n_seeds=60, seed=5).set_index("estimator")
    assert table["nominal"].eq(0.95).all() and table["n"].eq(60).all()
    observed = table["observed"]
    assert 0.88 <= observed["m(gamma): omega_profiles.profile, prompt bootstrap"] <= 1.0
    assert observed["gamma_c: transition.critical_depth"] >= 0.9
    assert 0.9 <= observed["jump: transition.critical_depth"] <= 1.0
    # the cross-prompt PR's jackknife (the plug-in PR's covered ~0.8: biased where the PR changes at n ~ d)
    assert 0.9 <= observed["PR after / before: spectral_contrasts.pr_contrast, prompt jackknife"] <= 1.0
    rank = "effective rank after / before: spectral_contrasts.effective_rank_contrast, bias-corrected group jackknife"
    assert 0.88 <= observed[rank] <= 1.0
    low, high = interval_coverage.COVERAGE_TARGET
    assert table["on target"].equals((observed >= low) & (observed <= high))
    # the prompt-resampled intervals are as wide as their estimators vary (measured: 0.91 and 1.14 over the
    # appendix's 100 seeds; the effective rank's 1.04 once corrected; the jump's 1.01 there, 1.42 on these 60:
    # it was 0.62, short as well as biased, before the local intervals)
    spread = table["spread"]
    assert 0.8 <= spread["jump: transition.critical_depth"] <= 1.6
    assert 0.8 <= spread[rank] <= 1.3
    assert 0.8 <= spread["m(gamma): omega_profiles.profile, prompt bootstrap"] <= 1.25
    assert 0.8 <= spread["PR after / before: spectral_contrasts.pr_contrast, prompt jackknife"] <= 1.3
    low, high = interval_coverage.SPREAD_TARGET
    assert table["spread on target"].equals((spread >= low) & (spread <= high))


def test_spread_ratio_reads_the_width_against_the_estimators_noise():
    """Intervals of the right width read 1, twice too wide 2, on log values for ratios; 5 % of data sets
    carried far by a bias move it by less than 10 % (the MAD), but they do lower coverage."""
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.2, 0.8, 2000)
    sd = 0.03
    estimate = truth + rng.normal(0, sd, 2000)
    half = interval_coverage.Z95 * sd
    cases = list(zip(truth, estimate, estimate - half, estimate + half))
    assert interval_coverage.spread_ratio(cases) == pytest.approx(1.0, abs=0.05)
    wide = [(t, e, e - 2 * half, e + 2 * half) for t, e, *_ in cases]
    assert interval_coverage.spread_ratio(wide) == pytest.approx(2.0, abs=0.1)
    biased = [(t, e + 0.5 * (i % 20 == 0), lo, hi) for i, (t, e, lo, hi) in enumerate(cases)]
    assert interval_coverage.spread_ratio(biased) == pytest.approx(1.0, abs=0.1)
    ratio = np.exp(rng.uniform(-3, 3, 2000))  # ratios from 1/20 to 20: errors scale with them
    logged = [
        (r, r * np.exp(e - t), r * np.exp(lo - t), r * np.exp(hi - t))
        for r, (t, e, lo, hi) in zip(ratio, cases)
    ]
    assert interval_coverage.spread_ratio(logged, log=True) == pytest.approx(1.0, abs=0.05)
    assert interval_coverage.spread_ratio(logged) != pytest.approx(1.0, abs=0.2)  # the log scale matters
