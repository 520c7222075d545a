"""Inference across a ladder of architectures x seeds that respects its clusters.

The seeded ladder (v2) trains each architecture with several seeds. The models of one architecture share their
size, their depth and their width, so they are not exchangeable with the models of another: a permutation over all
models, or a bootstrap over models, treats 18 models as 18 independent units when there are 6 architectures. Here:

- ``architecture_of``, ``is_seeded``, ``by_architecture`` read a model's architecture from its name;
- ``clustered_partial(x, y, controls, clusters)``: the partial Spearman rho of ``x`` and ``y`` given the controls,
  with (i) a bootstrap over *architectures* (each resample draws whole architectures, all their seeds), and (ii) a
  permutation of ``y`` *within* architectures (Freedman–Lane, with each architecture's mean removed), which asks
  whether the seeds of one architecture that score higher on the diagnostic are also the more capable ones: the
  only question a size that never varies within an architecture cannot answer for them;
- ``clustered_verdict``: "predicts capability" only when both say so.

Introduced in: chapter 7.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..analysis.resampling import widened_interval
from ..errors import InvalidInputError
from .rank_correlation import _freedman_lane_p, _pearson_rows, _ranks, signed_decision

MAX_EXACT = 50_000  # enumerate every within-architecture permutation up to this many, else draw random ones
# enumerate every bootstrap resample of the clusters (as a multiset) up to this many (8 clusters: 6435), else draw
MAX_EXACT_RESAMPLES = 20_000


def architecture_of(name: str) -> tuple[str, int]:
    """``"l4-d64-s1"`` -> ``("l4-d64", 1)``: a ladder v2 model's architecture and training seed."""
    rung, mark, seed = name.rpartition("-s")
    if not mark or not seed.isdigit():
        raise InvalidInputError(f"{name!r} is not a seeded ladder model (<rung>-s<seed>, e.g. l4-d64-s0).")
    return rung, int(seed)


def is_seeded(name: str) -> bool:
    """Whether ``name`` is a seeded ladder v2 model (``<rung>-s<seed>``), as ``architecture_of`` reads it."""
    try:
        architecture_of(name)
    except InvalidInputError:
        return False
    return True


