"""Rank correlations across the ladder: does a diagnostic predict capability, beyond size?

1. ``spearman_ci(x, y)``: Spearman's rho across the rungs with a bootstrap interval over rungs and an exact
   permutation p-value; ``verdict`` turns it into "predicts capability", "does not" or "inconclusive";
2. ``partial_spearman_ci(x, y, z)``: the same controlling for ``z`` (log parameter count: capability ranks
   almost like size), with a Freedman–Lane permutation p-value; ``partial_verdict`` judges it on its
   Holm-adjusted p (``analysis.bimodality.holm``, across the diagnostics), ``signed_decision`` says on which side.

Introduced in: chapter 7.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..analysis.resampling import percentile_interval
from ..errors import InvalidInputError

ALPHA = 0.05  # the family-wise level of the Holm-adjusted partial correlations of chapter 7


def _ranks(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(x)


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    rx, ry = _ranks(x), _ranks(y)
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


@dataclass(frozen=True)
class RankCorrelation:
    """Spearman's rho across the ladder with a bootstrap interval over rungs and a permutation p-value."""

    rho: float
    ci: tuple[float, float]
    p_value: float  # two-sided, exact over all permutations (n <= 8) or 20000 random ones
    n: int


def spearman_ci(x, y, n_boot: int = 4000, seed: int = 0, level: float = 0.95) -> RankCorrelation:
    """Spearman's ``rho`` of ``x`` and ``y`` (one value per rung), percentile bootstrap over rungs.

    Resamples in which either variable is constant (rho undefined) are dropped. With few rungs the
    interval is wide: that width is the honest uncertainty of a ladder of that many models.

    The interval is ``scipy.stats.bootstrap(paired=True, method="percentile")`` draw for draw (the same
    ``rng.integers`` call on the seed's generator), except that scipy keeps a resample whose rho is undefined and
    its interval is then NaN; the p-value is ``scipy.stats.permutation_test``'s exact one
    (``permutation_type="pairings"``) up to 8 rungs, while beyond that the 20000 random permutations continue the
    bootstrap's generator and, unlike scipy's, count no +1 for the observed order (``tests/test_ladder.py``).
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 3:
        raise InvalidInputError(f"x and y need the same 1-d shape with >= 3 rungs, got {x.shape}, {y.shape}.")
    from scipy.stats import rankdata

    rho = _spearman(x, y)
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(x), (n_boot, len(x)))
    draws = _pearson_rows(rankdata(x[pick], axis=1), rankdata(y[pick], axis=1))
    draws = draws[np.isfinite(draws)]
    low, high = percentile_interval(draws, level) if len(draws) else (np.nan, np.nan)
    if len(x) <= 8:
        shuffled = y[np.array(list(itertools.permutations(range(len(x)))))]
    else:
        shuffled = np.array([rng.permutation(y) for _ in range(20000)])
    perms = _pearson_rows(np.broadcast_to(_ranks(x), shuffled.shape), rankdata(shuffled, axis=1))
    p = float(np.mean(np.abs(perms) >= abs(rho) - 1e-12)) if np.isfinite(rho) else float("nan")
    return RankCorrelation(rho, (float(low), float(high)), p, len(x))


@dataclass(frozen=True)
class PartialRankCorrelation:
    """Partial Spearman rho of ``x`` and ``y`` given ``z`` across the ladder, interval and permutation p-value."""

    rho: float
    ci: tuple[float, float]
    p_value: float  # two-sided, Freedman–Lane: exact over all permutations (n <= 8) or 20000 random ones
    n: int
    rho_xz: float  # plain Spearman rho of x with the control
    rho_yz: float  # plain Spearman rho of y with the control
    p_floor: float  # the smallest p any rank order of y could reach with these x and z (n <= 7; NaN beyond)


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row of ``a`` with the same row of ``b`` (NaN where a row is constant)."""
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    norm = np.sqrt(np.sum(a * a, axis=-1) * np.sum(b * b, axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 1e-12, np.sum(a * b, axis=-1) / np.where(norm > 0, norm, 1), np.nan)


def _partial_rows(rx: np.ndarray, ry: np.ndarray, rz: np.ndarray) -> np.ndarray:
    """``(r_xy - r_xz r_yz) / sqrt((1 - r_xz^2)(1 - r_yz^2))`` row by row on ranks (a constant ``z`` controls for
    nothing: the plain correlation); NaN where ``x`` or ``y`` is constant or a function of ``z``'s ranks alone."""
    r_xy = _pearson_rows(rx, ry)
    z_varies = np.ptp(rz, axis=-1) > 0
    r_xz = np.where(z_varies, _pearson_rows(rx, rz), 0.0)
    r_yz = np.where(z_varies, _pearson_rows(ry, rz), 0.0)
    denominator = np.sqrt(np.clip((1 - r_xz**2) * (1 - r_yz**2), 0, None))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 1e-9, (r_xy - r_xz * r_yz) / denominator, np.nan)


