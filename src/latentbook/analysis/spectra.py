"""Covariance spectra against the Marchenko–Pastur null: bulk fit, spikes, effective rank.

Usage:

1. ``lam = cap.eigvals(l)`` (or ``np.linalg.eigvalsh(C)``) and an effective sample size
   ``n = effective_sample_size(cap, l).n_eff`` (tokens of one prompt are correlated, see below);
2. ``fit = mp_fit(lam, n)``: ``fit.sigma2``, ``fit.edges``, ``fit.n_spikes``, ``fit.spikes``, ``fit.ks``;
   or ``fit_layer(cap, l)`` for both steps, and ``depth_profile(cap)`` for every depth in a table;
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
Introduced in: chapter 4 (PAPER.md, "Spectral density", claim 3; Theorem 6.3 for mixtures in chapter 6).
"""

from __future__ import annotations

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


def _bulk_quantile(p: np.ndarray, q: float, sigma2: float) -> np.ndarray:
    """Inverse of ``_bulk_cdf`` by interpolation on a fine grid in ``theta`` (dense near both edges)."""
    theta = np.linspace(0.0, np.pi, 8193)
    mid, r = sigma2 * (1 + q), 2 * sigma2 * np.sqrt(q)
    x = mid - r * np.cos(theta)
    g = _bulk_cdf(x, q, sigma2)
    return mid - r * np.cos(np.interp(p, g, theta))


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


# --- the fit -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MPFit:
    """A Marchenko–Pastur fit of one spectrum: the bulk's scale and edges, the spikes beyond, the misfit."""

    sigma2: float  # noise variance fitted to the bulk
    ratio: float  # q = d_bulk / n_samples used for the bulk (d_bulk = d - n_spikes)
    n_samples: float  # the (effective) sample size N the law was fitted with
    edges: tuple[float, float]  # sigma2 (1 -+ sqrt q)^2
    threshold: float  # spike cut: upper edge + TW margin (see spike_threshold)
    n_spikes: int
    spikes: np.ndarray  # eigenvalues above the threshold, descending
    spike_population: np.ndarray  # population eigenvalue behind each spike (spike_population)
    ks: float  # Kolmogorov–Smirnov distance of the bulk to the fitted MP law
    bulk: np.ndarray  # the eigenvalues fitted as bulk, ascending
    alpha: float  # false-alarm level of the spike cut
    settled: bool  # False: the spikes ate more than the allowed share of the bulk (no MP bulk; a lower bound)

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


def _fit_scale(bulk: np.ndarray, q: float, trim: float) -> float:
    """Least squares through the origin of sorted bulk eigenvalues on MP quantiles, top ``trim`` left out."""
    n = len(bulk)
    p = (np.arange(1, n + 1) - 0.5) / n
    use = slice(0, max(2, int(np.floor((1.0 - trim) * n))))
    quantiles = _bulk_quantile(p[use], q, 1.0)
    return float(np.dot(bulk[use], quantiles) / np.dot(quantiles, quantiles))


def _ks(values: np.ndarray, q: float, sigma2: float) -> float:
    """``sup_x |F_n(x) - F(x)|`` of the values against the full MP law (atom included), exact with ties."""
    xs, counts = np.unique(values, return_counts=True)
    right = np.cumsum(counts) / len(values)
    law = mp_cdf(xs, q, sigma2)
    law_left = law - np.where(xs == 0, max(0.0, 1.0 - 1.0 / q), 0.0)
    return float(max(np.max(np.abs(right - law)), np.max(np.abs(right - counts / len(values) - law_left))))


