"""Spectra of real layers against the Marchenko–Pastur null: a sink-free token sample, a Gaussian reference of
the same shape, centred against uncentred, the participation ratio with a prompt bootstrap, and the sample the
depth contrasts (``spectral_contrasts``) read, with its position profile removed.

Why a token sample. The streamed covariance ``cap.covariance(l)`` sums over every captured token, including the
first position of each prompt. In models with an attention sink (SmolLM2, chapter 3) that token's norm is about a
hundred times the others', so one token per prompt owns almost all the variance and the covariance is rank one in
effect. ``Capture.token_vectors`` keeps a uniform sample of tokens *with their positions*, so the sink can be
dropped exactly. The sample holds ``n ~ 500`` tokens from ~128 prompts (about 4 per prompt), so its tokens are
nearly independent (design effect ``1 + (m - 1) rho^2 ~ 1``, see ``spectra.effective_sample_size``), at the
price of a ratio ``q = d / n`` near 1.

Usage:

1. ``s = token_sample(cap, l)``: the sampled vectors at depth ``l`` without position 0, with their prompt ids;
2. ``spectrum_summary(sample_eigvals(s.x), s.n_dof)``: effective rank, participation ratio, MP fit;
3. ``token_sample_spectrum_profile(cap)``: that summary at every depth (``spectra.streamed_spectrum_profile``
   is its counterpart on the streamed covariance of every token, the sink included); ``gaussian_reference(n, d)``:
   the same numbers for pure noise of the same shape (the null every real number is read against);
4. ``participation_ratio_draws(cap)``: the plug-in PR ``(tr C)^2 / tr(C^2)`` at every depth with a prompt
   bootstrap (``weighted_participation_ratio``);
5. ``remove_position_profile(x, positions)``: each coordinate's smooth profile over the position in the prompt
   (``position_basis``) removed, as the standardised contrasts of ``spectral_contrasts`` do.

Introduced in: chapter 4 (book/paper.md, "Spectral density").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError
from . import bulk_fit, ranks, synthetic
from .ranks import sample_eigvals
from .resampling import cluster_weights
from .standardisation import standardise

if TYPE_CHECKING:
    import pandas as pd

    from ..capturing.results import Capture


@dataclass(frozen=True)
class TokenSample:
    """Sampled token vectors of one depth, ``x`` of shape ``(n, d)``, with the prompt and position of each."""

    x: np.ndarray
    prompt_ids: np.ndarray
    positions: np.ndarray
    layer: int

    @property
    def n(self) -> int:
        return int(self.x.shape[0])

    @property
    def n_dof(self) -> int:
        """Degrees of freedom of the centred sample covariance: ``n - 1`` (its rank is at most ``n - 1``)."""
        return self.n - 1


def sample_mask(cap: Capture, exclude_positions: Sequence[int] = (0,)) -> np.ndarray:
    """Which tokens of the capture's token sample are not at ``exclude_positions`` (boolean, one per token)."""
    keep = ~np.isin(cap.vectors.positions, np.asarray(list(exclude_positions), dtype=np.int64))
    if keep.sum() < 3:
        raise InvalidInputError(
            f"Only {int(keep.sum())} sampled tokens remain after excluding positions {list(exclude_positions)}: "
            "capture with a larger n_vectors or exclude fewer positions."
        )
    return keep


def token_sample(cap: Capture, layer: int, exclude_positions: Sequence[int] = (0,)) -> TokenSample:
    """``cap.token_vectors(layer)`` without the tokens at ``exclude_positions`` (default: the first, the sink).

    The same tokens at every depth, so samples of two depths can be compared token by token (chapter 5).
    """
    x = cap.token_vectors(layer)
    keep = sample_mask(cap, exclude_positions)
    return TokenSample(
        np.asarray(x[keep], dtype=np.float64),
        np.asarray(cap.vectors.prompt_ids)[keep],
        np.asarray(cap.vectors.positions)[keep],
        int(layer),
    )


