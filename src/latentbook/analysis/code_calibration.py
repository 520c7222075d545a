"""Calibration of the two readings of issue 54 on token clouds with a known answer (``cloud_families``): how often
the learned-basis Omega finds a code (``learned_basis``) and how often the prototype test calls prototypes
(``prototypes``), per family, with the Wilson interval of each rate.

The project's standard: a criterion may call the effect on at most 5 % of planted-absent cases, shown by a Wilson
upper bound of at most 5 % (74 cases with none called), and must call it on at least 80 % of planted-present ones.

Measured (74 cases per family, seeds 0-73): prototypes called on 0 of 74 Gaussian, t3-coordinate and Student-t
clouds (3 and 5 df; Wilson upper bound 4.9 %), on 74 of 74 clouds of 4 prototypes and 65 of 74 (88 %, Wilson
78-93 %) of 8 prototypes 8 s.d. apart; the learned-basis code found on 0 of 74 of each absent family and 74 of 74
rotated codes at strengths 0.6 and 0.75.

Usage: ``calibrate("prototypes", n_cases=74)`` or ``calibrate("learned_basis", n_cases=74)``: one row per family.

Introduced in: chapters 3 and 6 (issue 54).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError
from . import cloud_families as cf
from .resampling import wilson_interval

if TYPE_CHECKING:
    import pandas as pd

# (family, planted present?, cloud maker of a seed)
Family = tuple[str, bool, Callable[[int], cf.Cloud]]


def strength_for_separation(sep: float, d: int = cf.WIDTH) -> float:
    """``rotated_prototypes``'s strength for prototypes ``sep`` noise s.d. apart."""
    return sep / np.sqrt(2 * d)


def prototype_families() -> list[Family]:
    """Absent: isotropic Gaussian and t3 coordinates, one anisotropic Student-t cloud (3 and 5 degrees of freedom);
    present: 4 and 8 prototypes 8 noise s.d. apart (above the BBP threshold, about 4 s.d. here)."""
    return [
        ("gaussian", False, lambda s: cf.noise("gaussian", seed=s)),
        ("t3 coordinates", False, lambda s: cf.noise("t3", seed=s)),
        ("t cloud, 3 df", False, lambda s: cf.t_cloud(3, seed=s)),
        ("t cloud, 5 df", False, lambda s: cf.t_cloud(5, seed=s)),
        (
            "4 prototypes, 8 s.d.",
            True,
            lambda s: cf.rotated_prototypes(strength_for_separation(8), 4, seed=s),
        ),
        (
            "8 prototypes, 8 s.d.",
            True,
            lambda s: cf.rotated_prototypes(strength_for_separation(8), 8, seed=s),
        ),
    ]


def learned_basis_families() -> list[Family]:
    """Absent: Gaussian, Laplace, t3, gated and outlier coordinates, one t cloud (3 df); present: a rotated
    3-of-32 code at strengths 0.75 and 0.6 (``cloud_families``)."""
    absent = [
        (f"{kind} coordinates", False, lambda s, k=kind: cf.noise(k, seed=s)) for kind in cf.NOISE_KINDS
    ]
    return absent + [
        ("t cloud, 3 df", False, lambda s: cf.t_cloud(3, seed=s)),
        ("rotated code, strength 0.75", True, lambda s: cf.rotated_code(0.75, seed=s)),
        ("rotated code, strength 0.6", True, lambda s: cf.rotated_code(0.6, seed=s)),
    ]


def _call(which: str, cloud: cf.Cloud, seed: int) -> tuple[bool, float]:
    """(the criterion's call, its statistic) on one cloud."""
    if which == "prototypes":
        from .prototypes import prototype_test

        test = prototype_test(cloud.x, cloud.prompt_ids, seed=seed, n_boot=500, count_spikes=False)
        return test.prototypes, test.gain
    from .learned_basis import learned_profile

    prof = learned_profile([cloud.x], cloud.prompt_ids, n_boot=500, seed=seed)
    return bool(prof.found[0]), float(prof.profile.m[0] - prof.gaussian)


def calibrate(which: str, n_cases: int = 74, seed: int = 0) -> pd.DataFrame:
    """Rate of calls per family over ``n_cases`` seeded clouds, with its Wilson 95 % interval.

    Parameters
    ----------
    which : {"prototypes", "learned_basis"}
        The criterion: ``PrototypeTest.prototypes`` or ``LearnedProfile.found``.
    n_cases : int
        Clouds per family (74 with none called bounds a false rate by 5 %).
    seed : int
        Offset of the clouds' seeds.

    Returns
    -------
    pandas.DataFrame
        ``family``, ``present``, ``cases``, ``called``, ``rate``, ``wilson_low``, ``wilson_high``, ``meets``
        (absent: Wilson upper bound <= 5 %; present: rate >= 80 %), the median statistic and seconds per case.
    """
    import pandas as pd

    if which not in ("prototypes", "learned_basis"):
        raise InvalidInputError(f"which must be 'prototypes' or 'learned_basis', got {which!r}.")
    families = prototype_families() if which == "prototypes" else learned_basis_families()
    rows = []
    for name, present, make in families:
        calls, stats, start = [], [], time.perf_counter()
        for case in range(n_cases):
            called, stat = _call(which, make(seed + case), seed + case)
            calls.append(called)
            stats.append(stat)
        rate = float(np.mean(calls))
        low, high = wilson_interval(rate, n_cases)
        rows.append(
            {
                "family": name,
                "present": present,
                "cases": n_cases,
                "called": int(np.sum(calls)),
                "rate": rate,
                "wilson_low": low,
                "wilson_high": high,
                "meets": rate >= 0.8 if present else high <= 0.05,
                "median_statistic": float(np.median(stats)),
                "seconds_per_case": (time.perf_counter() - start) / n_cases,
            }
        )
    return pd.DataFrame(rows)
