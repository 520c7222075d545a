"""The power of the bimodality judge: could it have seen the paper's solid band at this run's sample and noise?

``judge_bimodality`` says "does not hold" when no depth after the split is bimodal. That is evidence of absence only
where the judge would have found the paper's bimodality there. The paper puts the two bands at its liquid and solid
levels (0.69 and 0.90 at d = 5120, ``verdict.paper_jump(d)`` apart at width ``d``) and gives no band width, so the
bands are given the run's own spread: two Gaussians of the standard deviation ``s`` the run's Omega values have at
that depth (the whole sample's, an upper bound on a band's: conservative), ``paper_jump(d)`` apart, i.e. Ashman's
``D = paper_jump(d) / s``, the solid band holding a quarter or half of the tokens (``BAND_SHARES``; the least
favourable counts).

1. ``power(n_effective, separation, n_depths)``: the share of ``N_DRAWS`` seeded samples of ``round(n_effective)``
   independent values from that mixture that ``bimodality.bimodality`` calls "bimodal" at Holm's first level
   ``DIP_ALPHA / n_depths`` (the level the first depth to pass must meet); the least over ``BAND_SHARES``;
2. ``run_power(bimodal, spreads, d)``: the largest of those over the run's depths after the split (the claim needs
   one bimodal depth, so the best depth bounds the judge's power from below);
3. ``judge_power(verdict_reason, power)``: a "does not hold" that found no bimodal depth stands where that power
   reaches ``verdict.MIN_POWER``, else it is "inconclusive" (no evidence of absence); every other verdict stands;
4. ``band_spreads(cap, split)``: the spreads ``run_power`` reads, from a capture; ``power_table``: the power on a grid.

Introduced in: chapter 8 (the verdict's criteria, ``book/appendix/verdict_criteria.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from .bimodality import DIP_ALPHA, Bimodality, bimodality
from .verdict import MIN_POWER, paper_jump

if TYPE_CHECKING:
    import pandas as pd

    from ..capturing.results import Capture

BAND_SHARES = (0.25, 0.5)  # the solid band's share of the tokens (the paper gives none)
N_DRAWS = 40  # samples per share: a power of 0.8 is read within about +-0.06
MIN_SAMPLE = 20  # bimodality's smallest sample
MAX_SEPARATION = 50.0  # bands further apart (a run with no spread at a depth) are simulated this far apart
NOT_FOUND = "bimodal at 0 of"  # judge_bimodality's reason when no depth is bimodal


@lru_cache(maxsize=4096)
def _power(n: int, separation: float, n_depths: int, share: float, draws: int, seed: int) -> float:
    rng = np.random.default_rng([seed, n, n_depths, int(round(share * 100)), int(round(separation * 1000))])
    hits = 0
    for _ in range(draws):
        solid = rng.random(n) < share
        values = rng.standard_normal(n) + separation * solid
        hits += bimodality(values, dip_alpha=DIP_ALPHA / n_depths).verdict == "bimodal"
    return hits / draws


def power(
    n_effective: float,
    separation: float,
    n_depths: int = 1,
    shares: Sequence[float] = BAND_SHARES,
    draws: int = N_DRAWS,
    seed: int = 0,
) -> float:
    """The least, over ``shares``, of the share of ``draws`` samples of ``round(n_effective)`` values from
    ``(1 - w) N(0, 1) + w N(separation, 1)`` that ``bimodality`` calls "bimodal" at dip level ``DIP_ALPHA /
    n_depths``; a separation above ``MAX_SEPARATION`` (infinite: a run with no spread) is read as that. NaN for a
    sample under ``MIN_SAMPLE`` values or a separation that is NaN.

    Parameters
    ----------
    n_effective : float
        The run's effective sample size at the depth (``Bimodality.n_effective``).
    separation : float
        The bands' distance in units of their standard deviation (Ashman's ``D``).
    n_depths : int
        Depths the judge tests (Holm's first step divides the level by it).
    shares : sequence of float
        The solid band's shares of the tokens to try.
    draws : int
        Samples per share.
    seed : int
        Seed of the samples (the same arguments give the same power).

    Returns
    -------
    float
        The power, in [0, 1], or NaN.
    """
    n = int(round(n_effective)) if math.isfinite(n_effective) else 0
    if n < MIN_SAMPLE or math.isnan(separation) or n_depths < 1:
        return math.nan
    separation = round(min(float(separation), MAX_SEPARATION), 3)
    return min(_power(n, separation, n_depths, float(w), draws, seed) for w in shares)


def run_power(bimodal: Sequence[Bimodality], spreads: Sequence[float], d: int, seed: int = 0) -> float:
    """The judge's power for the paper's bands (``paper_jump(d)`` apart, each of the run's spread) at the best of
    the run's depths after the split: ``max_i power(n_effective_i, paper_jump(d) / s_i, len(bimodal))``, ``s_i`` the
    standard deviation of the run's Omega values at depth ``i`` (``spreads``, one per ``bimodal`` result; 0: the
    bands would be two spikes). NaN without depths, with spreads of another length, or where no depth gives a
    power."""
    if not bimodal or len(spreads) != len(bimodal):
        return math.nan
    jump = paper_jump(d)

    def promise(pair: tuple[Bimodality, float]) -> float:  # sqrt(n_e) / s: the likeliest depth first
        result, spread = pair
        return math.sqrt(result.n_effective) / spread if spread > 0 else 0.0

    depths = sorted(zip(bimodal, spreads, strict=True), key=promise, reverse=True)
    best = math.nan
    for b, s in depths:  # stop once a depth reaches MIN_POWER
        found = power(b.n_effective, jump / s if s > 0 else math.inf, len(bimodal), seed=seed)
        if math.isfinite(found) and (math.isnan(best) or found > best):
            best = found
        if best >= MIN_POWER:
            break
    return best


def judge_power(verdict_reason: tuple[str, str], power_: float) -> tuple[str, str]:
    """A bimodality "does not hold" that found no bimodal depth (``NOT_FOUND``) stands where the judge's power for
    the paper's bands (``run_power``) reaches ``MIN_POWER``; otherwise, or where the power is unknown (NaN), it is
    "inconclusive". Every other verdict stands (a bimodality the nulls or the twin share is not a power question)."""
    verdict, reason = verdict_reason
    if verdict != "does not hold" or NOT_FOUND not in reason:
        return verdict_reason
    shown = f"{power_:.0%}" if math.isfinite(power_) else "unknown"
    if math.isfinite(power_) and power_ >= MIN_POWER:
        return (
            verdict,
            f"{reason}; the judge would have seen the paper's two bands at this run's spread ({shown})",
        )
    return "inconclusive", (
        f"{reason}; but the judge's power for the paper's two bands at this run's sample and spread is {shown} "
        f"(below {MIN_POWER:.0%}): no evidence of absence"
    )


def band_spreads(cap: Capture, split: float) -> list[float]:
    """The standard deviation of the run's Omega values (first position removed) at each depth after ``split``:
    the depths, tokens and order of ``study.measure``'s ``bimodal`` list, one spread per result."""
    from . import omega, spectral_contrasts

    _, after = spectral_contrasts.depth_windows(cap.gamma, split)
    return [
        float(np.std(omega.samples(cap, layer, drop_first=True)[0])) for layer in cap.depths[after].tolist()
    ]


def power_table(
    n_effectives: Sequence[float], separations: Sequence[float], n_depths: int = 10
) -> pd.DataFrame:
    """``power(n, D, n_depths)`` on a grid, for the criteria page: one row per effective sample size ``n``
    (index ``effective tokens``), one column per separation ``D`` (``"D = 4"``)."""
    import pandas as pd

    return pd.DataFrame(
        [[power(n, sep, n_depths) for sep in separations] for n in n_effectives],
        index=pd.Index(list(n_effectives), name="effective tokens"),
        columns=[f"D = {sep:g}" for sep in separations],
    )