def position_share(cap: Capture, layer: int, positions: Sequence[int] = (0,)) -> float:
    """Share of the token sample's total variance owned by its tokens at ``positions``:
    ``sum_{i at positions} ||h_i - mean||^2 / sum_i ||h_i - mean||^2`` (all sampled tokens, mean over all).

    Compare it with the share of such tokens in the sample; an attention sink owns far more than its share.
    """
    x = np.asarray(cap.token_vectors(layer), dtype=np.float64)
    spread = np.sum((x - x.mean(0)) ** 2, axis=1)
    chosen = np.isin(cap.vectors.positions, np.asarray(list(positions), dtype=np.int64))
    return float(spread[chosen].sum() / spread.sum())


def spectrum_summary(eigvals: np.ndarray, n_samples: float, alpha: float = 0.01) -> dict[str, float]:
    """Effective rank, participation ratio, stable rank and the MP fit (``bulk_fit.mp_fit``) of one spectrum.

    ``n_samples`` bounds the effective number of tokens from above (the fit finds it: ``n_eff``); ``settled``
    False means ``n_spikes`` is a lower bound; ``kn_spikes`` is Kritchman & Nadler's count at ``n_eff``.

    ``top_over_edge`` is the largest eigenvalue over the fitted bulk's upper edge (1 or less: no spike).
    """
    lam = np.asarray(eigvals, dtype=np.float64)
    fit = bulk_fit.mp_fit(lam, n_samples, alpha=alpha)
    return {
        "settled": bool(fit.settled),
        "n_eff": float(fit.n_samples),
        "kn_spikes": int(ranks.kritchman_nadler(lam, fit.n_samples, alpha).n_spikes),
        "effective_rank": ranks.effective_rank(lam),
        "participation_ratio": ranks.participation_ratio(lam),
        "stable_rank": ranks.stable_rank(lam),
        "n_spikes": int(fit.n_spikes),
        "ks": float(fit.ks),
        "sigma2": float(fit.sigma2),
        "edge": float(fit.edges[1]),
        "top_over_edge": float(np.max(lam) / fit.edges[1]),
    }


def token_sample_spectrum_profile(
    cap: Capture, exclude_positions: Sequence[int] = (0,), centered: bool = True, alpha: float = 0.01
) -> pd.DataFrame:
    """One row per depth of the sink-free token sample: ``spectrum_summary`` with ``N = n - 1`` (centred) or
    ``n`` (uncentred), plus
    ``mean_share = ||mean||^2 / mean ||h||^2`` (the part of the second moment that centring removes),
    ``pr_uncentred`` (the participation ratio of the second moment ``E[h h^T]``) and
    ``top_coordinate = max_i var(h_i) / median_i var(h_i)`` (one coordinate dominating the spread, as massive
    activations do, pulls the participation ratio down). Introduced in: chapter 4.
    """
    import pandas as pd

    rows = []
    for index, layer in enumerate(cap.depths.tolist()):  # the depths held (all, unless some were asked for)
        sample = token_sample(cap, layer, exclude_positions)
        lam = sample_eigvals(sample.x, centered)
        summary = spectrum_summary(lam, sample.n_dof if centered else sample.n, alpha)
        mean_share = float(np.sum(sample.x.mean(0) ** 2) / np.mean(np.sum(sample.x**2, axis=1)))
        variances = sample.x.var(axis=0)
        rows.append(
            {
                "layer": layer,
                "gamma": float(cap.gamma[index]),
                "n": sample.n,
                "d": int(sample.x.shape[1]),
                **summary,
                "mean_share": mean_share,
                "pr_uncentred": weighted_participation_ratio(
                    sample.x @ sample.x.T, np.ones(sample.n), centered=False
                ),
                "top_coordinate": float(variances.max() / np.median(variances)),
            }
        )
    return pd.DataFrame(rows)


def gaussian_reference(
    n: int, d: int, n_rep: int = 5, centered: bool = True, alpha: float = 0.01, seed: int = 0
) -> pd.DataFrame:
    """``spectrum_summary`` of ``n_rep`` samples of ``n`` i.i.d. ``N(0, I_d)`` tokens: the pure-noise null of the
    same shape as a token sample (``synthetic.gaussian``). Introduced in: chapter 4.
    """
    import pandas as pd

    if not isinstance(n_rep, int) or n_rep < 1:
        raise InvalidInputError(f"n_rep must be a positive integer, got {n_rep!r}.")
    rows = []
    for rep in range(n_rep):
        x = synthetic.gaussian(n, d, seed=seed + rep)
        summary = spectrum_summary(sample_eigvals(x, centered), n - 1 if centered else n, alpha)
        rows.append({"rep": rep, "n": n, "d": d, **summary})
    return pd.DataFrame(rows)


