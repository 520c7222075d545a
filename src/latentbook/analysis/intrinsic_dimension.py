"""Intrinsic dimension of a token cloud: TwoNN and its multiscale form Gride, with prompt-bootstrap intervals.

For each point, ``mu = r_n2 / r_n1`` is the ratio of its distances to its ``n2``-th and ``n1``-th nearest
neighbours. Where the density is locally uniform on a ``d``-dimensional manifold, ``mu`` has the density
(Denti et al. 2022, "The generalized ratios intrinsic dimension estimator", Sci. Rep. 12, eq. 6)

    f(mu | d) = d (mu^d - 1)^(n2 - n1 - 1) / (B(n2 - n1, n1) mu^((n2 - 1) d + 1)),   mu > 1,

and ``d`` is its maximum-likelihood root. ``n1 = 1, n2 = 2`` is TwoNN (Facco et al. 2017), whose MLE is
``(N - 1) / sum log mu``; ``n1 = 2^k, n2 = 2 n1`` probes larger scales without thinning the data, so
short-scale noise (which inflates TwoNN) matters less. The conventions follow DADApy and scikit-dimension's
``GRIDE`` (the tests check against it): ``(N - 1) log d`` in the likelihood, points with a zero or tied
neighbour distance dropped (repeated rows counted once), and ratios above ``q50 + 20 (q95 - q50)`` discarded as overlapping points.

Intervals: tokens of one prompt are correlated (and each other's nearest neighbours), so the bootstrap
resamples prompts: the neighbours are found once on the whole cloud and each draw reweights the points' log
ratios by how often their prompt was drawn (``resampling.cluster_weights``). The score of every draw is
evaluated on a log-spaced grid of ``d`` and its root interpolated there (``_GRID``: relative spacing 1.3 %),
so a thousand draws cost one matrix product. ``id_profile`` does this at every depth with the same draws, so
the peak's depth has an interval too.

Usage: ``two_nn(x, groups=prompt_ids)``, ``gride(x, groups, n1=4)``, ``id_profile(vectors, groups)`` with
``vectors`` of shape ``(n_depths, n_points, d)``. Introduced in: chapter 9 (other clocks of depth).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from ..errors import InvalidInputError
from .resampling import percentile_interval, token_weights, widened_intervals

OUTLIER_SPREAD = 20.0  # DADApy's cut: mu above q50 + 20 (q95 - q50) is an overlapping point
_GRID = np.geomspace(0.05, 5000.0, 900)  # d values where the bootstrap draws' scores are evaluated


@dataclass(frozen=True)
class IDEstimate:
    """The Gride estimate at neighbour orders ``(n1, n2)`` with its prompt-bootstrap percentile interval."""

    dimension: float
    ci: tuple[float, float]
    n1: int
    n2: int
    n_points: int  # points whose ratio entered the likelihood
    n_dropped: int  # duplicates, ties and overlapping points left out
    level: float


@dataclass(frozen=True)
class IDProfile:
    """The Gride estimate at every depth, the bootstrap draws (``(n_boot, n_depths)``, shared prompt draws),
    and the peak: the depth of the largest estimate, with the percentile interval of the draws' peak depths."""

    gamma: np.ndarray
    dimension: np.ndarray
    ci: np.ndarray  # (n_depths, 2)
    draws: np.ndarray
    peak_gamma: float
    peak_ci: tuple[float, float]
    n_points: np.ndarray  # (n_depths,) points whose ratio entered the likelihood
    n1: int
    n2: int
    level: float


