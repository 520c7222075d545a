"""Prototypes, directly: is a depth's token cloud better described by ``k`` discrete prototypes (a Gaussian mixture)
than by one heavy-tailed cloud (a single multivariate Student-t), judged on held-out prompts?

Theorem 6.3 (book/paper.md) pictures the "solid" as ``k`` prototypes plus noise, whose covariance has ``k - 1``
spikes; a heavy-tailed cloud with one centre also leaves the Marchenko–Pastur bulk and raises Omega, so neither
spikes nor Omega tell the two apart. Here, on the top ``n_dims`` principal components of all the tokens (robustly
standardised first, ``standardisation.robust_standardise``; one projection shared by both models, so it favours
neither: a projection fitted on 256 tokens in d = 576 inflates its own tokens' noise to the MP edge, about six
times what the other half shows, and both models then misfit the held-out half):

- ``GMM_k``: ``k`` Gaussians with one shared ("tied") covariance, ``k`` in ``1..k_max`` chosen by BIC on all
  tokens (``k = 1`` is one Gaussian). The shared covariance makes the mixture a model of *centres*: it cannot build a
  heavy tail from concentric components of different widths, as a free-covariance mixture can;
- ``t``: one multivariate Student-t, ``log p(x) = log Gamma((nu + p) / 2) - log Gamma(nu / 2) - p/2 log(nu pi)
  - 1/2 log|S| - (nu + p)/2 log(1 + delta / nu)``, ``delta = (x - mu)^T S^-1 (x - mu)``, fitted by ECME
  (``fit_t``; Liu & Rubin 1995; ``scipy.stats.multivariate_t`` has no fit); ``nu -> inf`` is the Gaussian.

Both are fitted on one half of the prompts and score the other half, then the halves swap (cross-fitted by
prompt). The gain is ``mean_t [log p_GMM(x_t) - log p_t(x_t)]`` over held-out tokens (nats per token) with a
prompt-bootstrap interval (``resampling.token_weights``; the fits held fixed). Prototypes are called when BIC
chooses ``k >= 2`` and the interval's low end exceeds ``MARGIN`` (calibrated in ``prototype_calibration``).
``k - 1`` is compared with the spike count of chapter 4 (``layer_spectra.spectrum_summary``); BIC counts
correlated tokens as independent, so it over-splits real clouds (and reaches ``k_max``: then a lower bound), which
the held-out gain, not ``k``, guards against.

Usage: ``prototype_test(x, prompt_ids)``, or ``capture_prototypes(cap, layer)`` on a capture's token sample.
Needs scikit-learn (imported on first use).

Introduced in: chapter 6 (issue 54, item 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import gammaln

from ..errors import InvalidInputError
from .learned_basis import prompt_halves
from .resampling import percentile_interval, token_weights
from .standardisation import robust_standardise

if TYPE_CHECKING:
    from ..capturing.results import Capture

N_DIMS = 10  # principal components the models are fitted on: room for k - 1 <= 9 spikes
K_MAX = 8  # the largest mixture tried
MARGIN = 0.0  # nats per token the gain's low end must clear (calibrated: prototype_calibration)


# --- one multivariate Student-t ----------------------------------------------------------------------------


@dataclass(frozen=True)
class TFit:
    """A multivariate Student-t: location ``mean``, scale matrix ``scale``, degrees of freedom ``df``."""

    mean: np.ndarray
    scale: np.ndarray
    df: float
    n_iter: int


def t_logpdf(x: np.ndarray, mean: np.ndarray, scale: np.ndarray, df: float) -> np.ndarray:
    """``log p(x)`` of each row under a multivariate Student-t (see the module docstring).

    Parameters
    ----------
    x : numpy.ndarray
        Points, shape ``(n, p)``.
    mean, scale, df : numpy.ndarray, numpy.ndarray, float
        Location ``(p,)``, positive definite scale ``(p, p)`` and degrees of freedom ``> 0``.

    Returns
    -------
    numpy.ndarray
        Log density of each row, shape ``(n,)``.
    """
    p = len(mean)
    chol = np.linalg.cholesky(scale)
    z = np.linalg.solve(chol, (np.asarray(x, dtype=np.float64) - mean).T)
    delta = (z**2).sum(0)
    log_det = 2 * np.log(np.diag(chol)).sum()
    return (
        gammaln((df + p) / 2)
        - gammaln(df / 2)
        - p / 2 * np.log(df * np.pi)
        - log_det / 2
        - (df + p) / 2 * np.log1p(delta / df)
    )


def fit_t(
    x: np.ndarray, max_iter: int = 200, tol: float = 1e-6, df_bounds: tuple[float, float] = (0.5, 1e4)
) -> TFit:
    """Maximum-likelihood multivariate Student-t by ECME (Liu & Rubin 1995).

    E-step: ``w_i = (nu + p) / (nu + delta_i)``; CM-steps: ``mu = sum w x / sum w``,
    ``S = sum w (x - mu)(x - mu)^T / n``, then ``nu`` maximises the observed log-likelihood at ``(mu, S)``
    (bounded, on ``log nu``). Stops when the mean log-likelihood per point moves less than ``tol``.

    Parameters
    ----------
    x : numpy.ndarray
        Points, shape ``(n, p)`` with ``n > p``.
    max_iter : int
        Iteration limit.
    tol : float
        Tolerance on the mean log-likelihood per point.
    df_bounds : tuple of float
        The range searched for ``nu``; its top stands for a Gaussian.

    Returns
    -------
    TFit
        The fitted location, scale, degrees of freedom and iterations used.
    """
    from scipy.optimize import minimize_scalar

    h = np.asarray(x, dtype=np.float64)
    n, p = h.shape if h.ndim == 2 else (0, 0)
    if h.ndim != 2 or n <= p:
        raise InvalidInputError(f"Need points (n, p) with n > p, got shape {h.shape}.")
    mean, scale, df = h.mean(0), np.cov(h.T, bias=True).reshape(p, p) + 1e-9 * np.eye(p), 10.0
    previous, n_iter = -np.inf, 0
    while n_iter < max_iter:
        n_iter += 1
        centred = h - mean
        delta = (centred * np.linalg.solve(scale, centred.T).T).sum(1)
        w = (df + p) / (df + delta)
        mean = (w[:, None] * h).sum(0) / w.sum()
        centred = h - mean
        scale = (w[:, None] * centred).T @ centred / n + 1e-9 * np.eye(p)
        best = minimize_scalar(
            lambda log_df, mean=mean, scale=scale: -t_logpdf(h, mean, scale, float(np.exp(log_df))).mean(),
            bounds=tuple(np.log(df_bounds)),
            method="bounded",
        )
        df = float(np.exp(best.x))
        current = -float(best.fun)
        if abs(current - previous) < tol:
            break
        previous = current
    return TFit(mean, scale, df, n_iter)


# --- the test ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrototypeTest:
    """The cross-fitted comparison of ``k`` prototypes with one Student-t cloud at one depth."""

    k: int  # BIC's choice of prototypes on all tokens' projection; k = K_MAX is a lower bound
    gain: float  # mean held-out log p_GMM - log p_t, nats per token
    low: float
    high: float
    df: tuple[float, float]  # the t's degrees of freedom on each half
    n_spikes: int  # chapter 4's spike count of the same sample (MP fit)
    n_dims: int
    n_tokens: int

    @property
    def prototypes(self) -> bool:
        """BIC chooses ``k >= 2`` and the gain's interval clears ``MARGIN``."""
        return self.k >= 2 and self.low > MARGIN

    def as_row(self) -> dict[str, float | int | bool]:
        """The test as a flat dict (a table row)."""
        return {
            "k": self.k,
            "gain": self.gain,
            "low": self.low,
            "high": self.high,
            "df_t": float(np.mean(self.df)),
            "n_spikes": self.n_spikes,
            "prototypes": self.prototypes,
        }


