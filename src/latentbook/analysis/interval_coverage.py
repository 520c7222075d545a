"""Interval coverage: how often each nominal 95 % interval the verdict uses covers a planted truth, and how wide
it is against the estimator's own spread.

Usage: ``table = coverage(n_seeds=100, seed=0)`` (one row per estimator: observed coverage with its Wilson
interval, and ``spread_ratio``); ``COVERAGE_TARGET`` and ``SPREAD_TARGET`` are the bands each must fall in.
The planted data sets are those of ``calibration`` (``planted_profile``, ``planted_concentration``), with the real
models' nuisances: tokens correlated within prompts, a sink token, edge depths, a massive coordinate.
Introduced in: the coverage appendix (book/appendix/coverage.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import omega_profiles, transition, verdict
from .calibration import LAYERS, planted_concentration
from .planted_statistics import BACKGROUNDS, planted_profile
from .resampling import Z95

if TYPE_CHECKING:
    import pandas as pd

Case = tuple[float, float, float, float]  # one planted data set: (truth, estimate, low, high)


def _profile_case(rng: np.random.Generator, n_prompts: int = 64) -> Case:
    """Omega of tokens clustered within prompts (a prompt offset with intraclass correlation 0.1-0.4, a sink
    token 0.3 above the rest at position 0, lengths 8-40): the population mean, ``omega_profiles.profile``'s
    estimate and its interval."""
    lengths = rng.integers(8, 41, n_prompts)
    ids = np.repeat(np.arange(n_prompts), lengths)
    positions = np.concatenate([np.arange(n) for n in lengths])
    icc = rng.uniform(0.1, 0.4)
    values = 0.4 + 0.03 * (
        np.sqrt(icc) * rng.standard_normal(n_prompts)[ids] + np.sqrt(1 - icc) * rng.standard_normal(len(ids))
    )
    values = values + 0.3 * (positions == 0)
    # the population mean over prompts of random length: E[sum of a prompt's values] / E[length]
    truth = 0.4 + 0.3 / np.mean(np.arange(8, 41))
    prof = omega_profiles.profile(values[None, :], prompt_ids=ids, n_boot=400, seed=int(rng.integers(2**31)))
    return truth, float(prof.m[0]), float(prof.low[0]), float(prof.high[0])


def _transition_case(rng: np.random.Generator) -> tuple[Case, Case]:
    """A planted jump with the nuisances: (truth, estimate, low, high) of ``gamma_c`` and of the jump."""
    gamma_c, jump = rng.uniform(0.3, 0.7), rng.uniform(0.15, 0.25)
    p = planted_profile(
        rng, int(rng.choice(LAYERS)), str(rng.choice(BACKGROUNDS)), jump=jump, gamma_c=gamma_c
    )
    t = transition.critical_depth(p.gamma, p.m, draws=p.draws, n_boot=100)
    return (gamma_c, t.gamma_c, *t.ci), (jump, t.amplitude, *t.amplitude_ci)


COVERAGE_TARGET = (0.92, 0.98)  # a nominal 95 % interval's observed coverage over 100 or more planted seeds
SPREAD_TARGET = (0.8, 1.25)  # an interval's implied spread over the estimate's spread around the truth


def _concentration_coverage_case(rng: np.random.Generator) -> tuple[Case, Case]:
    """A planted change of the spectrum (``planted_concentration``, PR ratio 0.5-1.0 nominal, with the massive
    coordinate and the correlations): (truth, estimate, low, high) of the PR contrast and of the effective-rank
    contrast, the truth from the population spectra."""
    from . import ranks, spectral_contrasts

    planted = planted_concentration(rng, rng.uniform(0.5, 1.0), ranks.participation_ratio)
    pr = spectral_contrasts.pr_contrast_of_samples(*planted.samples())
    rank = spectral_contrasts.effective_rank_contrast_of_samples(*planted.samples())
    return (
        (planted.population_contrast(ranks.participation_ratio), pr.ratio, *pr.ci),
        (planted.population_contrast(ranks.effective_rank), rank.ratio, *rank.ci),
    )


def spread_ratio(cases: list[Case], z: float = Z95, log: bool = False) -> float:
    """An interval's spread against the estimator's: ``median((high - low) / 2z) / (1.4826 MAD(estimate - truth))``
    over planted data sets (on log values for a ratio, ``log=True``). About 1 when the interval is as wide as the
    estimator varies from one data set to the next; below 1 too narrow, above 1 too wide. The MAD (a normal s.d.
    when the errors are normal) keeps the few data sets a bias carries far from setting the scale: an interval of
    the right width that misses because of a bias shows low coverage and a spread near 1."""
    truth, estimate, low, high = np.asarray(cases, dtype=np.float64).T
    if log:
        truth, estimate, low, high = np.log(truth), np.log(estimate), np.log(low), np.log(high)
    error = estimate - truth
    scale = 1.4826 * np.median(np.abs(error - np.median(error)))
    return float(np.median((high - low) / (2 * z)) / scale)


def coverage(n_seeds: int = 100, seed: int = 0) -> pd.DataFrame:
    """How often each nominal 95 % interval the verdict uses covers a planted truth, over ``n_seeds`` data sets.

    Rows: ``m(gamma)`` (``omega_profiles.profile``, prompts resampled, tokens correlated within prompts, a sink token),
    ``gamma_c`` and the jump (``transition.critical_depth`` on planted profiles with the real models' nuisances),
    the PR and effective-rank contrasts across depths (``planted_concentration``: a massive coordinate, tokens
    correlated within prompts and across depths, ``n`` close to ``d``).
    Columns: ``estimator``, ``nominal``, ``observed``, ``ci_low``, ``ci_high`` (Wilson), ``n``, ``on target``
    (``observed`` within ``COVERAGE_TARGET``), ``spread`` (``spread_ratio``: the interval's width against the
    estimator's spread around the truth) and ``spread on target`` (within ``SPREAD_TARGET``).
    """
    import pandas as pd

    rng = np.random.default_rng(seed)
    profiles = [_profile_case(rng) for _ in range(n_seeds)]
    transitions = [_transition_case(rng) for _ in range(n_seeds)]
    spectra_cases = [_concentration_coverage_case(rng) for _ in range(n_seeds)]
    rows = []
    for name, cases, log in (
        ("m(gamma): omega_profiles.profile, prompt bootstrap", profiles, False),
        ("gamma_c: transition.critical_depth", [c for c, _ in transitions], False),
        ("jump: transition.critical_depth", [c for _, c in transitions], False),
        (
            "PR after / before: spectral_contrasts.pr_contrast, prompt jackknife",
            [c for c, _ in spectra_cases],
            True,
        ),
        (
            "effective rank after / before: spectral_contrasts.effective_rank_contrast, "
            "bias-corrected group jackknife",
            [c for _, c in spectra_cases],
            True,
        ),
    ):
        observed = float(np.mean([low <= truth <= high for truth, _, low, high in cases]))
        low, high = verdict.wilson_interval(observed, len(cases))
        spread = spread_ratio(cases, log=log)
        rows.append(
            {
                "estimator": name,
                "nominal": 0.95,
                "observed": observed,
                "ci_low": low,
                "ci_high": high,
                "n": len(cases),
                "on target": bool(COVERAGE_TARGET[0] <= observed <= COVERAGE_TARGET[1]),
                "spread": spread,
                "spread on target": bool(SPREAD_TARGET[0] <= spread <= SPREAD_TARGET[1]),
            }
        )
    return pd.DataFrame(rows)
