"""Covariance spectra against the Marchenko–Pastur null: bulk fit, spikes, effective rank.

Usage:

1. ``lam = cap.eigvals(l)`` (or ``np.linalg.eigvalsh(C)``) and an effective sample size
   ``n = effective_sample_size(cap, l).n_eff`` (tokens of one prompt are correlated, see below);
2. ``fit = mp_fit(lam, n)``: ``fit.sigma2``, ``fit.edges``, ``fit.n_spikes``, ``fit.spikes``, ``fit.ks``;
   or ``fit_layer(cap, l)`` for both steps, and ``streamed_spectrum_profile(cap)`` for every depth in a table
   (the streamed covariance of every captured token);
3. ``effective_rank(lam)``, ``participation_ratio(lam)``, ``stable_rank(lam)``.

The null model: ``N`` i.i.d. tokens ``h ~ N(0, sigma2 I_d)``; with ratio ``q = d / N`` the eigenvalues of
their sample covariance follow the Marchenko–Pastur law on ``[sigma2 (1 - sqrt q)^2, sigma2 (1 + sqrt q)^2]``
(plus an atom ``1 - 1/q`` at 0 when ``q > 1``). Structure shows as eigenvalues beyond the upper edge
("spikes"): a population eigenvalue ``sigma2 (1 + theta)`` leaves the bulk iff ``theta > sqrt(q)`` (the BBP
threshold, Baik, Ben Arous & Péché 2005). The largest null eigenvalue fluctuates around the edge on the
Tracy–Widom scale ``sigma2 N^(-2/3) (1 + sqrt q)(1 + 1/sqrt q)^(1/3)`` (Johnstone 2001), which sets the spike
margin.

Effective sample size. The law assumes independent tokens, but tokens of one prompt share its topic, style and
position effects. A covariance entry is a second-order statistic, so with ``m`` tokens per prompt and an
intra-prompt correlation ``rho`` per direction its variance grows by the design effect ``1 + (m - 1) rho^2``
(Kish's ``1 + (m - 1) rho`` with ``rho^2``, the correlation of products ``h_a h_b`` of two tokens). The
spectrum then spreads like i.i.d. data of ``N_eff = N / (1 + (m - 1) rho^2)`` tokens, between ``N``
(``rho = 0``) and the number of prompts (``rho = 1``). ``effective_sample_size`` estimates ``rho`` from the
capture's token sample; the book uses ``N_eff`` for every MP fit (``fit_layer``'s default).
``N_eff`` matches the spread of the bulk, not its exact shape (prompt-clustered tokens give a free convolution
of two MP laws), so a few eigenvalues can still cross the edge: before calling them structure, compare with
the clustered null ``synthetic.clustered_tokens`` at the same ``d``, prompts and ``rho``.
Introduced in: chapter 4 (book/paper.md, "Spectral density", claim 3; Theorem 6.3 for mixtures in chapter 6).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError

if TYPE_CHECKING:
    import pandas as pd

    from ..capturing.results import Capture

# --- the Marchenko–Pastur law ------------------------------------------------------------------------------


def _check_ratio(q: float, sigma2: float) -> tuple[float, float]:
    if not (np.isfinite(q) and q > 0 and np.isfinite(sigma2) and sigma2 > 0):
        raise InvalidInputError(
            f"Need a ratio q = d/N > 0 and a scale sigma2 > 0, got q={q!r}, sigma2={sigma2!r}."
        )
    return float(q), float(sigma2)


def mp_edges(q: float, sigma2: float = 1.0) -> tuple[float, float]:
    """Bulk edges ``lambda_pm = sigma2 (1 pm sqrt q)^2``, ratio ``q = d/N``, noise variance ``sigma2``."""
    q, sigma2 = _check_ratio(q, sigma2)
    return sigma2 * (1 - np.sqrt(q)) ** 2, sigma2 * (1 + np.sqrt(q)) ** 2


def mp_density(x: np.ndarray | float, q: float, sigma2: float = 1.0) -> np.ndarray:
    """Continuous part of the MP law: ``rho(x) = sqrt((lambda_+ - x)(x - lambda_-)) / (2 pi sigma2 q x)``.

    Zero outside the edges; it integrates to ``min(1, 1/q)`` (the rest is the atom at 0 when ``q > 1``).
    """
    lo, hi = mp_edges(q, sigma2)
    x = np.asarray(x, dtype=np.float64)
    inside = (x > lo) & (x < hi) & (x > 0)
    safe = np.where(inside, x, 1.0)
    value = np.sqrt(np.clip((hi - safe) * (safe - lo), 0, None)) / (2 * np.pi * sigma2 * q * safe)
    return np.where(inside, value, 0.0)


def _continuous_cdf(x: np.ndarray, q: float, sigma2: float) -> np.ndarray:
    """``int_0^x rho`` in closed form, with ``x = mid - r cos(theta)``, ``mid = sigma2 (1 + q)``,
    ``r = 2 sigma2 sqrt q``:
    ``(1 / (2 pi sigma2 q)) [r sin(theta) + mid theta
    - 2 sqrt(l_+ l_-) arctan(sqrt(l_+ / l_-) tan(theta/2))]``.
    """
    lo, hi = mp_edges(q, sigma2)
    mid, r = sigma2 * (1 + q), 2 * sigma2 * np.sqrt(q)
    theta = np.arccos(np.clip((mid - np.asarray(x, dtype=np.float64)) / r, -1.0, 1.0))
    value = r * np.sin(theta) + mid * theta
    if lo > 0:  # at q = 1 the last term vanishes (l_- = 0)
        value = value - 2 * np.sqrt(hi * lo) * np.arctan(np.sqrt(hi / lo) * np.tan(theta / 2))
    return value / (2 * np.pi * sigma2 * q)


def mp_cdf(x: np.ndarray | float, q: float, sigma2: float = 1.0) -> np.ndarray:
    """CDF of the full MP law: ``(1 - 1/q)_+ [x >= 0] + int_0^x rho`` (exact, no numerical integration)."""
    q, sigma2 = _check_ratio(q, sigma2)
    x = np.asarray(x, dtype=np.float64)
    atom = np.where(x >= 0, max(0.0, 1.0 - 1.0 / q), 0.0)
    return atom + _continuous_cdf(x, q, sigma2)


def _bulk_cdf(x: np.ndarray, q: float, sigma2: float) -> np.ndarray:
    """CDF of the nonzero eigenvalues: the continuous part normalised to 1."""
    return _continuous_cdf(x, q, sigma2) / min(1.0, 1.0 / q)


_THETA = np.linspace(0.0, np.pi, 1025)  # the quantile grid: x = mid - r cos(theta), dense near both edges
_SIN, _COS, _TAN_HALF = np.sin(_THETA), np.cos(_THETA), np.tan(_THETA / 2)


def _bulk_cdf_on_grid(qs: np.ndarray) -> np.ndarray:
    """``_bulk_cdf`` at ``sigma2 = 1`` on the ``_THETA`` grid, one row per ratio: ``(len(qs), len(_THETA))``.

    In ``theta`` directly (``_continuous_cdf`` without its ``arccos``), with ``sqrt(l_+ l_-) = |1 - q|`` and
    ``sqrt(l_+ / l_-) = (1 + sqrt q) / |1 - sqrt q|``.
    """
    qs = np.asarray(qs, dtype=np.float64)[:, None]
    root = np.sqrt(qs)
    value = 2 * root * _SIN + (1 + qs) * _THETA
    gap = np.abs(1 - root)
    safe = np.where(gap > 0, gap, 1.0)
    value = value - np.where(gap > 0, 2 * np.abs(1 - qs) * np.arctan((1 + root) / safe * _TAN_HALF), 0.0)
    return value / (2 * np.pi * qs) / np.minimum(1.0, 1.0 / qs)


def _bulk_quantile(p: np.ndarray, q: float, sigma2: float) -> np.ndarray:
    """Inverse of ``_bulk_cdf`` by interpolation on the ``_THETA`` grid (~1e-5 relative)."""
    theta = np.interp(p, _bulk_cdf_on_grid(np.array([q]))[0], _THETA)
    return sigma2 * (1 + q - 2 * np.sqrt(q) * np.cos(theta))


def _full_quantiles(p: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """Quantiles of the full MP law at ``sigma2 = 1``, one row per ratio in ``qs``: 0 on the atom
    ``p <= (1 - 1/q)_+``, the bulk's quantile of ``(p - atom) / min(1, 1/q)`` above it."""
    qs = np.asarray(qs, dtype=np.float64)
    grids = _bulk_cdf_on_grid(qs)
    out = np.zeros((len(qs), len(p)))
    for row, (q, grid) in enumerate(zip(qs, grids, strict=True)):
        atom = max(0.0, 1.0 - 1.0 / q)
        inside = p > atom
        levels = np.clip((p[inside] - atom) / min(1.0, 1.0 / q), 0.0, 1.0)
        out[row, inside] = 1 + q - 2 * np.sqrt(q) * np.cos(np.interp(levels, grid, _THETA))
    return out


