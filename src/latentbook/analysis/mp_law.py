"""The Marchenko–Pastur law of a null covariance spectrum, the Tracy–Widom margin of its largest eigenvalue,
the BBP transition of spikes and a location- and scale-free edge test.

Usage:

1. ``mp_edges(q, sigma2)``, ``mp_density(x, q, sigma2)``, ``mp_cdf(x, q, sigma2)``: the law at ratio ``q = d / N``;
2. ``spike_threshold(sigma2, q, n)``: the cut above which an eigenvalue is a spike (edge plus the Tracy–Widom
   margin); ``bbp_threshold(sigma2, q)``, ``spike_location(ell, sigma2, q)``, ``spike_population(lam, sigma2, q)``:
   where a population spike lands in the sample spectrum and back;
3. ``edge_statistic(lam, k)`` against ``edge_quantile(alpha)``: does the ``k``-th eigenvalue stand out from the
   bulk's own top.

The null model: ``N`` i.i.d. tokens ``h ~ N(0, sigma2 I_d)``; with ratio ``q = d / N`` the eigenvalues of
their sample covariance follow the Marchenko–Pastur law on ``[sigma2 (1 - sqrt q)^2, sigma2 (1 + sqrt q)^2]``
(plus an atom ``1 - 1/q`` at 0 when ``q > 1``). Structure shows as eigenvalues beyond the upper edge
("spikes"): a population eigenvalue ``sigma2 (1 + theta)`` leaves the bulk iff ``theta > sqrt(q)`` (the BBP
threshold, Baik, Ben Arous & Péché 2005). The largest null eigenvalue fluctuates around the edge on the
Tracy–Widom scale ``sigma2 N^(-2/3) (1 + sqrt q)(1 + 1/sqrt q)^(1/3)`` (Johnstone 2001), which sets the spike
margin.
Introduced in: chapter 4 (book/paper.md, "Spectral density", claim 3; Theorem 6.3 for mixtures in chapter 6).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..errors import InvalidInputError

# --- the Marchenko–Pastur law ------------------------------------------------------------------------------


def _check_ratio(q: float, sigma2: float) -> tuple[float, float]:
    if not (np.isfinite(q) and q > 0 and np.isfinite(sigma2) and sigma2 > 0):
        raise InvalidInputError(
            f"Need a ratio q = d/N > 0 and a scale sigma2 > 0, got q={q!r}, sigma2={sigma2!r}."
        )
    return float(q), float(sigma2)


def mp_edges(q: float, sigma2: float = 1.0) -> tuple[float, float]:
    """Bulk edges ``lambda_pm = sigma2 (1 pm sqrt q)^2``, ratio ``q = d/N``, noise variance ``sigma2``.

    Parameters
    ----------
    q : float
        The ratio ``d / N`` of dimensions to tokens, ``> 0``.
    sigma2 : float
        The noise variance, ``> 0``.

    Returns
    -------
    tuple of float
        ``(lambda_-, lambda_+)``, the lower and upper edge of the bulk.

    Raises
    ------
    InvalidInputError
        For a ratio or a scale that is not a finite positive number.

    Examples
    --------
    At ratio 0.25 the edges are ``(1 - 0.5)^2`` and ``(1 + 0.5)^2``; they scale with ``sigma2``, and the lower
    edge touches 0 at ``q = 1``:

    >>> from latentbook.analysis import mp_law
    >>> tuple(round(float(e), 3) for e in mp_law.mp_edges(0.25))
    (0.25, 2.25)
    >>> tuple(round(float(e), 3) for e in mp_law.mp_edges(0.25, sigma2=2.0))
    (0.5, 4.5)
    >>> tuple(round(float(e), 3) for e in mp_law.mp_edges(1.0))
    (0.0, 4.0)
    """
    q, sigma2 = _check_ratio(q, sigma2)
    return sigma2 * (1 - np.sqrt(q)) ** 2, sigma2 * (1 + np.sqrt(q)) ** 2


def mp_density(x: np.ndarray | float, q: float, sigma2: float = 1.0) -> np.ndarray:
    """Continuous part of the MP law: ``rho(x) = sqrt((lambda_+ - x)(x - lambda_-)) / (2 pi sigma2 q x)``.

    Zero outside the edges; it integrates to ``min(1, 1/q)`` (the rest is the atom at 0 when ``q > 1``).

    Parameters
    ----------
    x : array_like or float
        Where to evaluate the density.
    q : float
        The ratio ``d / N``, ``> 0``.
    sigma2 : float
        The noise variance, ``> 0``.

    Returns
    -------
    numpy.ndarray
        ``rho(x)``, float64, of the shape of ``x``; 0 outside ``(lambda_-, lambda_+)``.

    Examples
    --------
    The density integrates to 1 at ``q = 0.25`` and to ``1/q = 0.25`` at ``q = 4`` (the atom at 0 holds the
    rest); at ``x = 1``, ``q = 0.25`` it is ``sqrt(1.25 * 0.75) / (2 pi 0.25)``, and it is 0 beyond the edge:

    >>> import numpy as np
    >>> from latentbook.analysis import mp_law
    >>> x = np.linspace(0.0, 3.0, 300_001)
    >>> round(float(np.sum(mp_law.mp_density(x, 0.25)) * (x[1] - x[0])), 3)
    1.0
    >>> x = np.linspace(0.0, 10.0, 1_000_001)
    >>> round(float(np.sum(mp_law.mp_density(x, 4.0)) * (x[1] - x[0])), 3)
    0.25
    >>> expected = np.sqrt((2.25 - 1.0) * (1.0 - 0.25)) / (2 * np.pi * 0.25)
    >>> round(float(mp_law.mp_density(1.0, 0.25)), 4), round(float(expected), 4)
    (0.6164, 0.6164)
    >>> float(mp_law.mp_density(3.0, 0.25))
    0.0
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
    """CDF of the full MP law: ``(1 - 1/q)_+ [x >= 0] + int_0^x rho`` (exact, no numerical integration).

    Parameters
    ----------
    x : array_like or float
        Where to evaluate the CDF.
    q : float
        The ratio ``d / N``, ``> 0``.
    sigma2 : float
        The noise variance, ``> 0``.

    Returns
    -------
    numpy.ndarray
        ``F(x)``, float64, of the shape of ``x``, in ``[0, 1]``.

    Raises
    ------
    InvalidInputError
        For a ratio or a scale that is not a finite positive number.

    Examples
    --------
    0 at the lower edge and 1 at the upper one; at ``q = 4`` the atom ``1 - 1/q = 0.75`` sits at 0:

    >>> from latentbook.analysis import mp_law
    >>> [round(float(v), 3) for v in mp_law.mp_cdf([0.25, 2.25], 0.25)]
    [0.0, 1.0]
    >>> [round(float(v), 3) for v in mp_law.mp_cdf([-1.0, 0.0, 9.0], 4.0)]
    [0.0, 0.75, 1.0]
    >>> bool(0.0 < mp_law.mp_cdf(1.0, 0.25) < 1.0)
    True
    """
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

    Parameters
    ----------
    s : float
        Where to evaluate the CDF.

    Returns
    -------
    float
        ``F_1(s)``, in ``[0, 1]``.

    Examples
    --------
    Johnstone's (2001) quantiles 0.9793 and 2.0234 are the 0.95 and 0.99 points; the CDF runs from 0 to 1:

    >>> from latentbook.analysis import mp_law
    >>> round(mp_law.tracy_widom1_cdf(0.9793), 3), round(mp_law.tracy_widom1_cdf(2.0234), 3)
    (0.95, 0.99)
    >>> round(mp_law.tracy_widom1_cdf(-8.0), 4), round(mp_law.tracy_widom1_cdf(8.0), 4)
    (0.0, 1.0)
    """
    t, w = np.polynomial.legendre.leggauss(60)
    x, w = s + (t + 1) * 8.0, w * 8.0
    from scipy.special import airy

    kernel = 0.5 * airy((x[:, None] + x[None, :]) / 2)[0]
    root = np.sqrt(w)
    return float(np.linalg.det(np.eye(len(x)) - root[:, None] * kernel * root[None, :]))


@lru_cache(maxsize=32)
def tracy_widom1_quantile(p: float) -> float:
    """``F_1^{-1}(p)``; e.g. 0.95 -> 0.9793, 0.99 -> 2.0234 (Johnstone 2001, Table 1).

    Parameters
    ----------
    p : float
        The level, in ``(0, 1)``.

    Returns
    -------
    float
        The ``p`` quantile of the GOE Tracy–Widom law (root of ``tracy_widom1_cdf(s) = p``, cached).

    Raises
    ------
    InvalidInputError
        For a level outside ``(0, 1)``.

    Examples
    --------
    >>> from latentbook.analysis import mp_law
    >>> round(mp_law.tracy_widom1_quantile(0.95), 4), round(mp_law.tracy_widom1_quantile(0.99), 4)
    (0.9793, 2.0234)
    >>> round(mp_law.tracy_widom1_cdf(mp_law.tracy_widom1_quantile(0.5)), 6)
    0.5
    """
    if not 0 < p < 1:
        raise InvalidInputError(f"A quantile level must lie in (0, 1), got {p!r}.")
    from scipy.optimize import brentq

    return float(brentq(lambda s: tracy_widom1_cdf(s) - p, -10.0, 12.0, xtol=1e-10))


def tracy_widom_scale(sigma2: float, q: float, n_samples: float) -> float:
    """Fluctuation scale of the largest null eigenvalue: ``sigma2 N^(-2/3) (1 + sqrt q)(1 + 1/sqrt q)^(1/3)``.

    From Johnstone (2001): ``lambda_max ~ sigma2 (1 + sqrt q)^2 + scale * TW_1`` for the covariance of ``N``
    i.i.d. Gaussian tokens in ``d = q N`` dimensions.

    Parameters
    ----------
    sigma2 : float
        The noise variance, ``> 0``.
    q : float
        The ratio ``d / N``, ``> 0``.
    n_samples : float
        The number of tokens ``N``.

    Returns
    -------
    float
        The scale of ``lambda_max - sigma2 (1 + sqrt q)^2``, in units of the eigenvalues.

    Raises
    ------
    InvalidInputError
        For a ratio or a scale that is not a finite positive number.

    Examples
    --------
    At ``q = 1`` and ``N = 1000`` the scale is ``1000^(-2/3) * 2 * 2^(1/3)``; the largest eigenvalue of 400
    Gaussian tokens in 100 dimensions lies within a few such units of the edge 2.25:

    >>> from latentbook.analysis import mp_law, ranks, synthetic
    >>> round(float(mp_law.tracy_widom_scale(1.0, 1.0, 1000)), 4), round(2 * 2 ** (1 / 3) / 100, 4)
    (0.0252, 0.0252)
    >>> scale = mp_law.tracy_widom_scale(1.0, 0.25, 400)
    >>> lam = ranks.sample_eigvals(synthetic.gaussian(400, 100, seed=0))
    >>> bool(abs(lam[0] - 2.25) < 4 * scale)
    True
    """
    q, sigma2 = _check_ratio(q, sigma2)
    return sigma2 * n_samples ** (-2 / 3) * (1 + np.sqrt(q)) * (1 + 1 / np.sqrt(q)) ** (1 / 3)


def spike_threshold(sigma2: float, q: float, n_samples: float, alpha: float = 0.01) -> float:
    """Cut above which an eigenvalue is a spike: ``sigma2 (1 + sqrt q)^2 + F_1^{-1}(1 - alpha) * TW scale``.

    Under the null the largest eigenvalue exceeds it with probability ``alpha`` (0.01: 2.02 TW units).

    Parameters
    ----------
    sigma2 : float
        The noise variance, ``> 0``.
    q : float
        The ratio ``d / N``, ``> 0``.
    n_samples : float
        The number of tokens ``N``.
    alpha : float
        The false-alarm level, in ``(0, 1)``.

    Returns
    -------
    float
        The cut: eigenvalues above it are spikes.

    Raises
    ------
    InvalidInputError
        For a ratio or a scale that is not a finite positive number, or ``alpha`` outside ``(0, 1)``.

    Examples
    --------
    The upper edge 2.25 (``q = 0.25``) plus 2.0234 Tracy–Widom units; the top eigenvalue of 400 Gaussian
    tokens in 100 dimensions stays below it, that of a planted spike of variance 5 does not:

    >>> from latentbook.analysis import mp_law, ranks, synthetic
    >>> cut = mp_law.spike_threshold(1.0, 0.25, 400)
    >>> round(float(cut), 3), round(float(2.25 + 2.0234 * mp_law.tracy_widom_scale(1.0, 0.25, 400)), 3)
    (2.331, 2.331)
    >>> bool(ranks.sample_eigvals(synthetic.gaussian(400, 100, seed=0))[0] < cut)
    True
    >>> spiked = synthetic.spiked_covariance(400, 100, [5.0], seed=0)
    >>> bool(ranks.sample_eigvals(spiked.x)[0] > cut)
    True
    """
    return mp_edges(q, sigma2)[1] + tracy_widom1_quantile(1.0 - alpha) * tracy_widom_scale(
        sigma2, q, n_samples
    )


def bbp_threshold(sigma2: float, q: float) -> float:
    """Smallest population eigenvalue that separates from the bulk: ``sigma2 (1 + sqrt q)`` (BBP 2005).

    Parameters
    ----------
    sigma2 : float
        The noise variance, ``> 0``.
    q : float
        The ratio ``d / N``, ``> 0``.

    Returns
    -------
    float
        The population eigenvalue at the BBP transition.

    Raises
    ------
    InvalidInputError
        For a ratio or a scale that is not a finite positive number.

    Examples
    --------
    At ``q = 0.25`` a spike must exceed ``1.5 sigma2``; at the threshold it lands on the upper edge:

    >>> from latentbook.analysis import mp_law
    >>> float(mp_law.bbp_threshold(1.0, 0.25)), float(mp_law.bbp_threshold(2.0, 0.25))
    (1.5, 3.0)
    >>> float(mp_law.spike_location(1.5, 1.0, 0.25)), float(mp_law.mp_edges(0.25)[1])
    (2.25, 2.25)
    """
    q, sigma2 = _check_ratio(q, sigma2)
    return sigma2 * (1 + np.sqrt(q))


def spike_location(ell: np.ndarray | float, sigma2: float, q: float) -> np.ndarray:
    """Where a population eigenvalue ``ell = sigma2 (1 + theta)`` lands in the sample spectrum (N, d -> inf).

    ``sigma2 (1 + theta)(1 + q / theta)`` above the BBP threshold ``theta > sqrt q``; the upper edge below it.

    Parameters
    ----------
    ell : array_like or float
        Population eigenvalues.
    sigma2 : float
        The noise variance, ``> 0``.
    q : float
        The ratio ``d / N``, ``> 0``.

    Returns
    -------
    numpy.ndarray
        The limiting sample eigenvalue of each, float64, of the shape of ``ell``.

    Raises
    ------
    InvalidInputError
        For a ratio or a scale that is not a finite positive number.

    Examples
    --------
    At ``q = 0.25``: ``ell = 3`` (``theta = 2``) lands at ``3 (1 + 0.25 / 2) = 3.375``; spikes up to the BBP
    threshold 1.5 stay at the edge 2.25:

    >>> from latentbook.analysis import mp_law
    >>> [round(float(v), 3) for v in mp_law.spike_location([1.2, 1.5, 3.0], 1.0, 0.25)]
    [2.25, 2.25, 3.375]
    """
    q, sigma2 = _check_ratio(q, sigma2)
    theta = np.asarray(ell, dtype=np.float64) / sigma2 - 1.0
    above = theta > np.sqrt(q)
    safe = np.where(above, theta, 1.0)
    return np.where(above, sigma2 * (1 + safe) * (1 + q / safe), mp_edges(q, sigma2)[1])


def spike_population(lam: np.ndarray | float, sigma2: float, q: float) -> np.ndarray:
    """Inverse of ``spike_location``: the population eigenvalue behind a sample spike ``lam > lambda_+``.

    Solves ``theta^2 - (lam/sigma2 - 1 - q) theta + q = 0`` for its larger root; NaN inside the bulk.

    Parameters
    ----------
    lam : array_like or float
        Sample eigenvalues.
    sigma2 : float
        The noise variance, ``> 0``.
    q : float
        The ratio ``d / N``, ``> 0``.

    Returns
    -------
    numpy.ndarray
        The population eigenvalue behind each, float64, of the shape of ``lam``; NaN for those not above
        ``lambda_+``.

    Raises
    ------
    InvalidInputError
        For a ratio or a scale that is not a finite positive number.

    Examples
    --------
    It undoes ``spike_location``; an eigenvalue inside the bulk (edge 2.25 at ``q = 0.25``) has none:

    >>> from latentbook.analysis import mp_law
    >>> [round(float(v), 3) for v in mp_law.spike_population([2.0, 3.375], 1.0, 0.25)]
    [nan, 3.0]
    >>> round(float(mp_law.spike_population(mp_law.spike_location(7.0, 2.0, 0.1), 2.0, 0.1)), 3)
    7.0
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

    Parameters
    ----------
    eigvals : numpy.ndarray
        One spectrum, finite and nonnegative, in any order.
    k : int
        Which eigenvalue to test (1 for the largest), ``1 <= k <= d - EDGE_POINTS``.

    Returns
    -------
    float
        ``T_k``; compare it with ``edge_quantile(alpha)``.

    Raises
    ------
    InvalidInputError
        For a spectrum that is not 1-D, finite and nonnegative, or ``k`` out of range.

    Examples
    --------
    A planted spike of variance 5 (2000 tokens, ``d = 200``) stands far out of the bulk's top, the top of a
    null spectrum does not; ``T`` does not change when the spectrum is scaled and shifted:

    >>> from latentbook.analysis import mp_law, ranks, synthetic
    >>> lam = ranks.sample_eigvals(synthetic.spiked_covariance(2000, 200, [5.0], seed=0).x)
    >>> null = ranks.sample_eigvals(synthetic.gaussian(2000, 200, seed=0))
    >>> cut = mp_law.edge_quantile(0.01)
    >>> bool(mp_law.edge_statistic(lam, 1) > cut), bool(mp_law.edge_statistic(null, 1) < cut)
    (True, True)
    >>> round(mp_law.edge_statistic(2 * lam + 1, 1) / mp_law.edge_statistic(lam, 1), 6)
    1.0
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
    ``log alpha`` in the simulated table (``0.001 <= alpha <= 0.1``; above 0.1 the 0.1 quantile, conservative).

    Parameters
    ----------
    alpha : float
        The false-alarm level, in ``[0.001, 1)``.

    Returns
    -------
    float
        The cut on ``edge_statistic``.

    Raises
    ------
    InvalidInputError
        For ``alpha`` outside ``[0.001, 1)``.

    Examples
    --------
    The table's own levels come back exactly, a level between two of them lies between their quantiles, and
    levels above 0.1 get the 0.1 quantile:

    >>> from latentbook.analysis import mp_law
    >>> mp_law.edge_quantile(0.01), mp_law.edge_quantile(0.05), mp_law.edge_quantile(0.5)
    (2.705, 1.513, 0.935)
    >>> bool(mp_law.edge_quantile(0.05) < mp_law.edge_quantile(0.02) < mp_law.edge_quantile(0.01))
    True
    """
    if not 0.001 <= alpha < 1:
        raise InvalidInputError(f"The edge test's table covers alpha >= 0.001, got {alpha!r}.")
    log_alpha = np.log(min(alpha, 0.1))
    return float(np.interp(-log_alpha, -np.log(_EDGE_ALPHAS), _EDGE_QUANTILES))


# --- a spectrum's input check (every estimator of a spectrum) ----------------------------------------------


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