def partial_spearman_ci(
    x, y, z, n_boot: int = 4000, seed: int = 0, level: float = 0.95, min_distinct: int = 4
) -> PartialRankCorrelation:
    """Partial Spearman ``rho`` of ``x`` and ``y`` given ``z`` (one value each per rung, or one row of several
    controls per rung: then the correlation of the residuals of the ranks on every control's ranks).

    ``rho_xy.z = (r_xy - r_xz r_yz) / sqrt((1 - r_xz^2)(1 - r_yz^2))`` on the ranks: the correlation of the
    ranks of ``x`` and of ``y`` once each has had its least-squares line on the ranks of ``z`` removed.
    Interval: percentile bootstrap over rungs, dropping resamples with fewer than ``min_distinct`` distinct rungs
    (with three, the residuals have one degree of freedom and the partial is +-1 by construction) or an undefined
    partial. p-value: Freedman & Lane (1983), permuting the residuals of ``y``'s ranks on ``z``'s and removing
    ``z`` again (the scheme Anderson & Legendre 1999 found the most reliable), two-sided, exact over all ``n!``
    permutations up to ``n = 8``, else over the identity and 20000 random ones.
    ``scipy.stats.permutation_test`` has no Freedman–Lane scheme: it permutes the data it is given, so the scheme
    has to be written as its statistic (``tests/test_ladder.py`` does, and gets the same p); here one matrix of
    permutations serves the p-value and ``p_floor``. ``scipy.stats.bootstrap`` cannot drop resamples (a NaN
    statistic makes its interval NaN), which the ``min_distinct`` rule needs.

    How little six rungs can show: the residuals have ``n - 2 = 4`` degrees of freedom; a quarter of the bootstrap
    resamples have three distinct rungs or fewer (dropped) and most of the rest four or five; where ``x`` ranks
    almost like ``z`` (the trained ladder: two swapped pairs, rho 0.89) its residuals rest on the rungs that
    break the order, and the smallest p any order of ``y`` can reach (``p_floor``) is 2/720, 0.014 after Holm
    over five diagnostics.
    """
    x, y, z = (np.asarray(v, dtype=float) for v in (x, y, z))
    if z.ndim == 2 and z.shape[1] == 1:
        z = z[:, 0]
    if not (x.shape == y.shape == z.shape[:1]) or x.ndim != 1 or z.ndim > 2 or len(x) < 4:
        raise InvalidInputError(
            f"x and y need the same 1-d shape with >= 4 rungs and z one row (or one value) per rung, got "
            f"{x.shape}, {y.shape}, {z.shape}."
        )
    from scipy.stats import rankdata

    n = len(x)
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, n, (n_boot, n))
    distinct = 1 + np.count_nonzero(np.diff(np.sort(pick, axis=1), axis=1), axis=1) >= min_distinct
    rx, ry = _ranks(x), _ranks(y)
    if z.ndim == 1:
        rz = _ranks(z)
        rho = float(_partial_rows(rx, ry, rz))
        draws = _partial_rows(*(rankdata(v[pick[distinct]], axis=1) for v in (x, y, z)))
        design = np.column_stack([np.ones(n), rz]) if np.ptp(rz) > 0 else np.ones((n, 1))
    else:  # several controls: the correlation of the residuals of the ranks on every control's ranks
        rz = np.column_stack([_ranks(column) for column in z.T])
        rho = _residual_correlation(rx, ry, rz)
        draws = _residual_correlations(*(rankdata(v[pick[distinct]], axis=1) for v in (x, y, z)))
        design = _design(rz)
    draws = draws[np.isfinite(draws)]
    low, high = percentile_interval(draws, level) if len(draws) else (np.nan, np.nan)
    residual = np.eye(n) - design @ np.linalg.pinv(design)  # removes the line on z's ranks
    ex = residual @ rx
    perms = (
        np.array(list(itertools.permutations(range(n))))
        if n <= 8
        else np.vstack([np.arange(n), np.argsort(rng.random((20000, n)), axis=1)])  # p >= 1/20001
    )
    p = _freedman_lane_p(ex, residual @ ry, residual, perms) if np.isfinite(rho) else float("nan")
    floor = float("nan")  # over the n! rank orders of y (without ties): how small p can get on these rungs
    if n <= 7 and np.linalg.norm(ex) > 1e-9:
        floor = min(_freedman_lane_p(ex, residual @ (order + 1.0), residual, perms) for order in perms)
    first = z if z.ndim == 1 else z[:, 0]  # the first control, as the plain correlations report it
    return PartialRankCorrelation(
        rho, (float(low), float(high)), p, n, _spearman(x, first), _spearman(y, first), floor
    )