# --- Tracy–Widom margin and spikes -------------------------------------------------------------------------


def tracy_widom1_cdf(s: float) -> float:
    """GOE Tracy–Widom CDF: ``F_1(s) = det(I - K)`` on ``L^2(s, inf)``, ``K(x, y) = Ai((x+y)/2) / 2``.

    Nyström discretisation, 60 Gauss–Legendre nodes on ``[s, s + 16]`` (Bornemann 2010); accurate to ~1e-10.
    """
    t, w = np.polynomial.legendre.leggauss(60)
    x, w = s + (t + 1) * 8.0, w * 8.0
    from scipy.special import airy

    kernel = 0.5 * airy((x[:, None] + x[None, :]) / 2)[0]
    root = np.sqrt(w)
    return float(np.linalg.det(np.eye(len(x)) - root[:, None] * kernel * root[None, :]))


@lru_cache(maxsize=32)
def tracy_widom1_quantile(p: float) -> float:
    """``F_1^{-1}(p)``; e.g. 0.95 -> 0.9793, 0.99 -> 2.0234 (Johnstone 2001, Table 1)."""
    if not 0 < p < 1:
        raise InvalidInputError(f"A quantile level must lie in (0, 1), got {p!r}.")
    from scipy.optimize import brentq

    return float(brentq(lambda s: tracy_widom1_cdf(s) - p, -10.0, 12.0, xtol=1e-10))


def tracy_widom_scale(sigma2: float, q: float, n_samples: float) -> float:
    """Fluctuation scale of the largest null eigenvalue: ``sigma2 N^(-2/3) (1 + sqrt q)(1 + 1/sqrt q)^(1/3)``.

    From Johnstone (2001): ``lambda_max ~ sigma2 (1 + sqrt q)^2 + scale * TW_1`` for the covariance of ``N``
    i.i.d. Gaussian tokens in ``d = q N`` dimensions.
    """
    q, sigma2 = _check_ratio(q, sigma2)
    return sigma2 * n_samples ** (-2 / 3) * (1 + np.sqrt(q)) * (1 + 1 / np.sqrt(q)) ** (1 / 3)


def spike_threshold(sigma2: float, q: float, n_samples: float, alpha: float = 0.01) -> float:
    """Cut above which an eigenvalue is a spike: ``sigma2 (1 + sqrt q)^2 + F_1^{-1}(1 - alpha) * TW scale``.

    Under the null the largest eigenvalue exceeds it with probability ``alpha`` (0.01: 2.02 TW units).
    """
    return mp_edges(q, sigma2)[1] + tracy_widom1_quantile(1.0 - alpha) * tracy_widom_scale(
        sigma2, q, n_samples
    )


def bbp_threshold(sigma2: float, q: float) -> float:
    """Smallest population eigenvalue that separates from the bulk: ``sigma2 (1 + sqrt q)`` (BBP 2005)."""
    q, sigma2 = _check_ratio(q, sigma2)
    return sigma2 * (1 + np.sqrt(q))


