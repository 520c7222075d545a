"""Transverse contraction (Theorem 6.1): the gain of each block's map on transverse perturbations, judged against
the random twin; and, beside it, the concentration share of the token sample.

Theorem 6.1 (book/paper.md): if the linearised dynamics over a depth interval contracts the transverse subspace by
``q < 1`` per layer, the transverse covariance decays like ``q^(2n)`` over ``n`` layers.

**The gain of the map** (what the theorem states; what the verdict judges). ``capturing.jacobian`` measures, with
Jacobian-vector products at real token states, how much each block ``l`` of a window scales random tangents in
the complement of a subspace ``U`` held fixed over the window, and tangents inside ``U``, between RMS-normalised
states:

    g⊥_l^2 = sum_(p,j) ||P⊥ J_l V_pj||^2 / sum_(p,j) ||V_pj||^2 * (rms_l / rms_(l+1))^2,   g∥_l likewise on U,
    q = exp(mean_l log(g⊥_l / g∥_l))

(``transverse_gain``): the transverse gain *relative to* the relevant one, as Theorem 6.1 has it (a map that
keeps ``U`` and shrinks its complement). A map that shrinks every direction alike (``g⊥ = g∥ < 1``, which a
normalisation pulling the states towards a point does) gives ``q = 1``; the transverse gain alone would call it a
contraction. Its interval resamples whole prompts (a prompt's tangents go with it), the same draw at every
block. ``judge_transverse_gain``: "holds" only when the intervals of ``q`` and of ``q⊥`` alone lie below ``MAX_Q``
(a minimum effect, not merely below 1), and so do their ratios to the twin's; ``planted_statistics.planted_gains`` are its calibration cases.

**The concentration share** (``contraction_fit``, ``contraction_after``: chapter 5's figure). The variance share of
each depth's token sample outside that depth's *own* top ``k`` principal directions, fitted as
``log v_l = a + 2 l log q``. Its subspace moves with depth, so it measures how concentrated the states are, not
what a block's map does to a perturbation: a random-weight model shows it too, and its interval (principal
directions kept fixed across draws) is too narrow to judge by. Each depth's tokens are divided by their RMS norm;
the interval resamples whole prompts, the same draw at every depth.

Usage: ``transverse_gain(jacobian.transverse_gains(model, prompts))``, then ``judge_transverse_gain(fit, twin)``;
``sample_states(cap)``, ``contraction_after(cap, split=0.42)`` for the share. Introduced in: chapter 5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError
from .flow import q_from_block_factors, q_from_variance_decay
from .layer_spectra import sample_mask
from .resampling import cluster_weights, percentile_interval, token_weights, widened_interval
from .spectral_contrasts import depth_windows

if TYPE_CHECKING:
    from ..capturing.jacobian import TransverseGains
    from ..capturing.results import Capture

MAX_Q = 0.95  # the minimum effect: the whole interval of q must lie below it (a 5 % contraction per block)
MIN_PROMPTS = 12  # fewer prompts: the percentile interval is too narrow (calibration), inconclusive
GAIN_BOOT = 200  # prompt-bootstrap draws of transverse_gain


def sample_states(
    cap: Capture, exclude_positions: Sequence[int] = (0,), normalise: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The capture's token sample at every depth, ``(n_depths, n, d)`` float64, and the prompt of each token.

    Tokens at ``exclude_positions`` (default: the first, the attention sink) are dropped. With ``normalise``
    each depth is divided by its RMS token norm ``sqrt(mean ||h||^2)``, so depths compare by shape, not scale.
    """
    keep = sample_mask(cap, exclude_positions)
    states = np.stack(
        [np.asarray(cap.token_vectors(layer)[keep], dtype=np.float64) for layer in cap.depths.tolist()]
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
    """Decay factor ``q`` of the concentration share over depths ``[start, stop]``: ``log v_l ~ a + 2 l log q``
    (each depth's own principal subspace: a concentration measure, not the gain of the map)."""

    q: float
    ci: tuple[float, float]
    start: int
    stop: int
    k: int
    share: np.ndarray  # transverse share at depths start..stop (unit weights)
    level: float


def contraction_fit(
    cap: Capture,
    start: int,
    stop: int,
    k: int = 10,
    n_boot: int = 100,  # pragma: no mutate: default draws
    level: float = 0.95,
    seed: int = 0,  # pragma: no mutate: default seed
    exclude_positions: Sequence[int] = (0,),
) -> ContractionFit:
    """``q = exp(slope / 2)`` of the log transverse share over layers ``start..stop`` of the normalised token
    sample (``sample_states``; ``flow.q_from_variance_decay``), with a prompt-bootstrap percentile interval
    (``n_boot`` draws; each draw's top-``k`` variance is taken within the sample's top ``5k`` principal
    directions, see ``_share_draws``).

    ``q < 1``: the share outside each depth's own top ``k`` falls (the states concentrate); ``q = 1``: it does
    not. The gain of the blocks' map, which Theorem 6.1 is about, is ``transverse_gain``. Introduced in: chapter 5.
    """
    if not 0 <= start < stop <= cap.n_layers:
        raise InvalidInputError(f"Need 0 <= start < stop <= {cap.n_layers}, got start={start}, stop={stop}.")
    if not isinstance(n_boot, int) or n_boot < 20:
        raise InvalidInputError(f"n_boot must be an integer >= 20, got {n_boot!r}.")
    if not isinstance(k, (int, np.integer)) or not 0 < k < cap.d_model:
        raise InvalidInputError(f"k must be an integer in (0, {cap.d_model}), got {k!r}.")
    states, prompts = sample_states(cap, exclude_positions)
    inside = (cap.depths >= start) & (cap.depths <= stop)  # the depths held in start..stop (all of them)
    if inside.sum() < 2:
        raise InvalidInputError(
            f"This capture holds {int(inside.sum())} of the depths {start}..{stop} ({cap.depths.tolist()}): "
            "the fit needs at least 2. Choose start and stop among the depths held."
        )
    layers = cap.depths[inside].astype(np.float64)
    window = states[inside]
    rank = min(5 * k, *window.shape[1:])
    principal = [_principal(x, rank) for x in window]
    share = np.array([1.0 - lam[:k].sum() / total for total, lam, _ in principal])
    q = float(q_from_variance_decay(layers, share))
    weights = token_weights(np.random.default_rng(seed), prompts, n_boot)
    shares = np.stack(
        [_share_draws(x, k, weights, directions) for x, (_, _, directions) in zip(window, principal)], axis=1
    )  # (B, depths)
    draws = q_from_variance_decay(layers, shares)
    ci = tuple(float(v) for v in percentile_interval(draws, level))
    return ContractionFit(q, ci, int(start), int(stop), int(k), share, level)


def contraction_after(
    cap: Capture, split: float = 0.42, k: int = 10, n_boot: int = 100, seed: int = 0
) -> ContractionFit:
    """``contraction_fit`` over the interior depths after ``split`` (``spectral_contrasts.depth_windows``): from the
    last depth at or before ``split`` to the last interior depth. Introduced in: chapter 5.
    """
    before, after = depth_windows(cap.gamma, split)
    if len(after) < 2:
        raise InvalidInputError(
            f"Fewer than 2 interior depths after gamma = {split} in {cap.model_name}: nothing to fit."
        )
    start = int(before[-1]) if len(before) else int(after[0])  # positions among the depths held
    return contraction_fit(cap, int(cap.depths[start]), int(cap.depths[after[-1]]), k, n_boot, seed=seed)


# --- the gain of the blocks' map (Theorem 6.1 as stated) ------------------------------------------------------


@dataclass(frozen=True)
class GainFit:
    """``q = exp(mean_l log(g⊥_l / g∥_l))`` over the blocks of a window, the per-block ratios, each part's own
    geometric mean (``transverse``: ``q⊥``, ``relevant``: ``q∥``), the median block's ratio (``steady``: a
    step written by one block moves ``q``, not the median) and prompt-bootstrap percentile intervals."""

    model_name: str
    q: float  # q⊥ / q∥: what Theorem 6.1 is about, what the judge reads
    ci: tuple[float, float]
    gains: np.ndarray  # g⊥_l / g∥_l of each block start..stop-1
    gains_ci: np.ndarray  # (n_blocks, 2)
    start: int
    stop: int
    k: int
    n_prompts: int
    n_directions: int
    level: float
    transverse: float  # q⊥ = exp(mean_l log g⊥_l)
    transverse_ci: tuple[float, float]
    relevant: float  # q∥ = exp(mean_l log g∥_l)
    relevant_ci: tuple[float, float]
    steady: float  # the median block's g⊥_l / g∥_l: below 1 when most blocks contract, not one
    steady_ci: tuple[float, float]
    q_draws: np.ndarray | None = None  # the bootstrap draws of q (None: not kept), for the ratio to a twin's
    transverse_draws: np.ndarray | None = None  # the same of q⊥


def block_gain_draws(gains: TransverseGains, weights: np.ndarray, relevant: bool = False) -> np.ndarray:
    """``g⊥_l`` (``g∥_l`` with ``relevant``) of every block under each row of prompt ``weights``
    ``(B, n_prompts)``: ``(B, n_blocks)``.

    ``g_l^2 = (sum_p w_p sum_j out_sq[p, l, j]) / (sum_p w_p sum_j in_sq[p, j]) * (sum_p w_p state_sq[p, l])
    / (sum_p w_p state_sq[p, l + 1])``: the token counts of ``rms_l^2`` cancel (the same tokens at every depth).
    """
    w = np.asarray(weights, dtype=np.float64)
    out_sq, in_sq = (gains.relevant_out_sq, gains.relevant_in_sq) if relevant else (gains.out_sq, gains.in_sq)
    out = w @ out_sq.sum(2)  # (B, n_blocks)
    into = w @ in_sq.sum(1)  # (B,)
    states = w @ gains.state_sq  # (B, n_blocks + 1)
    with np.errstate(divide="ignore", invalid="ignore"):  # pragma: no mutate: errstate
        return np.sqrt(out / into[:, None] * states[:, :-1] / states[:, 1:])


def transverse_gain(
    gains: TransverseGains,
    n_boot: int = GAIN_BOOT,
    level: float = 0.95,
    seed: int = 0,  # pragma: no mutate: default seed
) -> GainFit:
    """``q = q⊥ / q∥`` of the blocks' gains (``capturing.jacobian``; ``flow.q_from_block_factors``), and each
    part alone, with prompt-bootstrap percentile intervals: ``n_boot`` draws of whole prompts
    (``resampling.cluster_weights``), the same draw at every block and for both parts. Introduced in: chapter 5."""
    from ..capturing.jacobian import check_gains

    check_gains(gains)
    if not isinstance(n_boot, int) or n_boot < 20:
        raise InvalidInputError(f"n_boot must be an integer >= 20, got {n_boot!r}.")
    if not 0 < level < 1:
        raise InvalidInputError(f"level must lie in (0, 1), got {level!r}.")
    if gains.in_sq.sum() <= 0 or gains.relevant_in_sq.sum() <= 0 or np.any(gains.state_sq.sum(0) <= 0):
        raise InvalidInputError(
            "These gains hold no perturbed tokens (every prompt is a single token?): measure on longer prompts."
        )
    n = gains.n_prompts
    weights = np.vstack([np.ones((1, n)), cluster_weights(np.random.default_rng(seed), n, n_boot)])
    transverse, relevant = (block_gain_draws(gains, weights, part) for part in (False, True))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = transverse / relevant

    def mean_and_interval(draws: np.ndarray) -> tuple[float, tuple[float, float], np.ndarray]:
        q_draws = q_from_block_factors(draws)  # a draw without tokens at some depth is NaN: it stays NaN
        low, high = percentile_interval(q_draws[1:], level)
        return float(q_draws[0]), (float(low), float(high)), q_draws[1:]

    q, ci, q_draws = mean_and_interval(ratio)
    q_transverse, ci_transverse, transverse_draws = mean_and_interval(transverse)
    q_relevant, ci_relevant, _ = mean_and_interval(relevant)
    steady_draws = np.median(ratio, axis=1)  # a draw with a NaN block stays NaN
    steady_ci = widened_interval(steady_draws[1:], float(steady_draws[0]), level)
    return GainFit(
        gains.model_name,
        q,
        ci,
        ratio[0],
        percentile_interval(ratio[1:], level, axis=0).T,
        gains.start,
        gains.stop,
        gains.k,
        n,
        gains.n_directions,
        level,
        q_transverse,
        ci_transverse,
        q_relevant,
        ci_relevant,
        float(steady_draws[0]),
        steady_ci,
        q_draws,
        transverse_draws,
    )


def _ci(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]"


def _parts(fit: GainFit) -> tuple[tuple[str, float, tuple[float, float]], ...]:
    """What a contraction must show: the transverse gain relative to the relevant one, and alone."""
    return ("relative", fit.q, fit.ci), ("transverse", fit.transverse, fit.transverse_ci)


def over_twin(fit: GainFit, twin: GainFit) -> tuple[tuple[float, tuple[float, float]], ...]:
    """``q / q_twin`` and ``q⊥ / q⊥_twin``, each with its interval: the percentile interval of the ratio of the
    two fits' independent bootstrap draws, paired in order and widened to contain the ratio (as
    ``cooling.relative_contrast``); where either fit kept no draws, the widest interval the two intervals allow
    (low over high, high over low). Below 1: the model contracts more than its twin."""
    ratios = []
    for (_, value, (low, high)), (_, theirs, (their_low, their_high)), mine_draws, their_draws in zip(
        _parts(fit), _parts(twin), (fit.q_draws, fit.transverse_draws), (twin.q_draws, twin.transverse_draws)
    ):
        estimate = value / theirs
        if mine_draws is None or their_draws is None:
            ratios.append((estimate, (low / their_high, high / their_low)))
            continue
        n = min(len(mine_draws), len(their_draws))
        ratios.append((estimate, widened_interval(mine_draws[:n] / their_draws[:n], estimate, fit.level)))
    return tuple(ratios)


def judge_transverse_gain(fit: GainFit | None, twin: GainFit | None = None) -> tuple[str, str]:
    """Theorem 6.1 on a model: "holds" when the intervals of both ``q = q⊥ / q∥`` (the transverse gain relative to
    the relevant one: a contraction of every direction alike is not one) and ``q⊥`` (the transverse gain alone:
    a relevant gain above 1, from a direction the blocks amplify that entered ``U`` with its variance, is not one
    either) lie below ``MAX_Q``, and so do those of their ratios to the twin's (``over_twin``: the model
    contracts at least ``1 - MAX_Q`` per block more than its untrained architecture; a twin that contracts nearly
    as much, however tight the intervals, is no evidence of learning); "does not hold"
    when either interval, or either ratio's, lies at or above ``MAX_Q`` (a contraction the untrained architecture
    has too); else, or with fewer than ``MIN_PROMPTS`` prompts, "inconclusive". Without a twin (a null run) only
    ``MAX_Q`` counts. The contraction must also be steady, as the theorem's "by ``q`` per layer" is: the median
    block's ratio (``steady``) below ``MAX_Q`` too, else a step written by one block (a code appearing at the
    window's first depth: one block at 0.46, the rest at 1, ``q`` 0.92) would pass as a contraction."""
    if fit is None:
        return "not testable here", "fewer than 2 interior depths after the split"
    found = (
        f"relative block gain q = {fit.q:.3f} {_ci(*fit.ci)}, transverse alone {fit.transverse:.3f} "
        f"{_ci(*fit.transverse_ci)}, relevant {fit.relevant:.3f}, per layer over depths {fit.start}-{fit.stop} "
        f"({fit.n_prompts} prompts x {fit.n_directions} tangents, k = {fit.k})"
    )
    mine = _parts(fit)
    if (
        not all(np.isfinite([value, *ci]).all() for _, value, ci in mine)
        or not np.isfinite(fit.steady_ci).all()
    ):
        return "inconclusive", found + ": a bootstrap draw had no tokens at some depth"
    theirs = _parts(twin) if twin is not None else (None, None)
    if twin is not None and not all(np.isfinite([value, *ci]).all() for _, value, ci in theirs):
        return "inconclusive", found + ": the random twin's interval is undefined (a draw without tokens)"
    if fit.n_prompts < MIN_PROMPTS:
        return "inconclusive", found + f": fewer than {MIN_PROMPTS} prompts to resample"
    ratios = over_twin(fit, twin) if twin is not None else (None, None)
    for (name, _, (low, _)), other, ratio in zip(mine, theirs, ratios):
        if low >= MAX_Q:
            return "does not hold", found + f": the {name} gain is not below the minimum effect {MAX_Q}"
        if ratio is not None and ratio[1][0] >= MAX_Q:
            return "does not hold", found + (
                f": the {name} gain over the random twin's {other[1]:.3f} {_ci(*other[2])} is {ratio[0]:.3f} "
                f"{_ci(*ratio[1])}, not below {MAX_Q}"
            )
    steady = f"the median block's relative gain {fit.steady:.3f} {_ci(*fit.steady_ci)}"
    if fit.steady_ci[0] >= MAX_Q:
        return "does not hold", found + (
            f": not a steady contraction: {steady} is not below {MAX_Q} (fewer than half the blocks contract)"
        )
    for (name, _, (_, high)), other, ratio in zip(mine, theirs, ratios):
        if high >= MAX_Q:
            return "inconclusive", found + f": the {name} gain's interval reaches the minimum effect {MAX_Q}"
        if ratio is not None and ratio[1][1] >= MAX_Q:
            return (
                "inconclusive",
                found + f": the {name} gain over the random twin's {other[1]:.3f} {_ci(*other[2])} is "
                f"{ratio[0]:.3f} {_ci(*ratio[1])}, reaching {MAX_Q}",
            )
    if fit.steady_ci[1] >= MAX_Q:
        return "inconclusive", found + f": {steady} reaches the minimum effect {MAX_Q}"
    beside = (
        f", and below {MAX_Q} of the random twin's {twin.q:.3f} {_ci(*twin.ci)} and {twin.transverse:.3f} "
        f"{_ci(*twin.transverse_ci)}"
        if twin is not None
        else ""
    )
    return "holds", found + f": both below {MAX_Q}, and {steady}{beside}"
