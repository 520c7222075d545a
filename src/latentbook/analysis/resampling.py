"""The resampling helpers the estimators share: prompt (cluster) bootstrap weights, the intervals read from
bootstrap draws, and the Wilson interval of a proportion.

Tokens of one prompt are correlated, so the bootstrap resamples whole prompts: a draw gives each prompt a weight,
how often it was drawn (``cluster_weights``), and every token of the prompt carries it. From the draws of a
statistic: the percentile interval (``percentile_interval``), the same widened to contain the estimate
(``widened_interval``; ``widened_intervals`` column by column), or moved by the draws' median bias (``recentred_interval``).

Introduced in: chapter 3 (the prompt bootstrap of the order parameter).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidInputError

Z95 = 1.959963984540054  # the standard normal's 0.975 quantile (a two-sided 95 % interval)


def cluster_weights(rng: np.random.Generator, n_groups: int, n_boot: int) -> np.ndarray:
    """``(n_boot, n_groups)`` float weights: each row a multinomial draw of ``n_groups`` groups with equal
    probabilities ``1 / n_groups`` (how often each group is drawn with replacement; every row sums to
    ``n_groups``). Exactly one call of ``rng.multinomial``: it consumes the generator as that call does."""
    # pragma: no mutate start (astype(None) is float64)
    return rng.multinomial(n_groups, np.full(n_groups, 1 / n_groups), size=n_boot).astype(np.float64)
    # pragma: no mutate end


def token_weights(rng: np.random.Generator, groups: np.ndarray, n_boot: int) -> np.ndarray:
    """``(n_boot, n_tokens)`` weights: in each draw, how often each token's group (its prompt) was drawn
    (``cluster_weights`` of the distinct ``groups``, one per token, spread to their tokens)."""
    _, index = np.unique(np.asarray(groups), return_inverse=True)
    index = index.reshape(-1)  # pragma: no mutate: flat already for flat groups; reshape(-2) is reshape(-1)
    return cluster_weights(rng, int(index.max()) + 1, n_boot)[:, index]


def percentile_interval(draws: np.ndarray, level: float, axis: int | None = None) -> np.ndarray:
    """``[Q_(1 - level)/2, Q_(1 + level)/2]`` of ``draws`` (linear interpolation), over ``axis``: an array whose
    first axis holds the low and the high end."""
    return np.percentile(draws, [(1 - level) / 2 * 100, (1 + level) / 2 * 100], axis=axis)


def widened_interval(draws: np.ndarray, estimate: float, level: float) -> tuple[float, float]:
    """``[min(Q_(1 - level)/2, estimate), max(Q_(1 + level)/2, estimate)]`` of the draws: the percentile
    interval widened to contain ``estimate``; NaN when the estimate or a draw is not finite, or there are none."""
    if not np.isfinite(estimate) or draws.size == 0 or not np.all(np.isfinite(draws)):
        return (float("nan"), float("nan"))  # pragma: no mutate: nan spelling
    low, high = percentile_interval(draws, level)
    return (float(min(low, estimate)), float(max(high, estimate)))


def widened_intervals(draws: np.ndarray, estimates: np.ndarray, level: float) -> np.ndarray:
    """``(n, 2)``: ``widened_interval`` of each column of ``draws`` (``(n_draws, n)``) around its estimate."""
    low, high = percentile_interval(draws, level, axis=0)
    return np.stack([np.minimum(low, estimates), np.maximum(high, estimates)], axis=1)


def recentred_interval(
    point: float, draws: np.ndarray, level: float, floor: float | None = None
) -> tuple[float, float]:
    """``point + Q_(1 -+ level)/2 - median`` of the draws, the low end raised to ``floor`` if given: the
    percentile interval moved by the draws' median bias, so it contains ``point`` (when ``point >= floor``)."""
    low, mid, high = np.percentile(draws, [(1 - level) / 2 * 100, 50, (1 + level) / 2 * 100])
    low = point + low - mid
    return float(low if floor is None else max(floor, low)), float(point + high - mid)


def wilson_interval(p: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a proportion ``p`` observed on ``n`` independent units:

        (p + z^2 / 2n  -+  z sqrt(p (1 - p) / n + z^2 / 4n^2)) / (1 + z^2 / n),

    clipped to ``[0, 1]`` and to contain ``p`` (rounding can leave an end a hair past ``p`` at ``p = 0`` or 1).
    For scores in ``[0, 1]`` that are not 0/1 (several tokens averaged), ``p (1 - p)`` bounds their variance, so
    it is conservative. The default ``z`` is ``Z95`` to six decimals (what the verdict and its calibration use);
    pass ``Z95`` for the full quantile."""
    if n < 1 or not 0 <= p <= 1:
        raise InvalidInputError(f"Need n >= 1 and 0 <= p <= 1, got n={n!r}, p={p!r}.")
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return float(max(0.0, min(p, centre - half))), float(min(1.0, max(p, centre + half)))
