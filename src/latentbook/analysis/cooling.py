"""Attention "cooling" judged: does attention entropy fall with depth, beyond the random-weight twin's?

Usage:

1. ``summary = cooling_summary(cap)`` for a ``Capture`` made with ``attention=True`` (or its ``AttentionStats``,
   or a list of them, one per disjoint group of prompts, or ``sums_from_rows(...)`` of raw attention rows);
2. ``twin = cooling_summary(twin_cap)`` for the random-weight twin;
3. ``verdict, reason = judge_cooling(summary, twin)``, a verdict in ``verdict.VERDICTS``;
4. ``planted_statistics.planted_cooling(rng, present)`` gives (summary, twin) pairs with a known answer, for the
   calibration table.

The quantity (book/paper.md, "Attention thermodynamics": growing query and key norms "cool" attention) is the
normalised entropy of attention rows, ``H / log n`` (1 = uniform over the row's ``n`` keys, 0 = one key), per
layer ``l = 1..L`` (``gamma = l / L``) and head ``h`` as a ratio of sums over recorded rows,
``e_lh = sum_rows H / sum_rows log n``, averaged over heads, ``e_l = mean_h e_lh``. The contrast is

    R = mean_{l in after} e_l / mean_{l in before} e_l,

"before" the interior layers with ``gamma <= split`` and "after" those with ``gamma > split`` ("interior": not
the first layer, which reads the embeddings, nor the last, shaped by the unembedding). ``R < 1`` is cooling.
``beta_eff`` (the mean logit std, ``thermo.logit_scale``) gets the same contrast; it rises when attention cools.

What a capture allows. ``AttentionStats`` keeps float64 *sums* over all recorded rows per (layer, head): no
per-prompt values, no per-key weights. So (a) the attention sink as a *key* (the first real token, which draws
much of the weight of every row in trained models) is removed while capturing: beside each row's statistics the
capture sums those of the row without its sink key, renormalised (``sink_excluded=True``; captures from before
those sums existed keep the sink in, ``sink_excluded=False``); (b) ``exclude_first`` only drops position 0 as a *query*, and
that row (one key: ``H = log n = 0``) adds nothing to either sum, so ``R`` is the same with or without it;
(c) the resampling unit of one capture is the head (heads resampled within each layer: the interval says how
much the head-mean depends on which heads the layer happens to have, not how much on which prompts were
read). A list of captures of disjoint prompt groups (``MIN_GROUPS`` or more) gives a two-stage bootstrap:
prompt groups, then heads within each layer. The head stage stays in every case, since the claim is a trend
with depth, not a property of the few heads a layer happens to have; its deviations are scaled by
``sqrt(H / (H - 1))`` (the plain bootstrap variance of a mean of ``H`` values is ``(H - 1) / H`` of the
unbiased one). ``sums_from_rows`` (raw rows from ``capturing.attention.attention_rows``, one prompt at a
time) gives both a prompt bootstrap and the entropy with the sink key removed and the row renormalised,
``q_j = p_j / (1 - p_0)`` for ``j >= 1`` (computed from the logits, ``H(q) = log sum_{j>=1} e^{z_j} -
sum_{j>=1} q_j z_j``).

Criterion (``judge_cooling``), with ``MIN_COOLING = 0.10``: "holds" when the 95 % interval of ``R`` lies below
``1 - MIN_COOLING`` and, with a twin, so does the interval of ``R / R_twin`` (the model cools by a tenth more
than its random twin); "does not hold" when an interval lies wholly above ``1 - MIN_COOLING`` (any fall is
smaller than the minimum effect; at or above 1: none); else "inconclusive"; "not testable here" without
attention statistics or without interior layers on both sides of the split.

Introduced in: chapter 2 (judged in chapter 8).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from ..errors import InvalidInputError
from .paper import PAPER_GAMMA_C
from .resampling import cluster_weights, widened_interval

MIN_COOLING = 0.10
MIN_GROUPS = 5
LEVEL = 0.95


# --- per-unit sums ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class AttentionSums:
    """Sums over recorded rows per resampling unit ``g``, layer ``l`` and head ``h``: arrays ``(G, L, H)``.

    ``entropy`` = sum of ``H`` (nats), ``log_keys`` = sum of ``log n``, ``rows`` = rows, ``logit_std`` = sum of
    the rows' logit std over ``std_rows`` rows with two keys or more. ``unit`` names what ``g`` is ("prompt",
    "prompt group"; one capture: "capture"); ``sink_excluded`` says whether key position 0 was removed.
    """

    entropy: np.ndarray
    log_keys: np.ndarray
    rows: np.ndarray
    logit_std: np.ndarray
    std_rows: np.ndarray
    unit: str
    sink_excluded: bool

    def __post_init__(self) -> None:
        shapes = {
            np.shape(getattr(self, name)) for name in ("entropy", "log_keys", "rows", "logit_std", "std_rows")
        }
        if len(shapes) != 1 or len(next(iter(shapes))) != 3:
            raise InvalidInputError(
                f"AttentionSums arrays must all have the shape (units, layers, heads); got {sorted(shapes)}."
            )

    @property
    def n_units(self) -> int:
        return int(np.shape(self.entropy)[0])

    @property
    def n_layers(self) -> int:
        return int(np.shape(self.entropy)[1])


def _stats_of(source: Any):
    from .thermo import _attention_stats

    return _attention_stats(source)


def attention_sums(source: Any, drop_sink: bool = True) -> AttentionSums:
    """``AttentionSums`` of a ``Capture`` or ``AttentionStats`` (one unit), or of a sequence of them (one unit
    per prompt group).

    The groups must be captures of disjoint prompts of the same model and settings (not checked here:
    ``Capture.merge`` refuses the same prompts twice). With ``drop_sink`` the sums are those of the rows with
    their sink key removed and renormalised (``capturing.attention.row_statistics``), when the capture has
    them; captures made before those fields existed keep the sink in (``sink_excluded`` says which).
    """
    many = isinstance(source, Sequence) and not isinstance(source, str)
    stats = [_stats_of(s) for s in (source if many else [source])]
    if not stats:
        raise InvalidInputError("Pass at least one capture with attention statistics.")
    if any(not s.sums for s in stats):
        raise InvalidInputError("These attention statistics are empty: no forward was recorded.")
    if len({(s.n_layers, s.n_heads) for s in stats}) != 1:
        raise InvalidInputError("All prompt groups must come from the same model (same layers and heads).")
    unrecorded = sorted({int(i) + 1 for s in stats for i in np.flatnonzero(s.n_rows().sum(1) == 0)})
    if unrecorded:
        raise InvalidInputError(
            f"Layers {unrecorded[:5]}{' ...' if len(unrecorded) > 5 else ''} hold no attention rows (a capture "
            "with depths=... records the attention of its depths' layers only): the cooling contrast needs every "
            "layer. Capture with all depths and attention=True."
        )

    sink_excluded = drop_sink and all(s.has_nosink for s in stats)
    suffix = "_nosink" if sink_excluded else ""

    def stack(name: str) -> np.ndarray:
        return np.stack([s.sums[name + suffix].detach().cpu().double().numpy() for s in stats])

    return AttentionSums(
        entropy=stack("entropy"),
        log_keys=stack("log_keys"),
        rows=stack("rows"),
        logit_std=stack("logit_std"),
        std_rows=stack("std_rows"),
        unit="prompt group" if many else "capture",
        sink_excluded=sink_excluded,
    )


def row_sums(logits: np.ndarray, valid: np.ndarray, drop_sink: bool = True) -> dict[str, np.ndarray]:
    """Per-head sums over the rows of one prompt at one layer (``logits``, ``valid``: ``(H, T, S)``).

    With ``drop_sink`` key 0 leaves every row and the rest is renormalised, ``q = softmax(z_{j>=1})``:
    ``H(q) = logsumexp(z) - sum_j q_j z_j`` over the remaining valid keys, ``log n`` with ``n`` the keys left.
    Rows left with no key (the first query, whose only key is the sink) are not rows of this statistic and are
    skipped. Returns ``(H,)`` arrays keyed as the fields of ``AttentionSums``. Introduced in: chapter 2.
    """
    # equivalent mutants here: valid as given
    z, ok = np.asarray(logits, dtype=np.float64), np.asarray(valid, dtype=bool)  # pragma: no mutate
    if z.ndim != 3 or ok.shape != z.shape:
        raise InvalidInputError(
            f"logits and valid must both be (heads, queries, keys) arrays; got {z.shape} and {ok.shape}."
        )
    if drop_sink:
        ok = ok.copy()
        ok[..., 0] = False  # pragma: no mutate: None into a bool mask
    n = ok.sum(-1)
    real = n > 0
    masked = np.where(ok, z, -np.inf)
    with np.errstate(invalid="ignore"):  # pragma: no mutate: errstate
        lse = special.logsumexp(masked, axis=-1)
        # equivalent mutants here: the weight on a zeroed logit
        q = np.where(ok, np.exp(masked - lse[..., None]), 0.0)  # pragma: no mutate
        # equivalent mutants here: the logits under a zero weight
        entropy = lse - (q * np.where(ok, z, 0.0)).sum(-1)  # pragma: no mutate
    mean = np.where(ok, z, 0.0).sum(-1) / np.maximum(n, 1)  # pragma: no mutate: single-key rows' std unread
    # pragma: no mutate start (single-key rows' std unread)
    std = np.sqrt((np.where(ok, z - mean[..., None], 0.0) ** 2).sum(-1) / np.maximum(n, 1))
    # pragma: no mutate end
    multi = n > 1
    return {
        "entropy": np.where(real, entropy, 0.0).sum(-1),  # pragma: no mutate: 2-d per-query sums
        # equivalent mutants here: 2-d per-query sums
        "log_keys": np.where(real, np.log(np.maximum(n, 1)), 0.0).sum(-1),  # pragma: no mutate
        # equivalent mutants here: astype(None) is float64, 2-d per-query sums
        "rows": real.sum(-1).astype(np.float64),  # pragma: no mutate
        "logit_std": np.where(multi, std, 0.0).sum(-1),  # pragma: no mutate: 2-d per-query sums
        # equivalent mutants here: astype(None) is float64, 2-d per-query sums
        "std_rows": multi.sum(-1).astype(np.float64),  # pragma: no mutate
    }


def sums_from_rows(rows_by_prompt: Sequence[Sequence[Any]], drop_sink: bool = True) -> AttentionSums:
    """``AttentionSums`` with one unit per prompt from raw rows: ``rows_by_prompt[i][l]`` is the
    ``capturing.attention.AttentionRows`` of prompt ``i`` at layer ``l`` (every layer, in order).

    Gives what a capture cannot: a prompt bootstrap, and (``drop_sink``) the entropy without the sink key.
    """
    if not rows_by_prompt or any(len(p) != len(rows_by_prompt[0]) or not len(p) for p in rows_by_prompt):
        raise InvalidInputError(
            "rows_by_prompt must list, for every prompt, the AttentionRows of every layer (same number each)."
        )
    per = [[row_sums(r.logits, r.valid, drop_sink) for r in prompt] for prompt in rows_by_prompt]
    if len({p[0]["rows"].shape for p in per}) != 1:
        raise InvalidInputError("Every prompt's rows must come from the same model (same number of heads).")

    def stack(name: str) -> np.ndarray:
        return np.array([[layer[name] for layer in prompt] for prompt in per])

    return AttentionSums(
        *(stack(name) for name in ("entropy", "log_keys", "rows", "logit_std", "std_rows")),
        unit="prompt",
        sink_excluded=drop_sink,
    )


# --- the contrast and its interval -----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CoolingSummary:
    """Normalised attention entropy after the split over before it (``R``), with its interval and profile.

    ``estimate`` is ``R``, ``ci`` its interval (always containing it; NaN when undefined), ``what`` says in
    words what was measured and resampled, ``n_depths`` the attention layers, ``sink_excluded`` whether key
    position 0 was removed. Also: ``gamma``, ``entropy`` (head-mean ``H / log n`` per layer), ``beta_eff``
    (head-mean logit std per layer), ``beta_ratio`` and ``beta_ci`` (its after / before ratio), ``before`` and
    ``after`` (0-based layer indices of the windows), ``draws`` (bootstrap replicates of ``R``, for the twin
    comparison), ``unit`` and ``n_units`` (what was resampled), ``split`` and ``level``.
    """

    estimate: float
    ci: tuple[float, float]
    what: str
    n_depths: int
    sink_excluded: bool
    gamma: np.ndarray
    entropy: np.ndarray
    beta_eff: np.ndarray
    beta_ratio: float
    beta_ci: tuple[float, float]
    before: tuple[int, ...]
    after: tuple[int, ...]
    draws: np.ndarray
    unit: str
    n_units: int
    split: float = PAPER_GAMMA_C
    level: float = LEVEL

    @property
    def testable(self) -> bool:
        """Interior layers on both sides of the split."""
        return bool(self.before) and bool(self.after)


def attention_windows(n_layers: int, split: float) -> tuple[np.ndarray, np.ndarray]:
    """0-based interior layers (not the first nor the last) with ``gamma = l / L <= split`` and ``> split``."""
    index = np.arange(n_layers)
    gamma = (index + 1) / n_layers
    interior = (index > 0) & (index < n_layers - 1)
    return np.flatnonzero(interior & (gamma <= split)), np.flatnonzero(interior & (gamma > split))


def _ratio(values: np.ndarray, before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """``mean(values[..., after]) / mean(values[..., before])`` along the last (layer) axis."""
    with np.errstate(invalid="ignore", divide="ignore"):  # pragma: no mutate: errstate
        return values[..., after].mean(-1) / values[..., before].mean(-1)


def _per_head(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Ratio of sums; NaN (never a number) where a head recorded nothing."""
    with np.errstate(invalid="ignore", divide="ignore"):  # pragma: no mutate: errstate
        return np.where(denominator > 0, numerator / denominator, np.nan)