def _projection(x: np.ndarray, n_dims: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and top ``n_dims`` principal directions ``(d, n_dims)`` of ``x``."""
    mean = x.mean(0)
    centred = x - mean
    _, vectors = np.linalg.eigh(centred.T @ centred)
    return mean, vectors[:, ::-1][:, :n_dims]


def _mixture(y: np.ndarray, k: int, seed: int):
    """The tied-covariance Gaussian mixture of ``k`` components fitted to ``y`` (best of three k-means starts)."""
    from sklearn.mixture import GaussianMixture

    return GaussianMixture(k, covariance_type="tied", reg_covar=1e-6, n_init=3, random_state=seed).fit(y)


def _bic_mixture(y: np.ndarray, k_max: int, seed: int):
    """The tied Gaussian mixture of ``1..k_max`` components with the lowest BIC on ``y``."""
    best, best_bic = None, np.inf
    for k in range(1, k_max + 1):
        gmm = _mixture(y, k, seed)
        bic = gmm.bic(y)
        if bic < best_bic:
            best, best_bic = gmm, bic
    return best


def spike_count(x: np.ndarray) -> int:
    """Chapter 4's spike count of a token sample: eigenvalues above the fitted MP bulk
    (``layer_spectra.spectrum_summary(sample_eigvals(x), n - 1)["n_spikes"]``)."""
    from .layer_spectra import spectrum_summary
    from .ranks import sample_eigvals

    h = np.asarray(x, dtype=np.float64)
    return int(spectrum_summary(sample_eigvals(h), h.shape[0] - 1)["n_spikes"])


def prototype_test(
    x: np.ndarray,
    prompt_ids: np.ndarray,
    n_dims: int = N_DIMS,
    k_max: int = K_MAX,
    seed: int = 0,
    standardise: bool = True,
    n_boot: int = 1000,
    level: float = 0.95,
    count_spikes: bool = True,
) -> PrototypeTest:
    """``k`` tied-covariance prototypes against one multivariate t, cross-fitted by prompt (module docstring).

    Parameters
    ----------
    x : numpy.ndarray
        Token vectors of one depth, shape ``(n, d)``.
    prompt_ids : numpy.ndarray
        The prompt of each token, shape ``(n,)``.
    n_dims : int
        Principal components of all the (standardised) tokens the models see.
    k_max : int
        The largest number of prototypes tried.
    seed : int
        Seed of the split, the mixtures' starts and the bootstrap.
    standardise : bool
        Robustly standardise every coordinate over all tokens first.
    n_boot, level : int, float
        Prompt-bootstrap draws and coverage of the gain's interval.
    count_spikes : bool
        Count the spikes of the sample (``spike_count``, about a second at d = 576); False leaves -1.

    Returns
    -------
    PrototypeTest
        ``k``, the gain with its interval, the t's degrees of freedom and the spike count.
    """
    h = np.asarray(x, dtype=np.float64)
    ids = np.asarray(prompt_ids)
    if h.ndim != 2 or ids.shape != (h.shape[0],) or not 1 <= n_dims < h.shape[1]:
        raise InvalidInputError(f"Need tokens (n, d), one prompt id each and 1 <= n_dims < d; got {h.shape}.")
    n_spikes = spike_count(h) if count_spikes else -1
    z = robust_standardise(h) if standardise else h
    first = prompt_halves(ids, seed)
    difference = np.empty(len(z))
    dfs = []
    mean, basis = _projection(z, n_dims)
    y = (z - mean) @ basis
    k = int(_bic_mixture(y, k_max, seed).n_components)
    for fit in (first, ~first):
        gmm = _mixture(y[fit], k, seed)
        t = fit_t(y[fit])
        difference[~fit] = gmm.score_samples(y[~fit]) - t_logpdf(y[~fit], t.mean, t.scale, t.df)
        dfs.append(t.df)
    weights = token_weights(np.random.default_rng(seed), ids, n_boot)
    draws = weights @ difference / weights.sum(1)
    gain = float(difference.mean())
    low, high = percentile_interval(draws, level)
    return PrototypeTest(
        k,
        gain,
        float(min(low, gain)),
        float(max(high, gain)),
        (dfs[0], dfs[1]),
        n_spikes,
        n_dims,
        len(z),
    )


def capture_prototypes(cap: Capture, layer: int, **options) -> PrototypeTest:
    """``prototype_test`` of a capture's token sample at ``layer`` without position 0
    (``layer_spectra.token_sample``); ``options`` go to ``prototype_test``."""
    from .layer_spectra import token_sample

    sample = token_sample(cap, layer)
    return prototype_test(sample.x, sample.prompt_ids, **options)