def spike_location(ell: np.ndarray | float, sigma2: float, q: float) -> np.ndarray:
    """Where a population eigenvalue ``ell = sigma2 (1 + theta)`` lands in the sample spectrum (N, d -> inf).

    ``sigma2 (1 + theta)(1 + q / theta)`` above the BBP threshold ``theta > sqrt q``; the upper edge below it.
    """
    q, sigma2 = _check_ratio(q, sigma2)
    theta = np.asarray(ell, dtype=np.float64) / sigma2 - 1.0
    above = theta > np.sqrt(q)
    safe = np.where(above, theta, 1.0)
    return np.where(above, sigma2 * (1 + safe) * (1 + q / safe), mp_edges(q, sigma2)[1])


def spike_population(lam: np.ndarray | float, sigma2: float, q: float) -> np.ndarray:
    """Inverse of ``spike_location``: the population eigenvalue behind a sample spike ``lam > lambda_+``.

    Solves ``theta^2 - (lam/sigma2 - 1 - q) theta + q = 0`` for its larger root; NaN inside the bulk.
    """
    q, sigma2 = _check_ratio(q, sigma2)
    b = np.asarray(lam, dtype=np.float64) / sigma2 - 1.0 - q
    disc = b**2 - 4 * q
    above = (np.asarray(lam) > mp_edges(q, sigma2)[1]) & (disc >= 0)
    theta = (b + np.sqrt(np.where(above, disc, 0.0))) / 2
    return np.where(above, sigma2 * (1 + theta), np.nan)


EDGE_POINTS = 20  # bulk eigenvalues the local edge test fits the edge to
_AIRY = -((1.5 * np.pi * np.arange(1, EDGE_POINTS + 1)) ** (2 / 3))  # j-th Airy point ~ -(3 pi j / 2)^(2/3)
# the null law of edge_statistic: quantiles at 1 - alpha, pooled over 20000 Wishart spectra at (N, d) = (2000,
# 400), (1000, 500), (600, 600), (4000, 300) (Dumitriu-Edelman tridiagonals; within 0.15 of each other to 0.995)
_EDGE_ALPHAS = np.array([0.1, 0.05, 0.025, 0.01, 0.005, 0.001])
_EDGE_QUANTILES = np.array([0.935, 1.513, 2.065, 2.705, 3.208, 4.323])


def edge_statistic(eigvals: np.ndarray, k: int) -> float:
    """``T_k = (lam_k - E) / s`` of the ``k``-th largest eigenvalue against the edge ``E`` and local scale ``s``
    fitted by least squares to the next ``EDGE_POINTS``: ``lam_{k+j} ~ E + s a_j``, ``a_j = -(3 pi j / 2)^(2/3)``
    (where the ``j``-th point of the Airy process sits; Onatski 2009 tests with such edge-free spacings).

    Every square-root edge (MP, but also the deformed bulks of correlated or anisotropic tokens) has the same
    local law at its top (edge universality), and ``T`` is free of location and scale, so its null law is one
    table (``edge_quantile``) whatever the bulk, with the error of the fitted edge inside it. ``inf`` when the
    fitted scale is not positive and ``lam_k`` lies above the window.
    """
    lam = _as_spectrum(eigvals)
    if not 1 <= k <= len(lam) - EDGE_POINTS:
        raise InvalidInputError(f"Need 1 <= k <= d - {EDGE_POINTS}, got k={k!r} for d={len(lam)}.")
    return _edge_statistic(lam, k)


def _edge_statistic(lam: np.ndarray, k: int) -> float:
    """``edge_statistic`` of a spectrum already descending."""
    window = lam[k : k + EDGE_POINTS]
    centred = _AIRY - _AIRY.mean()
    scale = float((window - window.mean()) @ centred / (centred @ centred))
    edge = float(window.mean() - scale * _AIRY.mean())
    if scale <= 0:
        return math.inf if lam[k - 1] > window[0] else -math.inf
    return (float(lam[k - 1]) - edge) / scale


def edge_quantile(alpha: float) -> float:
    """``1 - alpha`` quantile of ``edge_statistic`` under the null (a bulk with no spike), interpolated in
    ``log alpha`` in the simulated table (``0.001 <= alpha <= 0.1``; above 0.1 the 0.1 quantile, conservative)."""
    if not 0.001 <= alpha < 1:
        raise InvalidInputError(f"The edge test's table covers alpha >= 0.001, got {alpha!r}.")
    log_alpha = np.log(min(alpha, 0.1))
    return float(np.interp(-log_alpha, -np.log(_EDGE_ALPHAS), _EDGE_QUANTILES))


# --- the fit -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MPFit:
    """A Marchenko–Pastur fit of one spectrum: the bulk's scale, ratio and edges, the spikes beyond, the misfit."""

    sigma2: float  # noise variance fitted to the bulk
    ratio: float  # q = d_bulk / n_samples fitted to the bulk (d_bulk = d - n_spikes)
    n_samples: float  # the effective sample size N = d_bulk / ratio the law was fitted with
    edges: tuple[float, float]  # sigma2 (1 -+ sqrt q)^2
    threshold: float  # spike cut: upper edge + TW margin (see spike_threshold); the edge test may count fewer
    n_spikes: int
    spikes: np.ndarray  # eigenvalues above the threshold, descending
    spike_population: np.ndarray  # population eigenvalue behind each spike (spike_population)
    ks: float  # Kolmogorov–Smirnov distance of the bulk to the fitted MP law
    bulk: np.ndarray  # the nonzero eigenvalues fitted as bulk, ascending
    alpha: float  # false-alarm level of the spike cut
    settled: bool  # False: the spikes ate more than the allowed share of the bulk (no MP bulk; a lower bound)
    n_bound: float = math.inf  # the upper bound on N the ratio was fitted under (inf: none given)
    edge_ratio: float = math.nan  # q of the law fitted to the bulk's top edge (it sets the threshold)
    edge_sigma2: float = math.nan  # sigma2 of that law

    @property
    def bbp_threshold(self) -> float:
        """Population eigenvalue needed to be detectable at this ``sigma2`` and ratio."""
        return bbp_threshold(self.sigma2, self.ratio)


