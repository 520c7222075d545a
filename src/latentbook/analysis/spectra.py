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


def clustered_effective_sample_size(n_tokens: int, n_prompts: int, rho: float) -> EffectiveSampleSize:
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
    return clustered_effective_sample_size(cap.n_tokens, _n_prompts(cap), rho)


# --- the spectra of a capture ------------------------------------------------------------------------------


def fit_layer(
    cap: Capture, layer: int, n_samples: float | None = None, centered: bool = True, **kwargs
) -> MPFit:
    """``mp_fit(cap.eigvals(layer), n_samples)``, ``n_samples`` defaulting to ``effective_sample_size``."""
    if n_samples is None:
        n_samples = effective_sample_size(cap, layer).n_eff
    return mp_fit(cap.eigvals(layer, centered=centered), n_samples, **kwargs)


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
