"""The field's landmarks of depth, read from one capture, to set beside the paper's critical depth.

- **massive-activation onset** (Sun et al. 2024, "Massive activations in large language models"): where a
  few coordinates become 100-1000x the rest and stay. Read from the capture's per-coordinate
  ``A_i = max over tokens |h_i|`` (every token, streamed): the onset is the depth ``l >= 1`` of the largest
  one-step rise ``max_i A_i(l) / max_i A_i(l - 1)``, a landmark when that rise is at least ``MIN_RISE`` and
  the largest coordinate is then at least ``MIN_RATIO`` times the median coordinate's ``A``
  (``confounds.massive_ratio``; Sun et al.'s own cut, "about 1,000 times the median of the hidden state",
  needs every token's whole vector, which a capture does not keep). A maximum over every token: no interval.
- **relative update norm** (Csordas et al. 2025): ``u_l = ||h_l - h_(l-1)|| / ||h_(l-1)||`` per token,
  its mean over the capture's sampled tokens (the first position left out), with a prompt-bootstrap interval.
- **logit-lens convergence** (nostalgebraist 2020; Belrose et al. 2023): ``KL(p_L || p_l)``, the divergence of
  the next-token distribution read at depth ``l`` (final norm and unembedding applied to ``h_l``,
  ``capturing.lens``) from the model's own, averaged over tokens; it converges at the first depth from which
  it stays at or below ``LENS_FRACTION`` of its largest value past the edge depths (``EDGE``: with tied
  embeddings the lens at the embedding predicts the input token itself, tens to hundreds of nats away from the
  output, and the first block is an edge in every model of chapter 3), with an interval from the prompt draws.
- **the intrinsic-dimension peak** (Cheng et al. 2025): ``intrinsic_dimension.id_profile``; a landmark only
  when the peak is interior (not the first or last depth read) and its interval lies above both ends'
  (``study.run_landmarks``).

- **the step of raw m** (``raw_step``): the depth reached by the largest one-layer rise of the paper's own
  ``m(gamma)`` (raw token vectors, every depth, the edges included: that step can be the first block's), with
  the interval of that depth and of the rise over prompt-bootstrap draws; ``verdict.judge_massive_step`` asks
  whether it is the massive-activation onset.

``near(gamma, centre, tolerance)`` says whether an interval reaches ``centre +- tolerance``.
Introduced in: chapter 9 (other clocks of depth).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .resampling import percentile_interval, token_weights, widened_intervals

MIN_RISE = 10.0  # massive activations "appear abruptly": the largest coordinate grows 10x in one layer
MIN_RATIO = 100.0  # ... and is then 100x the median coordinate's largest value
LENS_FRACTION = 0.1  # the lens has converged once KL stays at or below 10 % of its largest value ...
EDGE = 2  # ... past depths 0 and 1 (transition.SKIP's edges)


@dataclass(frozen=True)
class Onset:
    """The depth of the largest one-step rise of the largest coordinate, and whether it is a landmark."""

    gamma: float
    rise: float  # max_i A_i(l) / max_i A_i(l - 1) at that depth
    ratio: float  # max_i A_i / median_i A_i there
    found: bool  # rise >= MIN_RISE and ratio >= MIN_RATIO


@dataclass(frozen=True)
class RawStep:
    """The largest one-layer rise of ``m(gamma)``: the depth it reaches, its size, and their intervals."""

    gamma: float
    ci: tuple[
        float, float
    ]  # the depth of the largest rise over the draws (percentile, widened to hold gamma)
    size: float  # m(gamma) - m(the depth before)
    size_ci: tuple[float, float]  # that rise, at that depth, over the draws


def raw_step(gamma: np.ndarray, m: np.ndarray, draws: np.ndarray, level: float = 0.95) -> RawStep:
    """The depth ``l >= 1`` of the largest ``m_l - m_(l-1)``, that rise, and intervals from ``draws``
    (``(n_boot, n_depths)`` prompt-bootstrap draws of ``m``, paired across depths): the depth of each draw's
    largest rise, and each draw's rise at the estimate's depth."""
    gamma, m, draws = (np.asarray(a, dtype=np.float64) for a in (gamma, m, draws))
    if not (gamma.shape == m.shape and draws.ndim == 2 and draws.shape[1] == len(m) and len(m) >= 2):
        raise InvalidInputError(
            f"gamma and m need one value per depth (at least two) and draws one row per draw of every depth, got "
            f"{gamma.shape}, {m.shape}, {draws.shape}."
        )
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(draws))):
        raise InvalidInputError("m and its draws must be finite: a NaN profile has no step.")
    at = int(np.argmax(np.diff(m))) + 1
    steps = np.diff(draws, axis=1)
    where = gamma[np.argmax(steps, axis=1) + 1]
    low, high = percentile_interval(where, level)
    size_low, size_high = percentile_interval(steps[:, at - 1], level)
    size = float(m[at] - m[at - 1])
    return RawStep(
        float(gamma[at]),
        (float(min(low, gamma[at])), float(max(high, gamma[at]))),
        size,
        (float(min(size_low, size)), float(max(size_high, size))),
    )


@dataclass(frozen=True)
class DepthProfile:
    """A mean over tokens at each depth with prompt-bootstrap percentile intervals and the draws."""

    gamma: np.ndarray
    mean: np.ndarray
    ci: np.ndarray  # (n_depths, 2)
    draws: np.ndarray  # (n_boot, n_depths)


@dataclass(frozen=True)
class Convergence:
    """The first depth from which a profile stays at or below ``fraction`` of its largest value."""

    gamma: float
    ci: tuple[float, float]
    fraction: float


def massive_onset(
    gamma: np.ndarray,
    largest: np.ndarray,
    ratio: np.ndarray,
    min_rise: float = MIN_RISE,
    min_ratio: float = MIN_RATIO,
) -> Onset:
    """The onset of massive activations (module docstring) from ``largest = max_i A_i`` and ``ratio =
    max_i A_i / median_i A_i`` at each depth of ``gamma``."""
    gamma, largest, ratio = (np.asarray(a, dtype=np.float64) for a in (gamma, largest, ratio))
    if not gamma.shape == largest.shape == ratio.shape or len(gamma) < 2:
        raise InvalidInputError("gamma, largest and ratio need one value per depth, at least two depths.")
    if not (np.all(np.isfinite(largest)) and np.all(np.isfinite(ratio)) and np.all(largest > 0)):
        raise InvalidInputError("largest must be positive and finite and ratio finite at every depth.")
    rises = largest[1:] / largest[:-1]
    step = int(np.argmax(rises))
    rise, at = float(rises[step]), float(ratio[step + 1])
    return Onset(float(gamma[step + 1]), rise, at, rise >= min_rise and at >= min_ratio)


def update_norms(
    vectors: np.ndarray,
    groups: np.ndarray,
    gamma: np.ndarray,
    *,
    n_boot: int = 400,
    seed: int = 0,
    level: float = 0.95,
) -> DepthProfile:
    """Mean relative update ``||h_l - h_(l-1)|| / ||h_(l-1)||`` at depths ``1..`` of ``vectors``
    (``(n_depths, n_tokens, d)``, the same tokens at every depth), with prompt-bootstrap intervals."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if vectors.ndim != 3 or vectors.shape[0] < 2:
        raise InvalidInputError(f"vectors must have shape (n_depths >= 2, n_tokens, d), got {vectors.shape}.")
    before = np.linalg.norm(vectors[:-1], axis=-1)
    if np.any(before == 0):
        raise InvalidInputError("A token vector is exactly zero: its relative update is undefined.")
    per_token = np.linalg.norm(np.diff(vectors, axis=0), axis=-1) / before  # (n_depths - 1, n_tokens)
    return token_mean_profile(
        per_token.T, groups, np.asarray(gamma)[1:], n_boot=n_boot, seed=seed, level=level
    )


