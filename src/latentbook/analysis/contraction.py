"""Transverse contraction measured on a capture: the same sampled tokens at every depth, normalised per depth,
and the per-layer factor ``q`` of Theorem 6.1 fitted to the decay of their transverse variance.

Theorem 6.1 (PAPER.md): if the dynamics over a depth interval contracts the transverse subspace by ``q < 1`` per
layer, the transverse covariance decays like ``q^(2n)`` over ``n`` layers. In a residual stream the total scale
grows with depth (every layer adds to the stream, and the final norm removes the scale again), so the
transverse variance is read here as a share of the depth's total: each depth's tokens are divided by their
root-mean-square norm before ``flow.transverse_variance`` takes the mean eigenvalue outside the top ``k``. A
share that decays like ``q^(2n)`` is contraction relative to the relevant subspace; a constant share is none.

Estimator: ``log v_l = a + 2 n log q`` fitted by least squares over the depths of a window (a straight line on
a log scale, so every depth counts, not only the two ends), ``q = exp(slope / 2)``. Its interval resamples whole
prompts (tokens of one prompt are correlated), the same draw at every depth.

Usage: ``states, prompts = sample_states(cap)``, then ``contraction_fit(cap, start=..., stop=...)`` or
``contraction_after(cap, split=0.42)``. Introduced in: chapter 5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError
from .layer_spectra import depth_windows, sample_mask

if TYPE_CHECKING:
    from ..capturing.results import Capture


def sample_states(
    cap: Capture, exclude_positions: Sequence[int] = (0,), normalise: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The capture's token sample at every depth, ``(n_depths, n, d)`` float64, and the prompt of each token.

    Tokens at ``exclude_positions`` (default: the first, the attention sink) are dropped. With ``normalise``
    each depth is divided by its RMS token norm ``sqrt(mean ||h||^2)``, so depths compare by shape, not scale.
    """
    keep = sample_mask(cap, exclude_positions)
    states = np.stack(
        [np.asarray(cap.token_vectors(layer)[keep], dtype=np.float64) for layer in range(cap.n_depths)]
    )
    if normalise:
        rms = np.sqrt(np.mean(np.sum(states**2, axis=2), axis=1))
        states = states / np.where(rms > 0, rms, 1.0)[:, None, None]
    return states, np.asarray(cap.vectors.prompt_ids)[keep]


def _top_k_sum(x: np.ndarray, weights: np.ndarray, k: int) -> tuple[float, float]:
    """Total variance and the sum of the top ``k`` eigenvalues of the weighted centred covariance
    ``sum_i w_i (x_i - mu_w)(x_i - mu_w)^T / W``, from whichever of the ``d x d`` covariance or the ``n x n``
    weighted Gram matrix is smaller (they share their nonzero eigenvalues)."""
    w = weights / weights.sum()
    centred = x - w @ x
    if x.shape[0] < x.shape[1]:
        root = np.sqrt(w)[:, None]
        lam = np.linalg.eigvalsh((root * centred) @ (root * centred).T)
    else:
        lam = np.linalg.eigvalsh(centred.T @ (w[:, None] * centred))
    return float(lam.sum()), float(np.sort(lam)[::-1][:k].sum())


def _principal(x: np.ndarray, rank: int, iterations: int = 4) -> tuple[float, np.ndarray, np.ndarray]:
    """Total variance, the top-``rank`` eigenvalues (descending) and principal directions ``(d, rank)`` of the
    centred covariance of ``x`` ``(n, d)``, by randomised subspace iteration (Halko, Martinsson & Tropp 2011:
    ``rank + 10`` columns, ``iterations`` power steps, a fixed seed), never an ``n x n`` or ``d x d`` eigensolve.
    The top eigenvalues come out exact to ~1e-5 relative whenever the spectrum decays past ``rank + 10``."""
    n, d = x.shape
    centred = x - x.mean(0)
    total = float(np.sum(centred * centred) / n)
    width = min(rank + 10, n, d)
    basis = np.random.default_rng(0).standard_normal((d, width))
    for _ in range(iterations):
        basis, _ = np.linalg.qr(centred.T @ (centred @ basis))
    small = basis.T @ (centred.T @ (centred @ basis)) / n
    lam, vectors = np.linalg.eigh(small)
    order = np.argsort(lam)[::-1][:rank]
    return total, np.clip(lam[order], 0.0, None), basis @ vectors[:, order]