# --- participation ratio with a prompt bootstrap -----------------------------------------------------------


def weighted_participation_ratio(gram: np.ndarray, weights: np.ndarray, centered: bool = True) -> float:
    """PR ``(tr C)^2 / tr(C^2)`` of the weighted covariance ``C = X^T M X`` from the Gram matrix ``K = X X^T``.

    ``M = diag(w) / W - w w^T / W^2`` (centred; ``W = sum w``) or ``diag(w) / W`` (uncentred), so
    ``tr C = tr(M K)`` and ``tr C^2 = tr(M K M K)``: ``O(n^2)`` per set of weights, no ``d x d`` matrix.
    With all weights 1 it equals ``ranks.participation_ratio(sample_eigvals(x, centered))``.
    """
    w = np.asarray(weights, dtype=np.float64)
    total = w.sum()
    a = w[:, None] * gram / total
    if centered:
        a = a - np.outer(w, w @ gram) / total**2
    trace = np.trace(a)
    return float(trace**2 / np.sum(a * a.T))


@dataclass(frozen=True)
class PRDraws:
    """Participation ratio at each depth of a token sample, and bootstrap draws that resample whole prompts."""

    gamma: np.ndarray  # (n_depths,)
    estimate: np.ndarray  # (n_depths,) PR of the sample
    draws: np.ndarray  # (n_boot, n_depths) PR of prompt-resampled samples (paired across depths)
    n_prompts: int


def participation_ratio_draws(
    cap: Capture,
    exclude_positions: Sequence[int] = (0,),
    centered: bool = True,
    n_boot: int = 200,  # pragma: no mutate: default draws
    seed: int = 0,  # pragma: no mutate: default seed
) -> PRDraws:
    """PR at every depth of the sink-free token sample, with a cluster bootstrap over prompts.

    Each draw resamples the sample's prompts with replacement (a token's weight is how often its prompt was
    drawn), the same draw at every depth, so differences between depths get honest intervals; tokens of one
    prompt are correlated, so resampling tokens would be too optimistic. Introduced in: chapter 4.
    """
    if not isinstance(n_boot, int) or n_boot < 20:
        raise InvalidInputError(f"n_boot must be an integer >= 20, got {n_boot!r}.")
    keep = sample_mask(cap, exclude_positions)
    _, groups = np.unique(np.asarray(cap.vectors.prompt_ids)[keep], return_inverse=True)
    n_groups = int(groups.max()) + 1
    if n_groups < 2:
        raise InvalidInputError("The token sample comes from one prompt: resampling prompts is impossible.")
    rng = np.random.default_rng(seed)
    weights = cluster_weights(rng, n_groups, n_boot)[:, groups]
    ones = np.ones(int(keep.sum()))
    estimate, draws = [], np.empty((n_boot, cap.n_depths))
    for layer, depth in enumerate(cap.depths.tolist()):  # layer: the position among the depths held
        x = np.asarray(cap.token_vectors(depth)[keep], dtype=np.float64)
        gram = x @ x.T
        estimate.append(weighted_participation_ratio(gram, ones, centered))
        draws[:, layer] = _batched_participation_ratio(gram, weights, centered)
    return PRDraws(np.asarray(cap.gamma, dtype=np.float64), np.array(estimate), draws, n_groups)


def _batched_participation_ratio(gram: np.ndarray, weights: np.ndarray, centered: bool) -> np.ndarray:
    """``weighted_participation_ratio`` for each row of ``weights`` ``(B, n)`` at once, in closed form:
    with ``M = D/W - w w^T / W^2``, ``tr(MK) = w.diag(K)/W - w^T K w / W^2`` and
    ``tr(MKMK) = w^T (K*K) w / W^2 - 2 sum_i w_i (Kw)_i^2 / W^3 + (w^T K w)^2 / W^4`` (``K*K`` elementwise)."""
    total = weights.sum(1)
    kw = weights @ gram
    wkw = np.sum(kw * weights, axis=1)
    squares = np.sum((weights @ (gram * gram)) * weights, axis=1) / total**2
    trace = weights @ np.diag(gram) / total
    if centered:
        trace = trace - wkw / total**2
        squares = squares - 2 * np.sum(weights * kw**2, axis=1) / total**3 + wkw**2 / total**4
    return trace**2 / squares


