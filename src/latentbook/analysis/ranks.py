"""Ranks of a covariance spectrum: the number of signals by a prompt-block permutation null
(``parallel_analysis``) and by sequential Tracy–Widom tests (``kritchman_nadler``), and the soft ranks.

Usage:

1. ``lam = sample_eigvals(x)``: the eigenvalues, descending, of the (centred) covariance ``X^T X / n`` of tokens;
2. ``parallel_analysis(x, prompt_ids).n_spikes``, ``kritchman_nadler(lam, n).n_spikes``: second opinions on the
   spike count of ``bulk_fit.mp_fit``;
3. ``effective_rank(lam)`` ``exp(-sum p_i log p_i)``, ``participation_ratio(lam)`` ``(sum lambda)^2 / sum
   lambda^2``, ``stable_rank(lam)`` ``sum lambda / max lambda``.

Introduced in: chapter 4 (book/paper.md, "Spectral density", claim 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .mp_law import _as_spectrum, tracy_widom1_quantile

# --- second opinions: a permutation null that keeps the prompts, and a rank estimator ---------------------


@dataclass(frozen=True)
class ParallelAnalysis:
    """Observed eigenvalues against those of prompt-block permuted copies of the same tokens.

    Attributes
    ----------
    eigvals : numpy.ndarray
        The observed eigenvalues, shape ``(d,)``, descending.
    null : numpy.ndarray
        The eigenvalues of each permuted copy, shape ``(n_perm, d)``, each row descending.
    null_quantile : float
        The ``1 - alpha`` quantile of the largest null eigenvalue: the spike cut.
    n_spikes : int
        Observed eigenvalues above it.
    alpha : float
        The false-alarm level.
    n_prompts : int
        The number of prompts whose blocks were permuted.

    Examples
    --------
    One planted direction of variance 8 among 40 (600 tokens of 30 prompts) is the one spike:

    >>> import numpy as np
    >>> from latentbook.analysis import ranks, synthetic
    >>> x = synthetic.spiked_covariance(600, 40, [8.0], seed=0).x
    >>> pa = ranks.parallel_analysis(x, np.repeat(np.arange(30), 20), n_perm=20)
    >>> pa.n_spikes, pa.n_prompts, pa.null.shape
    (1, 30, (20, 40))
    >>> bool(pa.eigvals[0] > pa.null_quantile > pa.eigvals[1])
    True
    """

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

    Parameters
    ----------
    x : numpy.ndarray
        Token vectors, shape ``(n, d)``, ``n >= 2``, finite.
    centered : bool
        Subtract the mean token first (the covariance) or not (the second moment).

    Returns
    -------
    numpy.ndarray
        The ``d`` eigenvalues, float64, descending, clipped at 0.

    Raises
    ------
    InvalidInputError
        For an array that is not 2-D, has fewer than 2 rows or is not finite.

    Examples
    --------
    The eigenvalues of numpy's maximum-likelihood covariance; 5 centred tokens in 8 dimensions span at most 4,
    so the other 4 eigenvalues are zeros:

    >>> import numpy as np
    >>> from latentbook.analysis import ranks, synthetic
    >>> x = synthetic.gaussian(50, 8, seed=0)
    >>> bool(np.allclose(ranks.sample_eigvals(x), np.linalg.eigvalsh(np.cov(x.T, bias=True))[::-1]))
    True
    >>> lam = ranks.sample_eigvals(synthetic.gaussian(5, 8, seed=0))
    >>> int(np.sum(lam > 1e-12)), lam[4:].tolist()
    (4, [0.0, 0.0, 0.0, 0.0])
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

    Parameters
    ----------
    vectors : numpy.ndarray
        Token vectors, shape ``(n, d)``, finite.
    prompt_ids : numpy.ndarray
        The prompt of each token, shape ``(n,)``; at least 3 prompts.
    n_perm : int
        Permuted copies, at least 20.
    alpha : float
        The false-alarm level, in ``(0, 1)``.
    centered : bool
        Eigenvalues of the covariance (True) or of the second moment (False).
    seed : int
        Seed of the permutations.

    Returns
    -------
    ParallelAnalysis
        The observed and null eigenvalues, the cut and the spike count.

    Raises
    ------
    InvalidInputError
        For vectors that are not 2-D and finite, not one prompt id per vector, ``n_perm < 20``, ``alpha`` out of
        range, or fewer than 3 prompts.

    Examples
    --------
    Gaussian tokens of 30 prompts have no spike; a planted direction of variance 8 is one:

    >>> import numpy as np
    >>> from latentbook.analysis import ranks, synthetic
    >>> prompts = np.repeat(np.arange(30), 20)
    >>> ranks.parallel_analysis(synthetic.gaussian(600, 40, seed=0), prompts, n_perm=20).n_spikes
    0
    >>> x = synthetic.spiked_covariance(600, 40, [8.0], seed=0).x
    >>> ranks.parallel_analysis(x, prompts, n_perm=20).n_spikes
    1
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
    """Kritchman & Nadler's rank: the number of eigenvalues that pass their sequential Tracy–Widom test.

    Attributes
    ----------
    n_spikes : int
        The number of signals: the last ``k`` whose test passes.
    sigma2 : float
        Noise variance estimated with that many signals.
    alpha : float
        The level of each test.
    n_samples : float
        The (effective) number of samples the tests assumed.

    Examples
    --------
    >>> from latentbook.analysis import ranks, synthetic
    >>> lam = ranks.sample_eigvals(synthetic.spiked_covariance(2000, 200, [10.0, 6.0], seed=0).x)
    >>> estimate = ranks.kritchman_nadler(lam, 2000)
    >>> estimate.n_spikes, round(estimate.sigma2, 2), estimate.alpha, estimate.n_samples
    (2, 1.0, 0.01, 2000.0)
    """

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

    Parameters
    ----------
    eigvals : numpy.ndarray
        The spectrum of ``X^T X / n``, finite and nonnegative, in any order.
    n_samples : float
        The (effective) number of samples, ``>= 2``.
    alpha : float
        The level of each test, in ``(0, 1)``.

    Returns
    -------
    RankEstimate
        The number of signals and the noise variance estimated with them.

    Raises
    ------
    InvalidInputError
        For a spectrum that is not 1-D, finite and nonnegative, ``n_samples < 2`` or ``alpha`` out of range.

    Examples
    --------
    Two planted spikes (variance 10 and 6, 2000 tokens, ``d = 200``) give rank 2, Gaussian tokens rank 0:

    >>> from latentbook.analysis import ranks, synthetic
    >>> lam = ranks.sample_eigvals(synthetic.spiked_covariance(2000, 200, [10.0, 6.0], seed=0).x)
    >>> ranks.kritchman_nadler(lam, 2000).n_spikes
    2
    >>> ranks.kritchman_nadler(ranks.sample_eigvals(synthetic.gaussian(2000, 200, seed=0)), 2000).n_spikes
    0
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
    """``exp(-sum p_i log p_i)``, ``p_i = lambda_i / sum lambda`` (Roy & Vetterli 2007); between 1 and d.

    Parameters
    ----------
    eigvals : numpy.ndarray
        One spectrum, finite and nonnegative, in any order.

    Returns
    -------
    float
        The effective rank, in ``[1, d]``.

    Raises
    ------
    InvalidInputError
        For a spectrum that is not 1-D, finite and nonnegative.

    Examples
    --------
    The identity in 8 dimensions has effective rank 8, a single direction 1:

    >>> import numpy as np
    >>> from latentbook.analysis import ranks
    >>> round(ranks.effective_rank(np.linalg.eigvalsh(np.eye(8))), 6)
    8.0
    >>> round(ranks.effective_rank(np.array([3.0, 0.0, 0.0, 0.0])), 6)
    1.0
    >>> round(ranks.effective_rank(np.array([4.0, 2.0, 1.0, 1.0])), 3)  # exp(entropy of (1/2, 1/4, 1/8, 1/8))
    3.364
    """
    lam = _as_spectrum(eigvals)
    p = lam[lam > 0] / lam.sum()
    return float(np.exp(-np.sum(p * np.log(p))))


def participation_ratio(eigvals: np.ndarray) -> float:
    """``(sum lambda)^2 / sum lambda^2``; d for an isotropic spectrum, 1 for a single direction.

    Parameters
    ----------
    eigvals : numpy.ndarray
        One spectrum, finite and nonnegative, in any order.

    Returns
    -------
    float
        The participation ratio, in ``[1, d]``.

    Raises
    ------
    InvalidInputError
        For a spectrum that is not 1-D, finite and nonnegative.

    Examples
    --------
    >>> import numpy as np
    >>> from latentbook.analysis import ranks
    >>> round(ranks.participation_ratio(np.ones(50)), 6)  # isotropic in 50 dimensions
    50.0
    >>> round(ranks.participation_ratio(np.array([1.0, 0.0, 0.0])), 6)  # a single direction
    1.0
    >>> round(ranks.participation_ratio(np.array([4.0, 2.0, 1.0, 1.0])), 4), round(64 / 22, 4)
    (2.9091, 2.9091)
    """
    lam = _as_spectrum(eigvals)
    return float(lam.sum() ** 2 / np.sum(lam**2))


def stable_rank(eigvals: np.ndarray) -> float:
    """``sum lambda / max lambda`` = ``||X||_F^2 / ||X||_2^2`` of the centred data matrix ``X``.

    Parameters
    ----------
    eigvals : numpy.ndarray
        One spectrum, finite and nonnegative, in any order.

    Returns
    -------
    float
        The stable rank, in ``[1, d]``.

    Raises
    ------
    InvalidInputError
        For a spectrum that is not 1-D, finite and nonnegative.

    Examples
    --------
    ``(4 + 2 + 1 + 1) / 4 = 2``; of tokens' covariance, the ratio of the centred data's Frobenius and spectral
    norms squared:

    >>> import numpy as np
    >>> from latentbook.analysis import ranks, synthetic
    >>> ranks.stable_rank(np.array([4.0, 2.0, 1.0, 1.0]))
    2.0
    >>> x = synthetic.gaussian(100, 10, seed=0)
    >>> xc = x - x.mean(0)
    >>> ratio = np.linalg.norm(xc, "fro") ** 2 / np.linalg.norm(xc, 2) ** 2
    >>> bool(np.isclose(ranks.stable_rank(ranks.sample_eigvals(x)), ratio))
    True
    """
    lam = _as_spectrum(eigvals)
    return float(lam.sum() / lam[0])