def token_mean_profile(
    values: np.ndarray,
    groups: np.ndarray,
    gamma: np.ndarray,
    *,
    n_boot: int = 400,
    seed: int = 0,
    level: float = 0.95,
) -> DepthProfile:
    """Mean over tokens of ``values`` (``(n_tokens, n_depths)``) at each depth, with percentile intervals from
    ``n_boot`` prompt draws (``groups``: the prompt of each token; a draw's mean weights each token by how often
    its prompt was drawn)."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or not np.all(np.isfinite(values)):
        raise InvalidInputError(
            f"values must be a finite (n_tokens, n_depths) array, got shape {values.shape}."
        )
    groups = np.asarray(groups)
    if groups.shape != (values.shape[0],):
        raise InvalidInputError(
            f"groups must hold one prompt per token ({values.shape[0]}), got {groups.shape}."
        )
    weights = token_weights(np.random.default_rng(seed), groups, n_boot)
    mean = values.mean(axis=0)
    draws = (weights @ values) / weights.sum(axis=1, keepdims=True)
    ci = widened_intervals(draws, mean, level)
    return DepthProfile(np.asarray(gamma, dtype=np.float64), mean, ci, draws)


def convergence(
    profile: DepthProfile, fraction: float = LENS_FRACTION, level: float = 0.95, edge: int = EDGE
) -> Convergence:
    """The first depth past the first ``edge`` depths from which ``profile.mean`` stays at or below ``fraction``
    of its largest value there; the interval is the percentile interval of the same depth read from each draw."""
    if not 0 < fraction < 1:
        raise InvalidInputError(f"fraction must lie in (0, 1), got {fraction!r}.")
    if not 0 <= edge < len(profile.gamma) - 1:
        raise InvalidInputError(f"edge must leave at least two depths of {len(profile.gamma)}, got {edge!r}.")
    estimate = edge + _first_staying_below(profile.mean[None, edge:], fraction)[0]
    draws = edge + _first_staying_below(profile.draws[:, edge:], fraction)
    low, high = percentile_interval(profile.gamma[draws], level)
    gamma = float(profile.gamma[estimate])
    return Convergence(gamma, (float(min(low, gamma)), float(max(high, gamma))), fraction)


def _first_staying_below(rows: np.ndarray, fraction: float) -> np.ndarray:
    """Per row, the first index from which every later value is at or below ``fraction`` x the row's maximum."""
    above = rows > fraction * rows.max(axis=1, keepdims=True)
    last_above = np.where(above.any(axis=1), above.shape[1] - 1 - np.argmax(above[:, ::-1], axis=1), -1)
    return np.minimum(last_above + 1, rows.shape[1] - 1)


def near(interval: tuple[float, float], centre: float, tolerance: float) -> bool:
    """Whether ``interval`` reaches ``[centre - tolerance, centre + tolerance]``."""
    low, high = interval
    return bool(low <= centre + tolerance and high >= centre - tolerance)