def by_architecture(names) -> dict[str, list[str]]:
    """Seeded model names grouped by architecture, in their order: ``{"l4-d64": ["l4-d64-s0", ...], ...}``."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(architecture_of(name)[0], []).append(name)
    return groups


@dataclass(frozen=True)
class ClusteredPartial:
    """Partial Spearman rho of ``x`` and ``y`` given controls, with inference over clusters (architectures)."""

    rho: float  # partial rho given the controls, over every model
    ci: tuple[float, float]  # percentile bootstrap over clusters
    rho_within: float  # correlation of the ranks once each cluster's mean (and the controls) is removed
    p_within: float  # two-sided, permutations of y within clusters (Freedman–Lane)
    n: int
    n_clusters: int
    n_permutations: int
    exact: bool  # every within-cluster permutation enumerated
    exact_interval: bool  # every resample of the clusters enumerated (``cluster_resamples``)


def within_permutations(clusters, n_random: int = 20_000, seed: int = 0) -> tuple[np.ndarray, bool]:
    """Permutations of ``range(n)`` that move indices only within their cluster, one per row, identity first:
    all of them when there are at most ``MAX_EXACT`` (``prod(n_c!)``), else the identity and ``n_random`` drawn
    at random. Returns ``(perms, exact)``."""
    labels = np.asarray(clusters)
    groups = [np.flatnonzero(labels == c) for c in dict.fromkeys(labels.tolist())]
    total = math.prod(math.factorial(len(g)) for g in groups)
    n = len(labels)
    if total <= MAX_EXACT:
        perms = np.empty((total, n), dtype=int)
        choice = np.indices([math.factorial(len(g)) for g in groups]).reshape(len(groups), -1)
        for g, pick in zip(groups, choice):
            perms[:, g] = np.array(list(itertools.permutations(g)))[pick]
        return perms, True
    rng = np.random.default_rng(seed)
    perms = np.tile(np.arange(n), (n_random + 1, 1))
    for g in groups:
        perms[1:, g] = g[np.argsort(rng.random((n_random, len(g))), axis=1)]
    return perms, False


def cluster_resamples(
    n_clusters: int, n_boot: int = 4000, seed: int = 0
) -> tuple[list[tuple[int, ...]], np.ndarray, bool]:
    """The bootstrap's resamples of ``n_clusters`` clusters, as multisets of cluster indices with their weights
    (how many of the ``n_clusters ** n_clusters`` equally likely ordered draws give each one): all of them while
    there are at most ``MAX_EXACT_RESAMPLES`` (``C(2n - 1, n)``: the exact bootstrap distribution, with no Monte
    Carlo error and no dependence on the order of the clusters), else ``n_boot`` draws of weight 1.
    Returns ``(resamples, weights, exact)``."""
    if math.comb(2 * n_clusters - 1, n_clusters) <= MAX_EXACT_RESAMPLES:
        resamples = list(itertools.combinations_with_replacement(range(n_clusters), n_clusters))
        weights = np.array(
            [
                math.factorial(n_clusters)
                // math.prod(math.factorial(k) for k in np.unique(row, return_counts=True)[1])
                for row in resamples
            ]
        )
        return resamples, weights, True
    draws = np.random.default_rng(seed).integers(0, n_clusters, (n_boot, n_clusters))
    return [tuple(row) for row in draws], np.ones(n_boot, dtype=int), False


def _residualiser(design: np.ndarray) -> np.ndarray:
    """``I - D D^+``: removes the least-squares fit on the columns of ``design``."""
    return np.eye(len(design)) - design @ np.linalg.pinv(design)


def _partial_given(rx: np.ndarray, ry: np.ndarray, rc: np.ndarray) -> np.ndarray:
    """Row by row (leading axes), the correlation of ``rx`` and ``ry`` once each has lost its least-squares fit on
    ``[1, rc]`` (``rc``: ``(..., n, k)`` ranks of the controls); NaN where a residual is zero."""
    design = np.concatenate([np.ones(rc.shape[:-1] + (1,)), rc], axis=-1)
    fitted = design @ np.linalg.pinv(design)
    ex = rx - np.einsum("...ij,...j->...i", fitted, rx)
    ey = ry - np.einsum("...ij,...j->...i", fitted, ry)
    return _pearson_rows(ex, ey)


def clustered_partial(
    x, y, controls, clusters, n_boot: int = 4000, seed: int = 0, level: float = 0.95, min_clusters: int = 4
) -> ClusteredPartial:
    """Partial Spearman ``rho`` of ``x`` and ``y`` given ``controls`` (``(n,)`` or ``(n, k)``), with clusters.

    ``rho``: the ranks of ``x`` and ``y`` lose their least-squares fit on ``[1, ranks of the controls]`` over all
    models and the residuals are correlated (``rank_correlation.partial_spearman_ci`` with one control). Interval: a
    percentile bootstrap that draws whole clusters with replacement (ranks recomputed in each resample), every
    resample enumerated where ``cluster_resamples`` can (else ``n_boot`` drawn), dropping resamples with fewer than
    ``min_clusters`` distinct clusters, widened to contain ``rho``. Within: the ranks lose each cluster's mean and the
    controls' fit (``[cluster indicators, ranks of the controls]``); ``rho_within`` correlates what is left, and
    ``p_within`` permutes the residuals of ``y`` within clusters (Freedman & Lane 1983), two-sided.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    c = np.asarray(controls, dtype=float)
    c = c[:, None] if c.ndim == 1 else c
    labels = np.asarray(clusters)
    n = len(x)
    if not (x.shape == y.shape == (n,) == labels.shape) or c.shape[0] != n:
        raise InvalidInputError(
            f"x, y, controls and clusters need one value per model, got {x.shape}, {y.shape}, {c.shape}, "
            f"{labels.shape}."
        )
    names = sorted(set(labels.tolist()))  # so the resamples drawn do not depend on the models' order
    if len(names) < min_clusters:
        raise InvalidInputError(
            f"{len(names)} clusters: a bootstrap over clusters needs at least {min_clusters}; measure more "
            "architectures."
        )
    from scipy.stats import rankdata

    rx, ry = _ranks(x), _ranks(y)
    rc = np.column_stack([_ranks(col) for col in c.T])
    rho = float(_partial_given(rx, ry, rc))

    members = [np.flatnonzero(labels == name) for name in names]
    resamples, weights, exact_interval = cluster_resamples(len(names), n_boot, seed)
    by_length: dict[int, list[tuple[np.ndarray, int]]] = {}  # resamples of one length are fitted together
    for row, weight in zip(resamples, weights):
        if len(set(row)) >= min_clusters:
            index = np.concatenate([members[i] for i in row])
            by_length.setdefault(len(index), []).append((index, weight))
    draws = [np.empty(0)]
    for group in by_length.values():
        index = np.array([i for i, _ in group])
        ranked = [rankdata(v[index], axis=1) for v in (x, y, *c.T)]
        statistic = _partial_given(ranked[0], ranked[1], np.stack(ranked[2:], axis=-1))
        draws.append(np.repeat(statistic, [w for _, w in group]))  # each as often as the draws give it
    draws = np.concatenate(draws)
    low, high = widened_interval(draws[np.isfinite(draws)], rho, level)

    indicators = (labels[:, None] == np.array(names)[None, :]).astype(float)
    residual = _residualiser(np.column_stack([indicators, rc]))
    ex, ey = residual @ rx, residual @ ry
    rho_within = float(_pearson_rows(ex, ey))
    perms, exact = within_permutations(labels, seed=seed)
    p_within = _freedman_lane_p(ex, ey, residual, perms) if np.isfinite(rho_within) else float("nan")
    return ClusteredPartial(
        rho, (float(low), float(high)), rho_within, p_within, n, len(names), len(perms), exact, exact_interval
    )