def log_ratios(x: np.ndarray, n1: int = 1, n2: int | None = None) -> np.ndarray:
    """``log(r_n2 / r_n1)`` for every row of ``x`` (``(n_points, d)``; Euclidean neighbours among the distinct
    rows, the point itself excluded); NaN for a repeated row (its first copy keeps the ratio: computed distances
    between copies are rounding, not zero) and where the ratio is tied (``r_n1 = r_n2``)."""
    n1, n2 = _orders(n1, n2)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or not np.all(np.isfinite(x)):
        raise InvalidInputError(f"x must be a finite (n_points, d) array, got shape {x.shape}.")
    distinct, first = np.unique(x, axis=0, return_index=True)
    if len(distinct) < n2 + 2:
        raise InvalidInputError(
            f"n2={n2} needs at least {n2 + 2} distinct points, got {len(distinct)} (of {len(x)}): "
            "the cloud is (almost) all duplicates."
        )
    dist = neighbour_distances(distinct, n2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.log(dist[:, n2] / dist[:, n1])
    out = np.full(len(x), np.nan)
    out[first] = np.where(np.isfinite(ratios) & (ratios > 0), ratios, np.nan)
    return out


def neighbour_distances(x: np.ndarray, k: int, chunk: int = 2048) -> np.ndarray:
    """``(n, k + 1)`` distances of each row of ``x`` to itself (0) and its ``k`` nearest other rows, ascending.
    Candidates from ``|x|^2 + |y|^2 - 2 x.y`` (one matrix product per chunk of rows), then each chosen
    distance recomputed as ``||x_i - x_j||`` so near neighbours carry no cancellation error."""
    sq = np.einsum("ij,ij->i", x, x)
    out = np.empty((len(x), k + 1))
    for first in range(0, len(x), chunk):
        rows = slice(first, first + chunk)
        d2 = sq[rows, None] + sq[None] - 2 * x[rows] @ x.T
        d2[np.arange(d2.shape[0]), np.arange(first, first + d2.shape[0])] = -np.inf  # the point itself first
        nearest = np.argpartition(d2, k, axis=1)[:, : k + 1]
        exact = np.linalg.norm(x[rows, None, :] - x[nearest], axis=-1)
        out[rows] = np.sort(exact, axis=1)
    return out


def gride(
    x: np.ndarray,
    groups: np.ndarray | None = None,
    *,
    n1: int = 1,
    n2: int | None = None,
    n_boot: int = 400,
    seed: int = 0,
    level: float = 0.95,
) -> IDEstimate:
    """The Gride MLE of the intrinsic dimension of the rows of ``x`` (module docstring), with an interval from
    ``n_boot`` draws of the ``groups`` (one label per row: the prompt of each token; default: each row alone)."""
    n1, n2 = _orders(n1, n2)
    x = np.asarray(x)
    profile = id_profile(x[None], groups, n1=n1, n2=n2, n_boot=n_boot, seed=seed, level=level)
    n_points = int(profile.n_points[0])
    ci = (float(profile.ci[0, 0]), float(profile.ci[0, 1]))
    return IDEstimate(float(profile.dimension[0]), ci, n1, n2, n_points, len(x) - n_points, level)


def two_nn(
    x: np.ndarray, groups: np.ndarray | None = None, *, n_boot: int = 400, seed: int = 0, level: float = 0.95
) -> IDEstimate:
    """TwoNN (Facco et al. 2017): ``gride`` at ``n1 = 1, n2 = 2``, ``d = (N - 1) / sum log mu``."""
    return gride(x, groups, n1=1, n2=2, n_boot=n_boot, seed=seed, level=level)


def id_profile(
    vectors: np.ndarray,
    groups: np.ndarray | None = None,
    *,
    gamma: np.ndarray | None = None,
    n1: int = 1,
    n2: int | None = None,
    n_boot: int = 400,
    seed: int = 0,
    level: float = 0.95,
) -> IDProfile:
    """``gride`` at every depth of ``vectors`` (``(n_depths, n_points, d)``, the same points at every depth)
    with one set of prompt draws for all depths; the peak is read over every depth given (pass the interior
    ones to leave the edges out). ``gamma`` defaults to ``l / (n_depths - 1)``."""
    n1, n2 = _orders(n1, n2)
    vectors = np.asarray(vectors)
    if vectors.ndim != 3:
        raise InvalidInputError(f"vectors must have shape (n_depths, n_points, d), got {vectors.shape}.")
    n_depths, n_points = vectors.shape[:2]
    if groups is not None and np.shape(groups) != (n_points,):
        raise InvalidInputError(
            f"groups must hold one label per point ({n_points}), got shape {np.shape(groups)}."
        )
    if not isinstance(n_boot, (int, np.integer)) or n_boot < 20:
        raise InvalidInputError(f"n_boot must be an integer >= 20, got {n_boot!r}.")
    if not 0.5 < level < 1:
        raise InvalidInputError(f"level must lie in (0.5, 1), got {level!r}.")
    if gamma is None:
        gamma = np.arange(n_depths) / max(n_depths - 1, 1)
    gamma = np.asarray(gamma, dtype=np.float64)
    if gamma.shape != (n_depths,):
        raise InvalidInputError(f"gamma must hold one value per depth ({n_depths}), got shape {gamma.shape}.")
    each_alone = np.arange(n_points) if groups is None else groups
    weights = token_weights(np.random.default_rng(seed), each_alone, n_boot)
    dimension, draws = np.empty(n_depths), np.empty((n_boot, n_depths))
    n_kept = np.empty(n_depths, dtype=np.int64)
    for depth in range(n_depths):
        log_mu = _kept(log_ratios(vectors[depth], n1, n2))
        n_kept[depth] = np.isfinite(log_mu).sum()
        dimension[depth] = _root(log_mu, n1, n2)
        draws[:, depth] = _roots_of_draws(log_mu, weights, n1, n2)
    ci = widened_intervals(draws, dimension, level)
    peak = float(gamma[int(np.argmax(dimension))])
    peak_low, peak_high = percentile_interval(gamma[np.argmax(draws, axis=1)], level)
    peak_ci = (float(min(peak_low, peak)), float(max(peak_high, peak)))
    return IDProfile(gamma, dimension, ci, draws, peak, peak_ci, n_kept, n1, n2, level)


def _orders(n1: int, n2: int | None) -> tuple[int, int]:
    n2 = 2 * n1 if n2 is None else n2
    if (
        not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in (n1, n2))
        or not 1 <= n1 < n2
    ):
        raise InvalidInputError(f"Need integers 1 <= n1 < n2, got n1={n1!r}, n2={n2!r}.")
    return int(n1), int(n2)