def _design(rz: np.ndarray) -> np.ndarray:
    """An intercept and every column of ``rz`` that varies (a constant control controls for nothing)."""
    varying = [column for column in np.atleast_2d(rz.T) if np.ptp(column) > 0]
    return np.column_stack([np.ones(len(rz)), *varying])


def _residual_correlations(rx: np.ndarray, ry: np.ndarray, rz: np.ndarray) -> np.ndarray:
    """``_residual_correlation`` of each bootstrap draw at once: ``rx``, ``ry`` of shape ``(n_draws, n)``, ``rz`` of
    shape ``(n_draws, n, k)``. Centring removes the intercept; the least-squares fit on the centred controls (a
    constant control centres to zeros, which the pseudo-inverse ignores) removes the rest, as ``_design`` does."""
    xc, yc = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
    zc = rz - rz.mean(axis=1, keepdims=True)
    inverse = np.linalg.pinv(zc)  # (n_draws, k, n)
    ex = xc - np.einsum("dnk,dk->dn", zc, np.einsum("dkn,dn->dk", inverse, xc))
    ey = yc - np.einsum("dnk,dk->dn", zc, np.einsum("dkn,dn->dk", inverse, yc))
    norm = np.linalg.norm(ex, axis=1) * np.linalg.norm(ey, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 1e-9, np.sum(ex * ey, axis=1) / np.where(norm > 0, norm, 1.0), np.nan)


def _residual_correlation(rx: np.ndarray, ry: np.ndarray, rz: np.ndarray) -> float:
    """The correlation of ``rx`` and ``ry`` once each has had its least-squares fit on ``_design(rz)`` removed: the
    partial correlation given several controls; NaN where either residual vanishes."""
    design = _design(rz)
    residual = np.eye(len(rx)) - design @ np.linalg.pinv(design)
    ex, ey = residual @ rx, residual @ ry
    norm = np.linalg.norm(ex) * np.linalg.norm(ey)
    return float(ex @ ey / norm) if norm > 1e-9 else float("nan")


def _freedman_lane_p(ex: np.ndarray, ey: np.ndarray, residual: np.ndarray, perms: np.ndarray) -> float:
    """Two-sided p of the correlation of residuals ``ex`` and ``ey``: ``ey`` permuted by each row of ``perms``,
    the control removed again (``residual``), correlated with ``ex`` (Freedman & Lane 1983)."""
    norm_x, norm_y = np.linalg.norm(ex), np.linalg.norm(ey)
    if norm_x < 1e-9 or norm_y < 1e-9:
        return float("nan")
    observed = ex @ ey / (norm_x * norm_y)
    shuffled = ey[perms] @ residual
    with np.errstate(invalid="ignore", divide="ignore"):
        stats = np.nan_to_num(shuffled @ ex / (norm_x * np.linalg.norm(shuffled, axis=1)))
    return float(np.mean(np.abs(stats) >= abs(observed) - 1e-12))