def _share_draws(x: np.ndarray, k: int, weights: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Transverse share of ``x`` ``(n, d)`` under each row of ``weights`` ``(B, n)`` (bootstrap draws), fast:
    the total from norms (exact), the top ``k`` variance within the sample's top principal ``directions``
    (``(d, rank)``), which resampling barely rotates (a slight underestimate of the top ``k``)."""
    projected = x @ directions  # (n, rank)
    w = weights / weights.sum(1, keepdims=True)
    mean = w @ x  # (B, d)
    total = w @ np.sum(x * x, axis=1) - np.sum(mean * mean, axis=1)
    pmean = w @ projected  # (B, rank)
    weighted = w[:, :, None] * projected[None]  # (B, n, rank)
    cov = np.matmul(weighted.transpose(0, 2, 1), projected) - pmean[:, :, None] * pmean[:, None, :]
    top = np.sort(np.linalg.eigvalsh(cov), axis=1)[:, ::-1][:, :k].sum(1)
    return (total - top) / total


def transverse_share(states: np.ndarray, k: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Share of each depth's variance outside its top ``k`` principal directions, ``(n_depths,)``.

    ``states`` ``(n_depths, n, d)``; optional ``weights`` per token (a bootstrap draw). Equals
    ``flow.transverse_variance(states, k) * (d - k) / total variance`` for unit weights.
    """
    states = np.asarray(states, dtype=np.float64)
    if states.ndim != 3 or states.shape[1] < 2:
        raise InvalidInputError(f"states must be (n_depths, n_tokens >= 2, d), got {states.shape}.")
    if not isinstance(k, (int, np.integer)) or not 0 < k < min(states.shape[1], states.shape[2]):
        raise InvalidInputError(f"k must be an integer in (0, min(n, d)), got {k!r}.")
    w = np.ones(states.shape[1]) if weights is None else np.asarray(weights, dtype=np.float64)
    out = []
    for x in states:
        total, top = _top_k_sum(x, w, int(k))
        out.append((total - top) / total)
    return np.array(out)


@dataclass(frozen=True)
class ContractionFit:
    """Per-layer transverse factor ``q`` over depths ``[start, stop]`` from ``log v_l ~ a + 2 l log q``."""

    q: float
    ci: tuple[float, float]
    start: int
    stop: int
    k: int
    share: np.ndarray  # transverse share at depths start..stop (unit weights)
    level: float


def _slope(layers: np.ndarray, values: np.ndarray) -> float:
    x = layers - layers.mean()
    return float(np.sum(x * (np.log(values) - np.log(values).mean())) / np.sum(x * x))


def contraction_fit(
    cap: Capture,
    start: int,
    stop: int,
    k: int = 10,
    n_boot: int = 100,
    level: float = 0.95,
    seed: int = 0,
    exclude_positions: Sequence[int] = (0,),
) -> ContractionFit:
    """``q = exp(slope / 2)`` of the log transverse share over layers ``start..stop`` of the normalised token
    sample (``sample_states``), with a prompt-bootstrap percentile interval (``n_boot`` draws; each draw's top-``k``
    variance is taken within the sample's top ``5k`` principal directions, see ``_share_draws``).

    ``q < 1``: the transverse share decays, as Theorem 6.1 has it; ``q = 1``: no contraction. Introduced in:
    chapter 5.
    """
    if not 0 <= start < stop <= cap.n_layers:
        raise InvalidInputError(f"Need 0 <= start < stop <= {cap.n_layers}, got start={start}, stop={stop}.")
    if not isinstance(n_boot, int) or n_boot < 20:
        raise InvalidInputError(f"n_boot must be an integer >= 20, got {n_boot!r}.")
    if not isinstance(k, (int, np.integer)) or not 0 < k < cap.d_model:
        raise InvalidInputError(f"k must be an integer in (0, {cap.d_model}), got {k!r}.")
    states, prompts = sample_states(cap, exclude_positions)
    layers = np.arange(start, stop + 1, dtype=np.float64)
    window = states[start : stop + 1]
    rank = min(5 * k, *window.shape[1:])
    principal = [_principal(x, rank) for x in window]
    share = np.array([1.0 - lam[:k].sum() / total for total, lam, _ in principal])
    q = float(np.exp(_slope(layers, share) / 2))
    _, groups = np.unique(prompts, return_inverse=True)
    n_groups = int(groups.max()) + 1
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n_groups, np.full(n_groups, 1 / n_groups), size=n_boot).astype(np.float64)
    shares = np.stack(
        [
            _share_draws(x, k, counts[:, groups], directions)
            for x, (_, _, directions) in zip(window, principal)
        ],
        axis=1,
    )  # (B, depths)
    draws = np.exp(np.array([_slope(layers, row) for row in shares]) / 2)
    tails = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
    ci = tuple(float(v) for v in np.percentile(draws, tails))
    return ContractionFit(q, ci, int(start), int(stop), int(k), share, level)


def contraction_after(
    cap: Capture, split: float = 0.42, k: int = 10, n_boot: int = 100, seed: int = 0
) -> ContractionFit:
    """``contraction_fit`` over the interior depths after ``split`` (``layer_spectra.depth_windows``): from the
    last depth at or before ``split`` to the last interior depth. Introduced in: chapter 5.
    """
    before, after = depth_windows(cap.gamma, split)
    if len(after) < 2:
        raise InvalidInputError(
            f"Fewer than 2 interior depths after gamma = {split} in {cap.model_name}: nothing to fit."
        )
    start = int(before[-1]) if len(before) else int(after[0])
    return contraction_fit(cap, start, int(after[-1]), k, n_boot, seed=seed)