def _layer_draws(num: np.ndarray, den: np.ndarray, idx: np.ndarray, by_groups: bool, n_boot: int, rng):
    """Head-mean per layer ``idx`` over ``n_boot`` two-stage resamples: ``(B, len(idx))``.

    Stage 1 (``by_groups``): the units (prompts or prompt groups, rows of ``num`` / ``den``) are drawn with
    replacement and their sums added. Stage 2: each layer's heads are drawn with replacement, independently
    per layer (the claim is about depth, not about the particular heads a layer happens to have).
    """
    if by_groups:
        weights = cluster_weights(rng, num.shape[0], n_boot)
        per_head = _per_head(  # float weights, no BLAS: fast and deterministic on a shared machine
            np.einsum("bg,glh->blh", weights, num[:, idx]),  # pragma: no mutate: einsum's labels
            np.einsum("bg,glh->blh", weights, den[:, idx]),  # pragma: no mutate: einsum's labels
        )
    else:
        per_head = np.broadcast_to(_per_head(num.sum(0), den.sum(0))[idx], (n_boot, len(idx), num.shape[2]))
    n_heads = num.shape[2]
    centre = per_head.mean(-1)
    # pragma: no mutate start (take_along_axis's default axis, integers(0, n) is integers(n))
    picks = np.take_along_axis(per_head, rng.integers(0, n_heads, size=per_head.shape), axis=-1).mean(-1)
    # pragma: no mutate end
    return centre + np.sqrt(n_heads / max(n_heads - 1, 1)) * (picks - centre)