def clustered_verdict(
    r: ClusteredPartial, p_holm: float, n_tests: int, expected_sign: int, controls: str, alpha: float = 0.05
) -> tuple[str, str]:
    """("predicts capability" | "does not" | "inconclusive", reason) from ``clustered_partial``.

    Predicts: the within-architecture Holm-adjusted p (``n_tests`` diagnostics) is below ``alpha``, the
    within-architecture rho has the expected sign, and the bootstrap interval over architectures lies on the
    expected side of 0. Does not: the same with both on the other side. Inconclusive: anything else.
    """
    if not (np.isfinite(r.rho) and np.isfinite(r.rho_within)):
        return "inconclusive", (
            f"nothing is left of capability or of the diagnostic once {controls} and the architecture are "
            "removed, so they cannot be told apart"
        )
    text = (
        f"partial Spearman rho given {controls} = {r.rho:+.2f}, 95% CI over {r.n_clusters} architectures "
        f"[{r.ci[0]:+.2f}, {r.ci[1]:+.2f}]; within architectures rho = {r.rho_within:+.2f}, permutation p = "
        f"{r.p_within:.3f} ({'all' if r.exact else 'random'} {r.n_permutations} within-architecture orders), "
        f"Holm-adjusted over {n_tests} diagnostics p = {p_holm:.3f}, n = {r.n}"
    )
    side, why = signed_decision(r.ci, p_holm, expected_sign, alpha)
    within_side = np.sign(r.rho_within) * expected_sign
    if side == "expected" and within_side > 0:
        return "predicts capability", text
    if side == "opposite" and within_side < 0:
        return "does not", text + " (opposite to the paper's direction, within and across architectures)"
    if side is not None:
        why = "the within-architecture correlation and the interval over architectures disagree in sign"
    return "inconclusive", text + (
        f" ({why}: with {r.n_clusters} architectures, what the diagnostic shares with capability may be what "
        f"the architectures share with {controls})"
    )