def _as_spectrum(eigvals: np.ndarray) -> np.ndarray:
    lam = np.asarray(eigvals, dtype=np.float64)
    if lam.ndim != 1 or lam.size < 2 or not np.all(np.isfinite(lam)):
        raise InvalidInputError(
            f"Expected a 1-D array of at least 2 finite eigenvalues, got shape {lam.shape}. "
            "Pass one layer's spectrum, e.g. cap.eigvals(l)."
        )
    top = np.max(np.abs(lam))
    if np.any(lam < -1e-8 * max(top, 1e-300)):
        raise InvalidInputError(
            f"Eigenvalues must be >= 0 (a covariance spectrum); the smallest is {lam.min():.3g}. "
            "Pass eigenvalues of a covariance or second-moment matrix, not of an arbitrary matrix."
        )
    return np.sort(np.clip(lam, 0.0, None))[::-1]


def _misfits(v: np.ndarray, p: np.ndarray, log_qs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each ``log q``: ``min_sigma2 sum_i (v_i - sigma2 Q_q(p_i))^2`` and its ``sigma2 = v.Q / Q.Q``."""
    quantiles = _full_quantiles(p, np.exp(log_qs))
    norm = np.einsum("ij,ij->i", quantiles, quantiles)
    dot = quantiles @ v
    with np.errstate(divide="ignore", invalid="ignore"):  # pragma: no mutate: errstate
        sigma2 = np.where(norm > 0, dot / norm, np.nan)
        cost = np.where(norm > 0, np.maximum(float(v @ v) - dot * sigma2, 0.0), np.inf)
    return cost, sigma2


def _vertex(x: np.ndarray, y: np.ndarray) -> float:
    """Abscissa of the parabola's minimum through three equally spaced points (the middle one when flat)."""
    curvature = y[0] - 2 * y[1] + y[2]
    if not np.isfinite(curvature) or curvature <= 0:
        return float(x[1])
    return float(x[1] + (x[2] - x[1]) * (y[0] - y[2]) / (2 * curvature))


def _fit_ratio_scale(
    values: np.ndarray, window: slice, q_range: tuple[float, float], near: float | None = None
) -> tuple[float, float]:
    """``(q, sigma2)`` minimising ``sum_{i in window} (v_(i) - sigma2 Q_q((i - 1/2) / n))^2`` over
    ``q_range`` (``v`` ascending, zeros included, ``Q_q`` the full law's quantiles; ``sigma2`` in closed form).

    A grid in ``log q`` brackets the minimum (5 points within a factor ``e^(1/2)`` of ``near`` when given; 25
    over the whole range without, or when the minimum sits on the near grid's end); two parabolic steps
    (the vertex through the best point and its neighbours, then through the vertex and points ``h/8`` either
    side) refine it. The best point evaluated wins.
    """
    p = (np.arange(1, len(values) + 1) - 0.5) / len(values)
    v, p = values[window], p[window]
    lo, hi = np.log(q_range[0]), np.log(q_range[1])
    if hi - lo < 1e-9:
        return float(q_range[0]), float(_misfits(v, p, np.array([lo]))[1][0])
    best = -1
    if near is not None:
        grid = np.linspace(max(lo, np.log(near) - 0.5), min(hi, np.log(near) + 0.5), 5)
        costs, scales = _misfits(v, p, grid)
        best = int(np.argmin(costs))
    if not (0 < best < len(grid) - 1 or (best >= 0 and grid[best] in (lo, hi))):
        grid = np.linspace(lo, hi, 25)
        costs, scales = _misfits(v, p, grid)
        best = int(np.argmin(costs))
    middle = min(max(best, 1), len(grid) - 2)
    centre = float(np.clip(_vertex(grid[middle - 1 : middle + 2], costs[middle - 1 : middle + 2]), lo, hi))
    step = (grid[1] - grid[0]) / 8
    local = np.clip(centre + np.array([-step, 0.0, step]), lo, hi)
    local_costs, local_scales = _misfits(v, p, local)
    last = np.array([np.clip(_vertex(local, local_costs), lo, hi)]) if step > 0 else local[1:2]
    last_costs, last_scales = _misfits(v, p, last)
    points = np.concatenate([grid, local, last])
    all_costs = np.concatenate([costs, local_costs, last_costs])
    winner = int(np.argmin(all_costs))
    return float(np.exp(points[winner])), float(np.concatenate([scales, local_scales, last_scales])[winner])


def _ks(values: np.ndarray, q: float, sigma2: float) -> float:
    """``sup_x |F_n(x) - F(x)|`` of the values against the full MP law (atom included), exact with ties."""
    xs, counts = np.unique(values, return_counts=True)
    right = np.cumsum(counts) / len(values)
    law = mp_cdf(xs, q, sigma2)
    law_left = law - np.where(xs == 0, max(0.0, 1.0 - 1.0 / q), 0.0)
    return float(max(np.max(np.abs(right - law)), np.max(np.abs(right - counts / len(values) - law_left))))


_MIN_RATIO = 1e-4  # smallest ratio d/N an unbounded fit tries (N = 10^4 d: MP is a point mass by then)
_MIN_EDGE_WINDOW = 20  # fewest bulk eigenvalues the edge law is fitted to


@dataclass(frozen=True)
class _Step:
    """One round of the bulk fit: the law fitted to ``lam[k:]`` and the spike count it implies."""

    k: int
    q: float
    sigma2: float
    threshold: float
    k_new: int


def _check_fit_options(
    n_samples: float | None, alpha: float, trim: float, min_bulk: float, zero_tol: float, edge_window: float
) -> None:
    is_number = isinstance(n_samples, (int, float, np.integer, np.floating)) and not isinstance(
        n_samples, bool
    )
    if n_samples is not None and (not is_number or not np.isfinite(n_samples) or n_samples < 2):
        raise InvalidInputError(
            f"n_samples must be None (fit the effective number of tokens) or a number >= 2 (an upper bound on "
            f"it), got {n_samples!r}."
        )
    if not (
        0 < alpha < 1 and 0 <= trim < 0.9 and 0 < min_bulk <= 1 and 0 <= zero_tol < 1 and 0 < edge_window <= 1
    ):
        raise InvalidInputError(
            f"Need 0 < alpha < 1, 0 <= trim < 0.9, 0 < min_bulk <= 1, 0 <= zero_tol < 1, 0 < edge_window <= 1; "
            f"got alpha={alpha!r}, trim={trim!r}, min_bulk={min_bulk!r}, zero_tol={zero_tol!r}, "
            f"edge_window={edge_window!r}."
        )


def mp_fit(
    eigvals: np.ndarray,
    n_samples: float | None = None,
    alpha: float = 0.01,
    trim: float = 0.1,
    min_bulk: float = 0.5,
    zero_tol: float = 1e-6,
    edge_window: float = 0.1,
    fit_ratio: bool = True,
) -> MPFit:
    """Fit the MP law (scale ``sigma2`` and ratio ``q``) to the bulk of a spectrum; count the spikes above it.

    With ``k`` spikes the bulk is ``lam[k:]`` (``d_b = d - k`` values; numerical zeros below ``zero_tol`` times
    the largest eigenvalue belong to the atom at 0). ``(q, sigma2)`` minimise the squared distance of the sorted
    bulk to the full law's quantiles ``sigma2 Q_q((i - 1/2) / d_b)`` over a window of it, and
    ``k <- #{lam > spike_threshold(sigma2, q, N = d_b / q, alpha)}`` (edge plus the Tracy–Widom margin), until
    ``k`` is stable, then
    ``k <- k - 1`` while ``edge_statistic(lam, k) <= edge_quantile(alpha)`` (the smallest spike must also stand
    out from the bulk's own top, which holds the cut at ``alpha`` when the fitted edge is off or the bulk is not
    MP: prompt-correlated tokens gave 8.8 % false spikes with the fitted cut alone, 1.6 % with both; the price is
    some power within a few TW units of the edge). The stages:

    1. a robust start: the window is the bulk without its top ``trim`` (spikes not yet removed cannot pull it);
    2. the edge: the window is the bulk's top ``edge_window`` (at least 20 eigenvalues), so the fitted law
       matches the bulk where spikes are cut. Correlated tokens deform the bulk away from MP (a longer upper
       tail than the MP law of the same spread); near its edge every such law is a square root, which the MP
       law of a fitted ratio follows.

    The ratio. Correlated tokens spread the spectrum like fewer independent tokens, so the effective ``N`` is
    fitted: ``n_samples=None`` leaves it free; a given ``n_samples`` is an upper bound (``q >= d_b /
    n_samples``; correlation only lowers ``N``). ``fit_ratio=False`` fixes ``q = d_b / n_samples`` (the
    i.i.d. law). Spikes never enter the fit, so they cannot inflate ``sigma2``.

    When the spike count would leave less than ``min_bulk`` of the nonzero eigenvalues, there is no MP bulk to
    speak of (a heavy-tailed or strongly structured spectrum): the fit stops with ``settled = False`` and
    ``n_spikes`` is a lower bound, never a result. Each stage's ``k`` is found by bracketing and bisection
    (``_settle``): about ``2 log2 d`` rounds in all.

    ``ks`` is ``sup |F_n - F_MP|`` over all eigenvalues but the spikes, against the full law (atom at 0
    included), so eigenvalues the law does not predict (e.g. nonzero ones where it puts the atom) count as
    misfit. Eigenvalues repel, so compare ``ks`` with that of a null spectrum of the same ``d`` and ``N``,
    not with the i.i.d. KS table. Tokens of few prompts (fewer prompts than dimensions) with a strong shared
    component put one eigenvalue per prompt beyond the within-prompt bulk: no law of the spectrum alone tells
    those from structure; ``parallel_analysis`` (which sees the prompts) does.
    Introduced in: chapter 4.
    """
    lam = _as_spectrum(eigvals)
    _check_fit_options(n_samples, alpha, trim, min_bulk, zero_tol, edge_window)
    if not fit_ratio and n_samples is None:
        raise InvalidInputError(
            "fit_ratio=False needs n_samples (the i.i.d. law's N); pass it or fit the ratio."
        )
    d = len(lam)
    lam = np.where(lam > zero_tol * lam[0], lam, 0.0)  # numerical zeros are the atom's
    n_nonzero = int(np.count_nonzero(lam))
    if n_nonzero < 3:
        raise InvalidInputError(
            f"Only {n_nonzero} eigenvalues are nonzero: there is no bulk to fit. Check the covariance."
        )
    n_bound = math.inf if n_samples is None else float(n_samples)
    max_spikes = n_nonzero - max(3, int(np.ceil(min_bulk * n_nonzero)))

    def step(k: int, robust: bool, near: float | None = None) -> _Step:
        values = lam[k:][::-1]
        d_b, nonzero = d - k, n_nonzero - k
        low = d_b / n_bound if np.isfinite(n_bound) else _MIN_RATIO
        high = low if not fit_ratio else max(low, d_b / (np.floor(trim * nonzero) + 3))
        width = max(_MIN_EDGE_WINDOW, int(np.ceil(edge_window * nonzero)))
        window = slice(0, d_b - int(np.floor(trim * nonzero))) if robust else slice(max(0, d_b - width), d_b)
        q, sigma2 = _fit_ratio_scale(values, window, (low, high), near)
        threshold = spike_threshold(sigma2, q, d_b / q, alpha)
        return _Step(k, q, sigma2, threshold, int(np.sum(lam > threshold)))

    def stage(robust: bool, k: int, near: float | None) -> tuple[_Step, bool]:
        done: dict[int, _Step] = {}

        def round_at(k: int) -> _Step:  # warm start: the ratio of the nearest round of this stage
            nearest = min(done, key=lambda j: abs(j - k)) if done else None
            done[k] = step(k, robust, near if nearest is None else done[nearest].q)
            return done[k]

        return _settle(round_at, round_at(k), max_spikes)

    cut, settled = stage(True, 0, None)
    if settled:
        cut, settled = stage(False, cut.k, cut.q)
    k = cut.k if settled else max_spikes  # unsettled: the cap, a lower bound
    if settled:  # step down until the smallest spike clears the local edge test
        edge_cut = edge_quantile(alpha)
        while k > 0 and k + EDGE_POINTS <= n_nonzero and _edge_statistic(lam, k) <= edge_cut:
            k -= 1
    law = step(k, robust=True, near=cut.q)
    q, sigma2 = law.q, law.sigma2
    spikes = lam[:k].copy()
    bulk = lam[k:][::-1]
    return MPFit(
        sigma2=sigma2,
        ratio=q,
        n_samples=(d - k) / q,
        edges=mp_edges(q, sigma2),
        threshold=cut.threshold,
        n_spikes=k,
        spikes=spikes,
        spike_population=spike_population(spikes, sigma2, q),
        ks=_ks(lam[k:], q, sigma2),
        bulk=bulk[bulk > 0].copy(),
        alpha=alpha,
        settled=settled,
        n_bound=n_bound,
        edge_ratio=cut.q,
        edge_sigma2=cut.sigma2,
    )


def _settle(round_at: Callable[[int], _Step], start: _Step, max_spikes: int) -> tuple[_Step, bool]:
    """Where one stage of the fit stops, from ``start`` (its round at ``k_0``), ``f(k)`` the count implied by
    a round at ``k``: the first ``k > k_0`` with ``f(k) <= k`` when ``f(k_0) > k_0``, the first ``k < k_0``
    with ``f(k) >= k`` when ``f(k_0) < k_0``; ``(the round at k, settled)``.

    Rounds at ``k_0 + s``, ``s`` doubling, bracket it; bisection closes the bracket: ``O(log d)`` rounds, where
    the one-step iteration ``k <- f(k)`` (which stops at the same ``k`` when ``f`` is nondecreasing) takes one
    per step. A stop with ``f(k) != k`` is a rare cycle at the margin; ``k`` is kept. Unsettled: the count
    exceeds ``max_spikes`` while the bracket is sought (for a nondecreasing ``f``, no ``k`` below the cap stops).
    """
    sign = int(np.sign(start.k_new - start.k))
    behind, ahead, jump = start, None if sign else start, 0
    while ahead is None:
        if behind.k_new > max_spikes or (sign > 0 and behind.k == max_spikes):
            return behind, False
        jump = 2 * abs(behind.k_new - behind.k)
        current = round_at(min(max(behind.k + sign * jump, 0), max_spikes))
        if sign * (current.k_new - current.k) > 0:
            behind = current
        else:
            ahead = current
    while abs(ahead.k - behind.k) > 1:
        current = round_at((ahead.k + behind.k) // 2)
        if sign * (current.k_new - current.k) > 0:
            behind = current
        else:
            ahead = current
    return ahead, True


# --- effective sample size ---------------------------------------------------------------------------------


def intra_prompt_correlation(vectors: np.ndarray, prompt_ids: np.ndarray) -> float:
    """Typical intra-prompt correlation ``rho``: the median over coordinates of the one-way ANOVA intraclass
    correlation, clipped to [0, 1].

    Per coordinate, ``ICC = (MSB - MSW) / (MSB + (n0 - 1) MSW)`` with the between- and within-prompt mean
    squares and ``n0 = (n - sum n_g^2 / n) / (G - 1)`` (unbalanced one-way random-effects ANOVA; prompts seen
    once add to MSB only). The median over coordinates ignores the few massive-activation coordinates. Do not
    use the eigenvectors of the same tokens' covariance as directions: they are fitted to the realised prompt
    effects and bias the estimate low.
    """
    x = np.asarray(vectors, dtype=np.float64)
    groups = np.asarray(prompt_ids)
    if x.ndim != 2 or groups.shape != (x.shape[0],):
        raise InvalidInputError(
            f"Expected vectors (n, d) and one prompt id per vector; got {x.shape} and {groups.shape}."
        )
    _, inverse, sizes = np.unique(groups, return_inverse=True, return_counts=True)
    n, n_groups = len(x), len(sizes)
    if n_groups < 2 or n - n_groups < 2:
        raise InvalidInputError(
            f"Need at least 2 prompts and 2 repeated tokens to estimate a correlation; got {n} tokens in "
            f"{n_groups} prompts. Capture with a larger n_vectors or fewer prompts."
        )
    y = x
    group_means = np.zeros((n_groups, y.shape[1]))
    np.add.at(group_means, inverse, y)
    group_means /= sizes[:, None]
    msb = np.sum(sizes[:, None] * (group_means - y.mean(0)) ** 2, axis=0) / (n_groups - 1)
    msw = np.sum((y - group_means[inverse]) ** 2, axis=0) / (n - n_groups)
    n0 = (n - np.sum(sizes**2) / n) / (n_groups - 1)
    keep = msb + (n0 - 1) * msw > 1e-12 * np.max(msb + (n0 - 1) * msw)
    icc = (msb - msw)[keep] / (msb + (n0 - 1) * msw)[keep]
    return float(np.clip(np.median(icc), 0.0, 1.0))


@dataclass(frozen=True)
class EffectiveSampleSize:
    """``n_eff = n_tokens / (1 + (m - 1) rho^2)`` with ``m = n_tokens / n_prompts`` tokens per prompt."""

    n_eff: float
    n_tokens: int
    n_prompts: int
    rho: float  # typical intra-prompt correlation (intra_prompt_correlation)
    design_effect: float  # 1 + (m - 1) rho^2


def design_effect(n_tokens: int, n_prompts: int, rho: float) -> EffectiveSampleSize:
    """``N_eff = n_tokens / (1 + (m - 1) rho^2)``, ``m = n_tokens / n_prompts`` (see the module docstring)."""
    if n_prompts < 1 or n_tokens < n_prompts or not 0 <= rho <= 1:
        raise InvalidInputError(
            f"Need n_tokens >= n_prompts >= 1 and 0 <= rho <= 1; got {n_tokens}, {n_prompts}, {rho!r}."
        )
    deff = 1.0 + (n_tokens / n_prompts - 1.0) * rho**2
    return EffectiveSampleSize(n_tokens / deff, int(n_tokens), int(n_prompts), float(rho), deff)


def _n_prompts(cap: Capture) -> int:
    n_prompts = cap.provenance.get("prompts_done", cap.provenance.get("n_prompts"))
    if n_prompts is None:
        raise InvalidInputError(
            "This capture's provenance does not say how many prompts it saw ('prompts_done'); "
            "pass n_samples to mp_fit yourself."
        )
    return int(n_prompts)


def effective_sample_size(cap: Capture, layer: int) -> EffectiveSampleSize:
    """``N_eff`` of the covariance at ``layer``: ``rho`` from the capture's token sample
    (``intra_prompt_correlation``), ``m`` = captured tokens per prompt (``n_tokens`` over the prompts done,
    from the provenance)."""
    rho = intra_prompt_correlation(cap.token_vectors(layer), cap.vectors.prompt_ids)
    return design_effect(cap.n_tokens, _n_prompts(cap), rho)


def fit_layer(
    cap: Capture, layer: int, n_samples: float | None = None, centered: bool = True, **kwargs
) -> MPFit:
    """``mp_fit(cap.eigvals(layer), n_samples)``, ``n_samples`` defaulting to ``effective_sample_size``."""
    if n_samples is None:
        n_samples = effective_sample_size(cap, layer).n_eff
    return mp_fit(cap.eigvals(layer, centered=centered), n_samples, **kwargs)


# --- second opinions: a permutation null that keeps the prompts, and a rank estimator ---------------------


@dataclass(frozen=True)
class ParallelAnalysis:
    """Observed eigenvalues against those of prompt-block permuted copies of the same tokens."""

    eigvals: np.ndarray  # (d,) observed, descending
    null: np.ndarray  # (n_perm, d) eigenvalues of each permuted copy, descending
    null_quantile: float  # the (1 - alpha) quantile of the largest null eigenvalue
    n_spikes: int  # eigenvalues above it
    alpha: float
    n_prompts: int


def _block_permutation(groups: np.ndarray, within: np.ndarray, n_groups: int, d: int, rng) -> np.ndarray:
    """Row index of every cell ``(i, j)``: coordinate ``j`` lays the prompts' blocks out in its own random
    order (token order inside a block kept), so each coordinate keeps its within-prompt correlation and loses
    its alignment with the other coordinates. Shape ``(n, d)``."""
    ranks = rng.permuted(np.tile(np.arange(n_groups), (d, 1)), axis=1)  # (d, G) block position per prompt
    keys = ranks[:, groups] * (within.max() + 1) + within[None, :]
    return np.argsort(keys, axis=1, kind="stable").T


def sample_eigvals(x: np.ndarray, centered: bool = True) -> np.ndarray:
    """The ``d`` eigenvalues, descending, of ``X^T X / n`` (``X`` centred when ``centered``), ``x`` of shape ``(n, d)``.

    When ``n < d`` they come from the ``n x n`` Gram matrix (the same nonzero eigenvalues), padded with zeros.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or not np.all(np.isfinite(x)):
        raise InvalidInputError(f"Expected a finite (n >= 2, d) array of token vectors, got shape {x.shape}.")
    n, d = x.shape
    if centered:
        x = x - x.mean(0)
    if n < d:
        lam = np.linalg.eigvalsh(x @ x.T / n)
        lam = np.concatenate([np.zeros(d - n), lam])
    else:
        lam = np.linalg.eigvalsh(x.T @ x / n)
    return np.clip(lam, 0.0, None)[::-1].copy()


def parallel_analysis(
    vectors: np.ndarray,
    prompt_ids: np.ndarray,
    n_perm: int = 100,
    alpha: float = 0.05,
    centered: bool = True,
    seed: int = 0,  # pragma: no mutate: default seed
) -> ParallelAnalysis:
    """Spikes as eigenvalues beyond a permutation null that keeps the prompt structure.

    Each copy permutes every coordinate independently, by whole prompt blocks (Horn 1965; Buja & Eyuboglu
    1992, with blocks so the tokens of one prompt stay together): the null keeps each coordinate's variance
    and its correlation within prompts, and removes the correlation between coordinates. An eigenvalue is a
    spike when it exceeds the ``1 - alpha`` quantile of the *largest* null eigenvalue (comparing the ``i``-th
    with the ``i``-th null one would count the top of the bulk once spikes are found: it sits above the null's
    ``i``-th). Coordinates of unequal variance are not structure here (the
    null is diagonal, not isotropic), so one massive coordinate is not a spike. Introduced in: chapter 4.
    """
    x = np.asarray(vectors, dtype=np.float64)
    ids = np.asarray(prompt_ids)
    if x.ndim != 2 or ids.shape != (x.shape[0],) or not np.all(np.isfinite(x)):
        raise InvalidInputError(
            f"Expected finite vectors (n, d) and one prompt id per vector; got {x.shape} and {ids.shape}."
        )
    if not isinstance(n_perm, int) or n_perm < 20 or not 0 < alpha < 1:
        raise InvalidInputError(f"Need an integer n_perm >= 20 and 0 < alpha < 1; got {n_perm!r}, {alpha!r}.")
    order = np.argsort(ids, kind="stable")  # pragma: no mutate: sort kind spelling
    x, ids = x[order], ids[order]
    _, groups, sizes = np.unique(ids, return_inverse=True, return_counts=True)
    if len(sizes) < 3:
        raise InvalidInputError(
            f"The tokens come from {len(sizes)} prompts: permuting prompts needs at least 3."
        )
    within = np.arange(len(ids)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    rng = np.random.default_rng(seed)
    columns = np.arange(x.shape[1])
    null = np.stack(
        [
            sample_eigvals(
                x[_block_permutation(groups, within, len(sizes), x.shape[1], rng), columns], centered
            )
            for _ in range(n_perm)
        ]
    )
    observed = sample_eigvals(x, centered)
    cut = float(np.quantile(null[:, 0], 1 - alpha))
    return ParallelAnalysis(observed, null, cut, int(np.sum(observed > cut)), float(alpha), len(sizes))


@dataclass(frozen=True)
class RankEstimate:
    """Kritchman & Nadler's rank: the number of eigenvalues that pass their sequential Tracy–Widom test."""

    n_spikes: int
    sigma2: float  # noise variance estimated with that many signals
    alpha: float
    n_samples: float


def _kn_noise(lam: np.ndarray, n: float, k: int, max_iter: int = 30, tol: float = 1e-5) -> float:
    """Noise variance with ``k`` signals (Kritchman & Nadler 2008, their ``KN_noiseEst``): start from
    ``sigma2 = sum_{j>k} lam_j / ((d - k)(1 - k/n))`` and iterate ``sigma2 = (sum_{j>k} lam_j + sum_{j<=k}
    (lam_j - rho_j)) / (d - k)``, ``rho_j`` the population value behind ``lam_j`` (the larger root of
    ``rho^2 - (lam_j + sigma2 - (d - k) sigma2 / n) rho + lam_j sigma2 = 0``)."""
    d = len(lam)
    rest = float(np.sum(lam[k:]))
    sigma2 = rest / (d - k) / (1 - k / n)
    for _ in range(max_iter):
        b = lam[:k] + sigma2 - (d - k) / n * sigma2
        disc = b**2 - 4 * lam[:k] * sigma2
        if np.any(disc < 0):
            break
        rho = (b + np.sqrt(disc)) / 2
        if np.any(lam[:k] < rho):
            break
        new = (rest + float(np.sum(lam[:k] - rho))) / (d - k)
        if abs(new - sigma2) < tol * sigma2:
            break
        sigma2 = new
    return sigma2


def kritchman_nadler(eigvals: np.ndarray, n_samples: float, alpha: float = 0.01) -> RankEstimate:
    """The number of signals by sequential tests (Kritchman & Nadler 2008): for ``k = 1, 2, ...`` signal ``k``
    is real when ``n lam_k > sigma2_k (mu_{n, d-k} + s_alpha sigma_{n, d-k})``, with
    ``mu_{n,p} = (sqrt(n - 1/2) + sqrt(p - 1/2))^2``, ``sigma_{n,p} = sqrt(mu_{n,p}) (1/sqrt(n - 1/2) +
    1/sqrt(p - 1/2))^(1/3)``, ``s_alpha = F_1^{-1}(1 - alpha)`` and ``sigma2_k`` re-estimated with ``k``
    signals (``_kn_noise``); the count is the last ``k`` that passes. ``eigvals`` of ``X^T X / n``; ``n`` the
    (effective) number of samples: correlated tokens need the effective one (``mp_fit(...).n_samples``).
    Introduced in: chapter 4.
    """
    lam = _as_spectrum(eigvals)
    if not np.isfinite(n_samples) or n_samples < 2:
        raise InvalidInputError(
            f"n_samples must be a number >= 2 (the effective number of tokens), got {n_samples!r}."
        )
    if not 0 < alpha < 1:
        raise InvalidInputError(f"alpha must lie in (0, 1), got {alpha!r}.")
    n, d = float(n_samples), len(lam)
    s_alpha = tracy_widom1_quantile(1.0 - alpha)
    k, sigma2 = 0, float(lam.mean())
    for candidate in range(1, int(min(n, d)) - 1):
        noise = _kn_noise(lam, n, candidate)
        mu = (np.sqrt(n - 0.5) + np.sqrt(d - candidate - 0.5)) ** 2
        scale = np.sqrt(mu) * (1 / np.sqrt(n - 0.5) + 1 / np.sqrt(d - candidate - 0.5)) ** (1 / 3)
        if not n * lam[candidate - 1] > noise * (mu + s_alpha * scale):
            break
        k, sigma2 = candidate, noise
    return RankEstimate(k, sigma2, float(alpha), n)


# --- summaries of a spectrum -------------------------------------------------------------------------------


def effective_rank(eigvals: np.ndarray) -> float:
    """``exp(-sum p_i log p_i)``, ``p_i = lambda_i / sum lambda`` (Roy & Vetterli 2007); between 1 and d."""
    lam = _as_spectrum(eigvals)
    p = lam[lam > 0] / lam.sum()
    return float(np.exp(-np.sum(p * np.log(p))))


def participation_ratio(eigvals: np.ndarray) -> float:
    """``(sum lambda)^2 / sum lambda^2``; d for an isotropic spectrum, 1 for a single direction."""
    lam = _as_spectrum(eigvals)
    return float(lam.sum() ** 2 / np.sum(lam**2))


def stable_rank(eigvals: np.ndarray) -> float:
    """``sum lambda / max lambda`` = ``||X||_F^2 / ||X||_2^2`` of the centred data matrix ``X``."""
    lam = _as_spectrum(eigvals)
    return float(lam.sum() / lam[0])


def streamed_spectrum_profile(cap: Capture, centered: bool = True, alpha: float = 0.01) -> pd.DataFrame:
    """One row per depth of the streamed covariance (``cap.all_eigvals``: every captured token, the first
    position included): gamma, effective rank, participation ratio, stable rank, MP fit with ``N_eff``
    (``effective_sample_size``). The same numbers of the sink-free token sample:
    ``layer_spectra.token_sample_spectrum_profile``."""
    import pandas as pd

    rows = []
    spectra = cap.all_eigvals(centered=centered)
    for index, (layer, lam) in enumerate(zip(cap.depths.tolist(), spectra)):
        n_eff = effective_sample_size(cap, layer)
        fit = mp_fit(lam, n_eff.n_eff, alpha=alpha)
        rows.append(
            {
                "layer": layer,
                "gamma": float(cap.gamma[index]),
                "effective_rank": effective_rank(lam),
                "participation_ratio": participation_ratio(lam),
                "stable_rank": stable_rank(lam),
                "sigma2": fit.sigma2,
                "n_spikes": fit.n_spikes,
                "ks": fit.ks,
                "n_eff": n_eff.n_eff,
                "rho": n_eff.rho,
            }
        )
    return pd.DataFrame(rows)
