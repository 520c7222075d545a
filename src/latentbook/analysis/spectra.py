"""Covariance spectra of a capture against the Marchenko–Pastur null: the effective sample size of
prompt-correlated tokens, the MP fit of one depth, and a table of every depth.

Usage:

1. ``lam = cap.eigvals(l)`` (or ``np.linalg.eigvalsh(C)``) and an effective sample size
   ``n = effective_sample_size(cap, l).n_eff`` (tokens of one prompt are correlated, see below);
2. ``fit = bulk_fit.mp_fit(lam, n)``, or ``fit_layer(cap, l)`` for both steps, and
   ``streamed_spectrum_profile(cap)`` for every depth in a table (the streamed covariance of every captured
   token). The law itself: ``mp_law``; ranks and second opinions on the spike count: ``ranks``.

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

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError
from .bulk_fit import MPFit, mp_fit
from .ranks import effective_rank, participation_ratio, stable_rank

if TYPE_CHECKING:
    import pandas as pd

    from ..capturing.results import Capture

# --- effective sample size ---------------------------------------------------------------------------------


def intra_prompt_correlation(vectors: np.ndarray, prompt_ids: np.ndarray) -> float:
    """Typical intra-prompt correlation ``rho``: the median over coordinates of the one-way ANOVA intraclass
    correlation, clipped to [0, 1].

    Per coordinate, ``ICC = (MSB - MSW) / (MSB + (n0 - 1) MSW)`` with the between- and within-prompt mean
    squares and ``n0 = (n - sum n_g^2 / n) / (G - 1)`` (unbalanced one-way random-effects ANOVA; prompts seen
    once add to MSB only). The median over coordinates ignores the few massive-activation coordinates. Do not
    use the eigenvectors of the same tokens' covariance as directions: they are fitted to the realised prompt
    effects and bias the estimate low.

    Parameters
    ----------
    vectors : numpy.ndarray
        Token vectors, shape ``(n, d)``.
    prompt_ids : numpy.ndarray
        The prompt of each token, shape ``(n,)``; at least 2 prompts and 2 tokens beyond one per prompt.

    Returns
    -------
    float
        The median intraclass correlation over coordinates, in ``[0, 1]``.

    Raises
    ------
    InvalidInputError
        For vectors that are not 2-D, not one prompt id per vector, or too few prompts or repeated tokens.

    Examples
    --------
    Tokens of 200 prompts (10 each, ``d = 50``) with a planted correlation 0.4, and with none:

    >>> from latentbook.analysis import spectra, synthetic
    >>> c = synthetic.clustered_tokens(200, 10, 50, 0.4, seed=0)
    >>> round(spectra.intra_prompt_correlation(c.x, c.prompt_ids), 1)
    0.4
    >>> c = synthetic.clustered_tokens(200, 10, 50, 0.0, seed=0)
    >>> bool(spectra.intra_prompt_correlation(c.x, c.prompt_ids) < 0.02)
    True
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
    """``n_eff = n_tokens / (1 + (m - 1) rho^2)`` with ``m = n_tokens / n_prompts`` tokens per prompt.

    Attributes
    ----------
    n_eff : float
        The effective sample size.
    n_tokens : int
        The tokens behind the covariance.
    n_prompts : int
        The prompts they come from.
    rho : float
        Typical intra-prompt correlation (``intra_prompt_correlation``).
    design_effect : float
        ``1 + (m - 1) rho^2``.

    Examples
    --------
    4000 tokens of 100 prompts (``m = 40``) at ``rho = 0.5``: design effect ``1 + 39 / 4 = 10.75``:

    >>> from latentbook.analysis import spectra
    >>> ess = spectra.clustered_effective_sample_size(4000, 100, 0.5)
    >>> ess.design_effect, round(ess.n_eff, 2), round(ess.n_tokens / ess.design_effect, 2)
    (10.75, 372.09, 372.09)
    """

    n_eff: float
    n_tokens: int
    n_prompts: int
    rho: float  # typical intra-prompt correlation (intra_prompt_correlation)
    design_effect: float  # 1 + (m - 1) rho^2