def mp_fit(
    eigvals: np.ndarray,
    n_samples: float,
    alpha: float = 0.01,
    trim: float = 0.1,
    min_bulk: float = 0.5,
    zero_tol: float = 1e-6,
    max_iter: int = 50,
) -> MPFit:
    """Fit the MP law to the bulk of a spectrum and count the spikes above it.

    Robust fit: with ``k`` spikes (start ``k = 0``), ``q = (d - k) / N`` and the bulk is the next
    ``min(d - k, N)`` eigenvalues (the rest is the atom at 0 when ``d - k > N``); numerical zeros (below
    ``zero_tol`` times the largest eigenvalue: rank deficiency, repeated tokens) are left out of it.
    ``sigma2`` is the least-squares slope of the sorted bulk on the MP quantiles ``Q_q((i - 1/2) / n_bulk)``,
    leaving out the bulk's top ``trim``. ``k`` becomes the number of eigenvalues above
    ``spike_threshold(sigma2, q, N, alpha)``; repeat until ``k`` is stable. Spikes never enter the scale fit,
    so they cannot inflate ``sigma2``.

    When the spike count would leave less than ``min_bulk`` of the bulk's eigenvalues, there is no MP bulk to
    speak of (a heavy-tailed or strongly structured spectrum): the fit stops there with ``settled = False``
    and ``n_spikes`` is a lower bound.

    ``ks`` is ``sup |F_n - F_MP|`` over all eigenvalues but the spikes, against the full law (atom at 0
    included), so eigenvalues the law does not predict (e.g. nonzero ones where it puts the atom) count as
    misfit. Eigenvalues repel, so compare ``ks`` with that of a null spectrum of the same ``d`` and ``N``,
    not with the i.i.d. KS table.
    Introduced in: chapter 4.
    """
    lam = _as_spectrum(eigvals)
    if not np.isfinite(n_samples) or n_samples < 2:
        raise InvalidInputError(
            f"n_samples must be a number >= 2 (the effective number of tokens), got {n_samples!r}."
        )
    if not (0 < alpha < 1 and 0 <= trim < 0.9 and 0 < min_bulk <= 1 and 0 <= zero_tol < 1):
        raise InvalidInputError(
            f"Need 0 < alpha < 1, 0 <= trim < 0.9, 0 < min_bulk <= 1, 0 <= zero_tol < 1; got alpha={alpha!r}, "
            f"trim={trim!r}, min_bulk={min_bulk!r}, zero_tol={zero_tol!r}."
        )
    d, n = len(lam), float(n_samples)
    lam = np.where(lam > zero_tol * lam[0], lam, 0.0)  # numerical zeros are the atom's
    n_nonzero = int(np.count_nonzero(lam))
    if n_nonzero < 3:
        raise InvalidInputError(
            f"Only {n_nonzero} eigenvalues are nonzero: there is no bulk to fit. Check the covariance."
        )

    def bulk_of(k: int) -> np.ndarray:
        return lam[k : min(k + min(d - k, int(n)), n_nonzero)][::-1]

    max_spikes = n_nonzero - max(3, int(np.ceil(min_bulk * len(bulk_of(0)))))
    k, seen, settled = 0, {0}, True
    for _ in range(max_iter):
        bulk = bulk_of(k)
        q = (d - k) / n
        sigma2 = _fit_scale(bulk, q, trim)
        threshold = spike_threshold(sigma2, q, n, alpha)
        k_new = int(np.sum(lam > threshold))
        if k_new > max_spikes:
            settled = False
            break
        if k_new in seen:  # stable (or a rare 2-cycle at the margin): keep the fit of the current k
            break
        seen.add(k_new)
        k = k_new
    spikes = lam[:k].copy()
    return MPFit(
        sigma2=sigma2,
        ratio=q,
        n_samples=n,
        edges=mp_edges(q, sigma2),
        threshold=threshold,
        n_spikes=k,
        spikes=spikes,
        spike_population=spike_population(spikes, sigma2, q),
        ks=_ks(lam[k:], q, sigma2),
        bulk=bulk.copy(),
        alpha=alpha,
        settled=settled,
    )


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


def depth_profile(cap: Capture, centered: bool = True, alpha: float = 0.01) -> pd.DataFrame:
    """One row per depth: gamma, effective rank, participation ratio, stable rank, MP fit with ``N_eff``."""
    import pandas as pd

    rows = []
    spectra = cap.all_eigvals(centered=centered)
    for layer, lam in enumerate(spectra):
        n_eff = effective_sample_size(cap, layer)
        fit = mp_fit(lam, n_eff.n_eff, alpha=alpha)
        rows.append(
            {
                "layer": layer,
                "gamma": float(cap.gamma[layer]),
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