def _contrast(
    num: np.ndarray, den: np.ndarray, before: np.ndarray, after: np.ndarray, by_groups: bool, n_boot: int, rng
) -> tuple[np.ndarray, float, np.ndarray]:
    """(per-layer head-mean, ratio after / before, bootstrap draws of the ratio)."""
    profile = _per_head(num.sum(0), den.sum(0)).mean(-1)
    if not (len(before) and len(after)):
        return profile, float("nan"), np.empty(0)  # pragma: no mutate: nan spelling
    idx = np.concatenate([before, after])
    local_before, local_after = np.arange(len(before)), len(before) + np.arange(len(after))
    layers = _layer_draws(num, den, idx, by_groups, n_boot, rng)
    return profile, float(_ratio(profile, before, after)), _ratio(layers, local_before, local_after)


def cooling_summary(
    cap: Any,
    split: float = PAPER_GAMMA_C,
    n_boot: int = 200,
    seed: int = 0,  # pragma: no mutate: default seed
    level: float = LEVEL,
    drop_sink: bool = True,
) -> CoolingSummary:
    """``R = mean_{after} e_l / mean_{before} e_l`` of the head-mean normalised entropy ``e_l`` (module
    docstring), with a ``level`` percentile bootstrap interval: over prompts or prompt groups, then heads
    within each layer, when ``cap`` has ``MIN_GROUPS`` of them or more; else over heads within each layer
    only (a single capture keeps only sums). The interval is widened to contain ``R`` if it misses it.

    ``cap``: a ``Capture`` with ``attention=True``, its ``AttentionStats``, a list of them (disjoint prompt
    groups) or an ``AttentionSums`` (``sums_from_rows``: per prompt, sink removed). ``drop_sink``: read the
    capture's sums of rows without their sink key (``attention_sums``). Introduced in: chapter 2.
    """
    if not (0 < split < 1) or not isinstance(n_boot, int) or n_boot < 20 or not (0 < level < 1):
        raise InvalidInputError(
            f"Use 0 < split < 1, an integer n_boot >= 20 and 0 < level < 1; got split={split!r}, "
            f"n_boot={n_boot!r}, level={level!r}."
        )
    sums = cap if isinstance(cap, AttentionSums) else attention_sums(cap, drop_sink)
    n_layers = sums.n_layers
    before, after = attention_windows(n_layers, split)
    by_groups = sums.n_units >= MIN_GROUPS
    rng = np.random.default_rng(seed)
    profile, estimate, draws = _contrast(sums.entropy, sums.log_keys, before, after, by_groups, n_boot, rng)
    beta, beta_ratio, beta_draws = _contrast(
        sums.logit_std, sums.std_rows, before, after, by_groups, n_boot, rng
    )
    unit = f"{sums.unit}s, then heads within each layer" if by_groups else "heads within each layer"
    n_units = sums.n_units if by_groups else int(np.shape(sums.entropy)[2])
    what = _describe(sums, n_layers, split, before, after, unit, n_units, level)
    return CoolingSummary(
        estimate=estimate,
        ci=widened_interval(draws, estimate, level),
        what=what,
        n_depths=n_layers,
        sink_excluded=sums.sink_excluded,
        gamma=np.arange(1, n_layers + 1) / n_layers,
        entropy=profile,
        beta_eff=beta,
        beta_ratio=beta_ratio,
        beta_ci=widened_interval(beta_draws, beta_ratio, level),
        before=tuple(int(i) for i in before),
        after=tuple(int(i) for i in after),
        draws=draws,
        unit=unit,
        n_units=n_units,
        split=float(split),
        level=float(level),
    )