def _kept(log_mu: np.ndarray) -> np.ndarray:
    """``log_mu`` with DADApy's overlapping points (``mu > q50 + 20 (q95 - q50)``) set to NaN as well."""
    finite = log_mu[np.isfinite(log_mu)]
    if len(finite) < 2:
        raise InvalidInputError(
            f"Only {len(finite)} points have distinct neighbours: the cloud is (almost) all duplicates."
        )
    q95, q50 = np.percentile(np.exp(finite), [95, 50])
    out = log_mu.copy()
    with np.errstate(invalid="ignore"):
        out[np.exp(log_mu) >= OUTLIER_SPREAD * (q95 - q50) + q50] = np.nan
    return out


def _score(d: np.ndarray, log_mu: np.ndarray, n1: int, n2: int) -> np.ndarray:
    """``d log L / dd`` per point at each ``d`` (``(len(d), n_points)``), without the ``(N - 1) / d`` term."""
    d = np.asarray(d, dtype=np.float64)[:, None]
    per_point = -(n2 - 1) * log_mu[None]
    if n2 - n1 > 1:  # mu^d / (mu^d - 1) = 1 / (1 - exp(-d log mu))
        per_point = per_point + (n2 - n1 - 1) * log_mu[None] / -np.expm1(-d * log_mu[None])
    return per_point


def _root(log_mu: np.ndarray, n1: int, n2: int) -> float:
    """The MLE: the root of ``(N - 1) / d + sum_i score_i(d)`` (one root: it falls from +inf to ``-n1 sum log mu``)."""
    log_mu = log_mu[np.isfinite(log_mu)]
    n = len(log_mu)

    def score(d: float) -> float:
        return float((n - 1) / d + _score(np.array([d]), log_mu, n1, n2).sum())

    high = 1.0
    while score(high) > 0:
        high *= 2
    return float(brentq(score, 1e-8, high, xtol=1e-12, rtol=1e-12))


def _roots_of_draws(log_mu: np.ndarray, weights: np.ndarray, n1: int, n2: int) -> np.ndarray:
    """The MLE of every bootstrap draw (``weights``: ``(n_boot, n_points)`` prompt counts per point), from the
    draws' scores on ``_GRID`` and linear interpolation between the two grid points around the sign change."""
    kept = np.isfinite(log_mu)
    w = weights[:, kept]
    per_point = _score(_GRID, log_mu[kept], n1, n2)  # (n_grid, n_kept)
    scores = (w.sum(axis=1, keepdims=True) - 1) / _GRID[None] + w @ per_point.T  # (n_boot, n_grid)
    if np.any(scores[:, 0] <= 0) or np.any(scores[:, -1] >= 0):
        raise InvalidInputError(
            f"A bootstrap draw's dimension lies outside {_GRID[0]}..{_GRID[-1]}: the cloud is degenerate."
        )
    above = (scores > 0).sum(axis=1) - 1  # last grid index with a positive score (scores fall with d)
    s0, s1 = scores[np.arange(len(w)), above], scores[np.arange(len(w)), above + 1]
    t = s0 / (s0 - s1)
    log_d = np.log(_GRID[above]) + t * (np.log(_GRID[above + 1]) - np.log(_GRID[above]))
    return np.exp(log_d)