def clustered_effective_sample_size(n_tokens: int, n_prompts: int, rho: float) -> EffectiveSampleSize:
    """``N_eff = n_tokens / (1 + (m - 1) rho^2)``, ``m = n_tokens / n_prompts`` (see the module docstring).

    Parameters
    ----------
    n_tokens : int
        The tokens behind the covariance, ``>= n_prompts``.
    n_prompts : int
        The prompts they come from, ``>= 1``.
    rho : float
        The intra-prompt correlation, in ``[0, 1]``.

    Returns
    -------
    EffectiveSampleSize
        ``n_eff`` with its inputs and the design effect.

    Raises
    ------
    InvalidInputError
        For ``n_prompts < 1``, fewer tokens than prompts, or ``rho`` outside ``[0, 1]``.

    Examples
    --------
    Between the number of tokens (``rho = 0``) and the number of prompts (``rho = 1``):

    >>> from latentbook.analysis import spectra
    >>> spectra.clustered_effective_sample_size(4000, 100, 0.0).n_eff
    4000.0
    >>> spectra.clustered_effective_sample_size(4000, 100, 1.0).n_eff
    100.0
    >>> round(spectra.clustered_effective_sample_size(4000, 100, 0.5).n_eff, 2)  # 4000 / 10.75
    372.09
    """
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
    from the provenance).

    Parameters
    ----------
    cap : Capture
        A capture with a token sample and ``prompts_done`` in its provenance.
    layer : int
        The depth.

    Returns
    -------
    EffectiveSampleSize
        ``n_eff`` of the covariance at ``layer``.

    Raises
    ------
    InvalidInputError
        When the provenance does not say how many prompts the capture saw, or the token sample has too few
        prompts or repeated tokens.

    Examples
    --------
    A capture of 500 tokens of 50 prompts with a planted correlation 0.5 (``synthetic.as_capture``):

    >>> import numpy as np
    >>> from latentbook.analysis import spectra, synthetic
    >>> c = synthetic.clustered_tokens(50, 10, 20, 0.5, seed=0)
    >>> cap = synthetic.as_capture(np.stack([c.x, c.x]), c.prompt_ids, c.positions, n_omega_samples=16)
    >>> ess = spectra.effective_sample_size(cap, 1)
    >>> ess.n_tokens, ess.n_prompts, round(ess.rho, 1)
    (500, 50, 0.5)
    >>> bool(np.isclose(ess.n_eff, 500 / (1 + 9 * ess.rho**2)))
    True
    """
    rho = intra_prompt_correlation(cap.token_vectors(layer), cap.vectors.prompt_ids)
    return clustered_effective_sample_size(cap.n_tokens, _n_prompts(cap), rho)


# --- the spectra of a capture ------------------------------------------------------------------------------


def fit_layer(
    cap: Capture, layer: int, n_samples: float | None = None, centered: bool = True, **kwargs
) -> MPFit:
    """``mp_fit(cap.eigvals(layer), n_samples)``, ``n_samples`` defaulting to ``effective_sample_size``.

    Parameters
    ----------
    cap : Capture
        The capture.
    layer : int
        The depth.
    n_samples : float, optional
        The bound on ``N`` passed to ``mp_fit``; None uses ``effective_sample_size(cap, layer).n_eff``.
    centered : bool
        The covariance (True) or the second moment (False).
    **kwargs
        Further options of ``mp_fit`` (``alpha``, ``trim``, ...).

    Returns
    -------
    MPFit
        The MP fit of the layer's spectrum.

    Examples
    --------
    Prompt-correlated tokens (100 prompts of 10, ``d = 40``, ``rho = 0.2``) with one coordinate of variance
    about 10 planted: one spike, on a bulk of unit variance:

    >>> import numpy as np
    >>> from latentbook.analysis import spectra, synthetic
    >>> c = synthetic.clustered_tokens(100, 10, 40, 0.2, seed=0)
    >>> x = c.x.copy()
    >>> x[:, 0] += 3.0 * np.random.default_rng(0).standard_normal(len(x))
    >>> cap = synthetic.as_capture(
    ...     np.stack([x, x]), c.prompt_ids, c.positions, n_vectors=1000, n_omega_samples=16
    ... )
    >>> fit = spectra.fit_layer(cap, 1)
    >>> fit.n_spikes, round(fit.sigma2, 1)
    (1, 1.0)
    """
    if n_samples is None:
        n_samples = effective_sample_size(cap, layer).n_eff
    return mp_fit(cap.eigvals(layer, centered=centered), n_samples, **kwargs)


def streamed_spectrum_profile(cap: Capture, centered: bool = True, alpha: float = 0.01) -> pd.DataFrame:
    """One row per depth of the streamed covariance (``cap.all_eigvals``: every captured token, the first
    position included): gamma, effective rank, participation ratio, stable rank, MP fit with ``N_eff``
    (``effective_sample_size``). The same numbers of the sink-free token sample:
    ``layer_spectra.token_sample_spectrum_profile``.

    Parameters
    ----------
    cap : Capture
        The capture.
    centered : bool
        The covariance (True) or the second moment (False).
    alpha : float
        False-alarm level of the spike count (``mp_fit``).

    Returns
    -------
    pandas.DataFrame
        One row per captured depth: ``layer``, ``gamma``, ``effective_rank``, ``participation_ratio``,
        ``stable_rank``, ``sigma2``, ``n_spikes``, ``ks``, ``n_eff``, ``rho``.

    Examples
    --------
    Two depths of the same prompt-correlated tokens, the second scaled by 2: the same spike count and
    ranks, four times the noise variance:

    >>> import numpy as np
    >>> from latentbook.analysis import spectra, synthetic
    >>> c = synthetic.clustered_tokens(100, 10, 40, 0.2, seed=0)
    >>> x = c.x.copy()
    >>> x[:, 0] += 3.0 * np.random.default_rng(0).standard_normal(len(x))
    >>> cap = synthetic.as_capture(
    ...     np.stack([x, 2 * x]), c.prompt_ids, c.positions, n_vectors=1000, n_omega_samples=16
    ... )
    >>> table = spectra.streamed_spectrum_profile(cap)
    >>> table["layer"].tolist(), table["n_spikes"].tolist()
    ([0, 1], [1, 1])
    >>> bool(np.allclose(table["effective_rank"], table["effective_rank"][0]))
    True
    >>> round(float(table["sigma2"][1] / table["sigma2"][0]), 3)
    4.0
    """
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