def signed_decision(
    ci: tuple[float, float], p_holm: float, expected_sign: int, alpha: float = ALPHA
) -> tuple[str | None, str]:
    """``("expected" | "opposite" | None, why)``: the Holm-adjusted p is below ``alpha`` and the interval lies on
    the expected (or the other) side of 0; ``None`` otherwise, with the reason neither holds."""
    low, high = sorted((expected_sign * ci[0], expected_sign * ci[1]))
    if p_holm < alpha and low > 0:
        return "expected", ""
    if p_holm < alpha and high < 0:
        return "opposite", ""
    return (
        None,
        "the interval includes 0" if low <= 0 <= high else f"the Holm-adjusted p is not below {alpha}",
    )


def partial_verdict(
    r: PartialRankCorrelation, p_holm: float, n_tests: int, expected_sign: int, alpha: float = ALPHA
) -> tuple[str, str]:
    """("predicts capability" | "does not" | "inconclusive", reason) from a partial rank correlation given size.

    Predicts: the Holm-adjusted p (``n_tests`` diagnostics) is below ``alpha`` and the interval lies on the
    expected side of 0. Does not: the diagnostic does not vary across the ladder, or the same two conditions with
    the interval on the other side. Inconclusive: anything else, size named as the confound.
    """
    if not np.isfinite(r.rho):
        if not np.isfinite(r.rho_yz):
            return "does not", "the diagnostic takes the same value on every rung while capability varies"
        return "inconclusive", (
            "capability or the diagnostic ranks exactly like log parameters across the rungs: nothing is left "
            "of it once size is controlled for, so size and capability cannot be told apart"
        )
    text = (
        f"partial Spearman rho given log parameters = {r.rho:+.2f}, 95% CI [{r.ci[0]:+.2f}, {r.ci[1]:+.2f}], "
        f"permutation p = {r.p_value:.3f}, Holm-adjusted over {n_tests} diagnostics p = {p_holm:.3f}, n = {r.n} "
        f"(capability against log parameters: rho = {r.rho_xz:+.2f}; the diagnostic: rho = {r.rho_yz:+.2f})"
    )
    side, why = signed_decision(r.ci, p_holm, expected_sign, alpha)
    if side == "expected":
        return "predicts capability", text
    if side == "opposite":
        return "does not", text + " (opposite to the paper's direction, beyond size)"
    if np.isfinite(r.p_floor) and min(1.0, n_tests * r.p_floor) >= alpha:
        why += (
            f"; these rungs cannot show it: no order of a diagnostic reaches p below {r.p_floor:.3f} given "
            f"capability and size, {min(1.0, n_tests * r.p_floor):.3f} after Holm"
        )
    return "inconclusive", text + f" ({why}: what the diagnostic shares with capability may be size)"


def verdict(r: RankCorrelation, expected_sign: int) -> tuple[str, str]:
    """("predicts capability" | "does not" | "inconclusive", reason) from a rank correlation.

    Predicts: the whole interval lies on the expected side of 0 and the permutation p < 0.05.
    Does not: the diagnostic does not vary across the ladder, or the interval lies on the other side.
    Inconclusive: anything else (the interval straddles 0).
    """
    if not np.isfinite(r.rho):
        return "does not", "the diagnostic takes the same value on every rung while capability varies"
    low, high = sorted((expected_sign * r.ci[0], expected_sign * r.ci[1]))
    text = f"Spearman rho = {r.rho:+.2f}, 95% CI [{r.ci[0]:+.2f}, {r.ci[1]:+.2f}], permutation p = {r.p_value:.3f}, n = {r.n}"
    if low > 0 and r.p_value < 0.05:
        return "predicts capability", text
    if high < 0:
        return "does not", text + " (opposite to the paper's direction)"
    return "inconclusive", text + " (the interval includes 0)"
