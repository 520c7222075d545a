"""The Marchenko–Pastur law fitted to the bulk of a covariance spectrum, and the spikes counted above it.

Usage: ``fit = mp_fit(lam, n)``: ``fit.sigma2``, ``fit.edges``, ``fit.n_spikes``, ``fit.spikes``, ``fit.ks``
(``lam = cap.eigvals(l)`` or ``np.linalg.eigvalsh(C)``; ``n`` an effective sample size, ``spectra``).

``(q, sigma2)`` minimise the squared distance of the sorted bulk to the MP law's quantiles
``sigma2 Q_q((i - 1/2) / d_b)``; an eigenvalue is a spike above ``spike_threshold`` (the upper edge
``sigma2 (1 + sqrt q)^2`` plus the Tracy–Widom margin, ``mp_law``) that also clears the local edge test
(``mp_law.edge_statistic``); ``mp_fit`` says how the bulk and the count are settled.
Introduced in: chapter 4 (book/paper.md, "Spectral density", claim 3; Theorem 6.3 for mixtures in chapter 6).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .mp_law import (
    EDGE_POINTS,
    _as_spectrum,
    _edge_statistic,
    _full_quantiles,
    bbp_threshold,
    edge_quantile,
    mp_cdf,
    mp_edges,
    spike_population,
    spike_threshold,
)

# --- the fit -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MPFit:
    """A Marchenko–Pastur fit of one spectrum: the bulk's scale, ratio and edges, the spikes beyond, the misfit.

    Attributes
    ----------
    sigma2 : float
        Noise variance fitted to the bulk.
    ratio : float
        ``q = d_bulk / n_samples`` fitted to the bulk (``d_bulk = d - n_spikes``).
    n_samples : float
        The effective sample size ``N = d_bulk / ratio`` the law was fitted with.
    edges : tuple of float
        ``sigma2 (1 -+ sqrt q)^2``.
    threshold : float
        The spike cut: upper edge plus the Tracy–Widom margin (``spike_threshold``); the edge test may count
        fewer spikes above it.
    n_spikes : int
        Eigenvalues counted as spikes.
    spikes : numpy.ndarray
        Those eigenvalues, descending.
    spike_population : numpy.ndarray
        The population eigenvalue behind each spike (``mp_law.spike_population``).
    ks : float
        Kolmogorov–Smirnov distance of the bulk to the fitted MP law.
    bulk : numpy.ndarray
        The nonzero eigenvalues fitted as bulk, ascending.
    alpha : float
        False-alarm level of the spike cut.
    settled : bool
        False when the spikes ate more than the allowed share of the bulk (no MP bulk; ``n_spikes`` is then a
        lower bound).
    n_bound : float
        The upper bound on ``N`` the ratio was fitted under (inf: none given).
    edge_ratio : float
        ``q`` of the law fitted to the bulk's top edge (it sets the threshold).
    edge_sigma2 : float
        ``sigma2`` of that law.

    The property ``bbp_threshold`` is the population eigenvalue a spike needs to be detectable at this ``sigma2``
    and ratio.

    Examples
    --------
    Two spikes of variance 10 and 6 planted in unit noise (2000 tokens, ``d = 200``): the fit finds both, the
    noise variance 1, the ratio 0.1 and the population eigenvalues behind the spikes:

    >>> import numpy as np
    >>> from latentbook.analysis import bulk_fit, ranks, synthetic
    >>> lam = ranks.sample_eigvals(synthetic.spiked_covariance(2000, 200, [10.0, 6.0], seed=0).x)
    >>> fit = bulk_fit.mp_fit(lam)
    >>> fit.n_spikes, fit.settled, round(fit.sigma2, 2), round(fit.ratio, 2)
    (2, True, 1.0, 0.1)
    >>> np.round(fit.spike_population, 0).tolist()
    [10.0, 6.0]
    >>> bool(fit.spikes.min() > fit.threshold > fit.edges[1]), len(fit.bulk)
    (True, 198)
    >>> round(float(fit.bbp_threshold), 2)  # sigma2 (1 + sqrt q)
    1.32
    """

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

    Parameters
    ----------
    eigvals : numpy.ndarray
        One covariance spectrum (``cap.eigvals(l)``, ``np.linalg.eigvalsh(C)``), finite and nonnegative, in any
        order.
    n_samples : float, optional
        None fits the effective number of tokens freely; a number ``>= 2`` is an upper bound on it (or, with
        ``fit_ratio=False``, the ``N`` of the i.i.d. law).
    alpha : float
        False-alarm level of the spike cut and of the edge test, in ``(0, 1)``.
    trim : float
        Share of the bulk's top left out of the robust first stage, in ``[0, 0.9)``.
    min_bulk : float
        Smallest share of the nonzero eigenvalues that must stay in the bulk, in ``(0, 1]``.
    zero_tol : float
        Eigenvalues below this times the largest are zeros (the atom at 0), in ``[0, 1)``.
    edge_window : float
        Share of the bulk's top the edge stage fits the law to (at least 20 eigenvalues), in ``(0, 1]``.
    fit_ratio : bool
        Fit the ratio (True) or fix ``q = d_b / n_samples`` (False; needs ``n_samples``).

    Returns
    -------
    MPFit
        The fitted law, the spikes above it and the misfit of the bulk.

    Raises
    ------
    InvalidInputError
        For a spectrum that is not 1-D, finite and nonnegative, fewer than 3 nonzero eigenvalues, options out of
        range, or ``fit_ratio=False`` without ``n_samples``.

    Examples
    --------
    A null spectrum (2000 Gaussian tokens, ``d = 200``) has no spike and its ratio 0.1; two planted spikes are
    found, with the i.i.d. ratio fixed too (``q = 198 / 2000``):

    >>> from latentbook.analysis import bulk_fit, ranks, synthetic
    >>> null = bulk_fit.mp_fit(ranks.sample_eigvals(synthetic.gaussian(2000, 200, seed=0)))
    >>> null.n_spikes, round(null.sigma2, 2), round(null.ratio, 2)
    (0, 1.0, 0.1)
    >>> lam = ranks.sample_eigvals(synthetic.spiked_covariance(2000, 200, [10.0, 6.0], seed=0).x)
    >>> fit = bulk_fit.mp_fit(lam, 2000, fit_ratio=False)
    >>> fit.n_spikes, round(fit.ratio, 3), fit.n_samples
    (2, 0.099, 2000.0)
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