def _describe(sums, n_layers, split, before, after, unit, n_units, level) -> str:
    if not (len(before) and len(after)):
        return (
            f"{n_layers} attention layers: no interior layer on both sides of gamma = {split} "
            f"({len(before)} before, {len(after)} after), so no contrast"
        )
    sink = (
        "sink key removed, rows renormalised"
        if sums.sink_excluded
        else "sink key included (a capture from before sink-excluded sums)"
    )
    return (
        f"H/log n (head mean) over interior layers {after[0] + 1}-{after[-1] + 1} / {before[0] + 1}-"
        f"{before[-1] + 1} of {n_layers} (split gamma = {split}); {sink}; {level:.0%} percentile bootstrap "
        f"over {n_units} {unit}"
    )


# --- the judge ---------------------------------------------------------------------------------------------


def relative_contrast(summary: CoolingSummary, twin: CoolingSummary) -> tuple[float, tuple[float, float]]:
    """``R / R_twin`` with the percentile interval of the ratio of independent bootstrap draws.

    Below 1: the model's entropy falls more than its random twin's. Introduced in: chapter 8.
    """
    with np.errstate(invalid="ignore", divide="ignore"):  # pragma: no mutate: errstate
        estimate = summary.estimate / twin.estimate
        n = min(len(summary.draws), len(twin.draws))
        draws = summary.draws[:n] / twin.draws[:n]
    return float(estimate), widened_interval(draws, float(estimate), min(summary.level, twin.level))