# --- the sample the depth contrasts read: position profile removed, shapes checked ---------------------


def position_basis(positions: np.ndarray) -> np.ndarray:
    """``B = [1, 1/t, 1/sqrt(t), log t]`` with ``t = position + 1``, shape ``(n, 4)``: smooth profiles over the
    position in the prompt, such as a sink's value leaking into later tokens with weight about ``1/t``."""
    t = np.asarray(positions, dtype=np.float64) + 1.0
    if t.ndim != 1 or np.any(t < 1):
        raise InvalidInputError(
            f"positions must be a 1-d array of non-negative integers, got shape {t.shape}."
        )
    return np.column_stack([np.ones_like(t), 1.0 / t, 1.0 / np.sqrt(t), np.log(t)])


def remove_position_profile(x: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``x - B (B^+ x)``: each coordinate's least-squares fit on ``B = position_basis(positions)`` removed
    (the fitted mean included), leaving what varies between tokens at a given position.

    Why: with a first-token sink and near-uniform attention (a massive coordinate shared by every token makes
    the scores flat), the sink's value reaches token ``t`` with weight about ``1/t``, and a growing residual norm
    amplifies that profile layer after layer; on the standardised sample it is one smooth direction that
    concentrates the spectrum with depth with no change in the tokens' own structure (chapter 8's planted
    norm-growth family). Tokens of many positions per prompt keep their structure: four columns are fitted from
    hundreds of tokens.
    """
    h = np.asarray(x, dtype=np.float64)
    basis = position_basis(positions)
    if h.ndim != 2 or len(h) != len(basis) or len(h) <= basis.shape[1]:
        raise InvalidInputError(
            f"Need token vectors of shape (n, d) with n > {basis.shape[1]}, one position each; got {h.shape} "
            f"and {len(basis)} positions."
        )
    coefficients, *_ = np.linalg.lstsq(basis, h, rcond=None)
    return h - basis @ coefficients


def _sample_of(cap: Capture, exclude_positions: Sequence[int], standardised: bool = False):
    """``(vectors_at, prompt_ids, gamma)`` of the capture's sink-free token sample, for the ``*_of_samples``;
    ``standardised``: each coordinate's position profile removed (``remove_position_profile``) and the result
    centred and scaled over the sample (``standardisation.standardise``), so that the spectrum is that of the
    correlation matrix of what varies between tokens, free of massive and rogue coordinates' scales and of the
    sink's position profile."""
    keep = sample_mask(cap, exclude_positions)
    depths = cap.depths.tolist()
    positions = np.asarray(cap.vectors.positions)[keep]

    def treat(x: np.ndarray) -> np.ndarray:
        return standardise(remove_position_profile(x, positions)) if standardised else x

    return (
        lambda index: treat(np.asarray(cap.token_vectors(int(depths[index]))[keep], dtype=np.float64)),
        np.asarray(cap.vectors.prompt_ids)[keep],
        np.asarray(cap.gamma, dtype=np.float64),
    )


def _depth_sample(vectors_at: Callable[[int], np.ndarray] | np.ndarray, n_tokens: int) -> Callable:
    """``vectors_at`` as a function of the depth index, checking each sample's shape when it is read."""
    read = np.asarray(vectors_at, dtype=np.float64).__getitem__ if not callable(vectors_at) else vectors_at

    def at(layer: int) -> np.ndarray:
        x = np.asarray(read(layer), dtype=np.float64)
        if x.ndim != 2 or len(x) != n_tokens:
            raise InvalidInputError(
                f"The sample at depth {layer} has shape {x.shape}: give (n, d) vectors, one per prompt id "
                f"({n_tokens} of them), the same tokens at every depth."
            )
        return x

    return at
