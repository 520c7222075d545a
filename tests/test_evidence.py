"""What a verdict row is evidence of (``study.evidence``, ``analysis.verdict.uninformative``, ``jump_power``,
``judge_power``): a trained "holds" its twin shares is uninformative, a "does not hold" without power is
inconclusive, an encoder is another kind of model."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest
from scipy.stats import norm

from latentbook.analysis import transition, verdict
from latentbook.analysis.planted_statistics import planted_profile
from latentbook.study import evidence


def _row(
    claim: str, word: str, run: str = "trained", parameters: float = 135e6, reason: str = ""
) -> verdict.Row:
    return verdict.Row(claim, "m", run, parameters, "", 0.1, 0.0, 0.2, "", word, reason or word, "")


def _fit(amplitude_ci: tuple[float, float]):
    return types.SimpleNamespace(amplitude_ci=amplitude_ci)


def test_a_trained_holds_that_the_twin_holds_too_is_uninformative():
    assert verdict.uninformative(("holds", "why"), "holds")[0] == "uninformative"
    assert "twin holds it too" in verdict.uninformative(("holds", "why"), "holds")[1]
    for twin_word in ("does not hold", "inconclusive", "not testable here", None):
        assert verdict.uninformative(("holds", "why"), twin_word) == ("holds", "why")
    for word in ("does not hold", "inconclusive", "not testable here"):
        assert verdict.uninformative((word, "why"), "holds") == (word, "why")
    assert "uninformative" in verdict.VERDICTS and set(verdict.VERDICT_MEANINGS) == set(verdict.VERDICTS)


def test_weigh_marks_only_trained_rows_their_twin_shares():
    m = types.SimpleNamespace(d_model=576, standardised=None, standardised_clean=None)
    rows = [
        _row("stays_liquid", "holds"),
        _row("attention_cooling", "holds"),
        _row("bimodality", "does not hold"),
    ]
    twin_rows = [
        _row("stays_liquid", "holds", "null: random weights"),
        _row("attention_cooling", "does not hold", "null: random weights"),
        _row("bimodality", "does not hold", "null: random weights"),
    ]
    weighed = evidence.weigh(rows, m, None, twin_rows)
    assert [r.verdict for r in weighed] == ["uninformative", "holds", "does not hold"]
    assert [r.verdict for r in evidence.weigh(twin_rows, m, None, twin_rows)] == [
        "holds",
        "does not hold",
    ] * 1 + ["does not hold"]  # a null is judged without a twin: its own "holds" stands
    assert [r.verdict for r in evidence.weigh(rows, m)] == [
        "holds",
        "holds",
        "does not hold",
    ]  # no twin known


def test_an_encoder_is_another_kind_of_model_for_the_sized_claims_only():
    m = types.SimpleNamespace(d_model=384, standardised=None, standardised_clean=None)
    rows = [
        _row("stays_liquid", "holds", parameters=23e6),
        _row("attention_cooling", "holds", parameters=23e6),
    ]
    scopes = [r.scope for r in evidence.weigh(rows, m, encoder=True)]
    assert scopes == [verdict.OTHER_KIND, verdict.ANY_SIZE]
    assert evidence.is_encoder("minilm-l6") and evidence.is_encoder("random:minilm-l6")
    assert not evidence.is_encoder("smollm2-135m") and not evidence.is_encoder("random:llama-tiny")
    assert evidence.is_encoder("some/folder", "bert") and not evidence.is_encoder("some/folder", "llama")


def test_jump_power_is_the_normal_power_of_the_judges_lower_end():
    z = norm.ppf(0.975)
    fit, twin = _fit((0.10, 0.18)), _fit((-0.02, 0.03))
    se = 0.08 / (2 * z)
    # an effect whose expected lower end sits exactly on the bar: half the time
    at_bar = 0.1 + 0.03 + z * se
    assert verdict.jump_power(fit, twin, at_bar, 0.1) == pytest.approx(0.5, abs=1e-9)
    # one standard error more: Phi(1)
    assert verdict.jump_power(fit, twin, at_bar + se, 0.1) == pytest.approx(norm.cdf(1.0), abs=1e-9)
    # a twin whose jump is negative asks only for the bar
    assert verdict.jump_power(fit, _fit((-0.2, -0.1)), at_bar - 0.03, 0.1) == pytest.approx(0.5, abs=1e-9)
    assert verdict.jump_power(fit, None, at_bar - 0.03, 0.1) == pytest.approx(0.5, abs=1e-9)
    # wider intervals, less power
    assert verdict.jump_power(_fit((0.0, 0.4)), twin, 0.3, 0.1) < verdict.jump_power(fit, twin, 0.3, 0.1)
    assert math.isnan(verdict.jump_power(None, twin, 0.3, 0.1))
    assert math.isnan(verdict.jump_power(_fit((math.nan, 0.2)), twin, 0.3, 0.1))
    assert math.isnan(verdict.jump_power(fit, _fit((0.0, math.nan)), 0.3, 0.1))


def test_judge_power_keeps_a_does_not_hold_only_with_power_and_the_bar_excluded():
    not_found = ("does not hold", "jump +0.050 [0.020, 0.080] is not above 0.102")
    assert verdict.judge_power(not_found, 0.5, 0.204, 0.08, 0.102)[0] == "inconclusive"
    assert "50%" in verdict.judge_power(not_found, 0.5, 0.204, 0.08, 0.102)[1]
    assert verdict.judge_power(not_found, math.nan, 0.204, 0.08, 0.102)[0] == "inconclusive"
    assert verdict.judge_power(not_found, verdict.MIN_POWER, 0.204, 0.08, 0.102)[0] == "does not hold"
    # power, but the interval still reaches the bar (below the paper's jump, not below the bar): no evidence
    assert verdict.judge_power(not_found, 0.95, 0.204, 0.15, 0.102)[0] == "inconclusive"
    assert verdict.judge_power(not_found, 0.95, 0.204, 0.102, 0.102)[0] == "inconclusive"
    assert verdict.judge_power(not_found, 0.95, 0.204, math.nan, 0.102)[0] == "inconclusive"
    excluded = ("does not hold", "a transition at gamma_c = 0.800 [0.780, 0.820], outside 0.42 +- 0.1")
    assert verdict.judge_power(excluded, 0.1, 0.204, 0.3, 0.102) == excluded
    assert verdict.judge_power(("holds", "x"), 0.1, 0.204, 0.3, 0.102) == ("holds", "x")
    untested = ("inconclusive", "no transition")
    assert verdict.judge_power(untested, 0.1, 0.204, 0.3, 0.102) == untested


def test_largest_jump_is_the_runs_own_upper_end():
    assert verdict.largest_jump(_fit((0.1, 0.25))) == pytest.approx(0.25)
    assert math.isnan(verdict.largest_jump(None))
    assert math.isnan(verdict.largest_jump(_fit((0.1, math.nan))))


def _judged_rise(seed: int, n_layers: int, layers_wide: float, jump: float) -> list[str]:
    """The critical-depth and jump rows of a profile of ``m_z`` rising by ``jump`` over ``layers_wide`` layers (10-90 %
    of a logistic) at 0.42, against a flat twin, judged and weighed as the verdict table does (d = 576)."""
    rng = np.random.default_rng(seed)
    width = layers_wide / n_layers / (2 * np.log(9))
    p = planted_profile(rng, n_layers, "flat", jump=jump, gamma_c=0.42, width=width, base=0.0)
    t = planted_profile(rng, n_layers, "flat", base=0.0)

    def fit(q):
        return transition.critical_depth(
            q.gamma, q.m, draws=q.draws, n_boot=100, min_amplitude=verdict.MIN_TRANSITION
        )

    trans, twin = fit(p), fit(t)
    m = types.SimpleNamespace(d_model=576, standardised=trans, standardised_clean=trans)
    tw = types.SimpleNamespace(d_model=576, standardised=twin, standardised_clean=twin)
    critical = verdict.judge_critical_depth(trans, len(p.gamma), twin)
    jump = verdict.judge_jump(trans, twin, verdict.min_jump(576))
    rows = [
        _row("critical_depth", critical[0], reason=critical[1]),
        _row("omega_jump", jump[0], reason=jump[1]),
    ]
    return [r.verdict for r in evidence.weigh(rows, m, tw)]


@pytest.mark.parametrize("n_layers, layers_wide", [(30, 2), (64, 3)])
def test_the_papers_jump_spread_over_layers_is_never_judged_absent(n_layers, layers_wide):
    """The paper's jump (0.21 at d = 5120, 0.204 at 576) rising over two layers of 30 or three of 64 at 0.42: the
    judge alone says "does not hold" on 5 of these 10 jump rows in both; weighed by its power, never."""
    words = [
        w for seed in range(10) for w in _judged_rise(seed, n_layers, layers_wide, verdict.paper_jump(576))
    ]
    assert "does not hold" not in words
    assert words.count("holds") >= 8  # most are still found


def test_a_flat_profile_keeps_its_does_not_hold_where_the_judge_has_power():
    """No jump at all, at the planted noise: the judge has the power to see the paper's jump, so the absence stands
    (a rule that made every "does not hold" inconclusive would fail here)."""
    words = [_judged_rise(seed, 30, 0, 0.0)[1] for seed in range(6)]
    assert words.count("does not hold") >= 5


def test_an_m_z_rows_holds_says_heavy_tails_pass_it_too_and_nothing_else_changes():
    """Rule 5: the m_z rows' "holds" carries ``TAIL_NOTE`` (heavy-tailed coordinates with no object pass them on
    planted models); their other verdicts and every other row's "holds" keep their reason."""
    m = types.SimpleNamespace(d_model=576, standardised=None, standardised_clean=None)
    rows = [_row(claim, "holds", "null: random weights") for claim in sorted(verdict.TAIL_BLIND_CLAIMS)]
    rows += [_row("spectral_concentration", "holds"), _row("critical_depth", "inconclusive")]
    weighed = evidence.weigh(rows, m)
    assert all(verdict.TAIL_NOTE in r.reason and r.verdict == "holds" for r in weighed[:3])
    assert [r.reason for r in weighed[3:]] == ["holds", "inconclusive"]
    assert verdict.TAIL_BLIND_CLAIMS == frozenset(evidence.JUMP_CLAIMS)