def _fmt(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]"


def judge_cooling(
    summary: CoolingSummary | None, twin: CoolingSummary | None = None, min_effect: float = MIN_COOLING
) -> tuple[str, str]:
    """Holds when ``R``'s interval lies below ``1 - min_effect`` and, with a twin, so does that of
    ``R / R_twin`` (``relative_contrast``); does not hold when either interval lies wholly above
    ``1 - min_effect`` (no fall as large as the minimum effect; or none beyond the twin's); else inconclusive.
    Not testable without attention statistics (``None``) or interior layers on both sides of the split.

    ``MIN_COOLING = 0.10``: a tenth of the distance to uniform attention, the smallest fall that is a
    sharpening rather than drift; random-weight twins sit at ``H / log n ~ 1`` at every depth, so a trained
    model's fall of a tenth is far outside what an untrained stack does. Introduced in: chapter 8.
    """
    if summary is None:
        return "not testable here", "no attention statistics: capture with lb.capture(..., attention=True)"
    if not summary.testable:
        return "not testable here", summary.what
    threshold = 1.0 - min_effect
    low, high = summary.ci
    sink = "sink removed" if summary.sink_excluded else "sink key included"
    found = (
        f"H/log n after / before gamma = {summary.split} = {summary.estimate:.3f} {_fmt(low, high)} "
        f"({summary.unit} bootstrap, {sink})"
    )
    if not np.isfinite(summary.estimate) or not np.isfinite(low):
        return "inconclusive", found + ": the entropy is undefined at some depth (a head recorded no rows)"
    if low > threshold:
        return "does not hold", found + f": any fall is smaller than {min_effect:.0%}"
    rel = None
    if twin is not None:
        if not twin.testable or not np.isfinite(twin.estimate):
            return "inconclusive", found + ": the random twin has no contrast to compare with"
        rel = relative_contrast(summary, twin)
        found += f"; over the random twin's {twin.estimate:.3f}: {rel[0]:.3f} {_fmt(*rel[1])}"
        if rel[1][0] > threshold:
            return "does not hold", found + f": not {min_effect:.0%} below the twin's"
    if high < threshold and (rel is None or rel[1][1] < threshold):
        return "holds", found + f": a fall of {min_effect:.0%} or more"
    return "inconclusive", found + f": the interval reaches above {threshold:.2f}"
