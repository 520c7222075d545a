"""Measure a ladder model: its capability and every diagnostic of the paper, beside its untrained null.

1. ``probe_set(spec)``: held-out programs (names never seen in training) with their tokens of interest:
   the right-hand side of each statement of the queried chain (step 0 = the value's assignment
   ``a = 7``, step ``j`` = the ``j``-th later hop ``k = a``) and the query (step ``max_hops``);
2. ``measure(loaded, spec)``: capability (held-out accuracy by hop count, Wilson intervals) and the
   diagnostics, each with its uncertainty:

   - ``m(gamma)`` with prompt-bootstrap intervals, the rise ``m(1) - m(0)``, bimodality of Omega at the
     last depth, and ``gamma_c`` with its interval (``transition.critical_depth``; only where ``transition.is_testable``);
   - spikes of the covariance of the query states above the Marchenko–Pastur edge, against Theorem 6.3's
     ``k - 1`` (``classes.mixture_spikes`` at every depth);
   - the transverse contraction factor ``q`` of the query states (``flow.contraction_factor`` with the
     value-class subspace as the relevant one; Theorem 6.1);
   - TCO class stability: value centroids fitted at the assignment, tested at each later hop and the
     query, at every depth (``classes.class_stability``; claim 5), and the TCO test with its positive control
     (``tco_diagnostics``: two-way decoding of the bound value within the query step, then the query's probe at
     the hops, against the bag-of-values and first-value decoders; ``analysis.tco``);

3. ``spearman_ci(x, y)``: rank correlation across the ladder with a bootstrap interval over rungs and an
   exact permutation p-value; ``verdict`` turns it into "predicts capability", "does not" or "inconclusive";
   ``partial_spearman_ci(x, y, z)``: the same controlling for ``z`` (log parameter count: capability ranks
   almost like size), with a Freedman–Lane permutation p-value; ``partial_verdict`` judges it on its
   Holm-adjusted p (``analysis.bimodality.holm``, across the diagnostics).

Introduced in: chapter 7.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..analysis.resampling import Z95, percentile_interval, recentred_interval, wilson_interval
from ..errors import InvalidInputError
from .task import Example, TaskSpec, generate

ALPHA = 0.05  # the family-wise level of the Holm-adjusted partial correlations of chapter 7


@dataclass(frozen=True)
class ProbeSet:
    """Held-out programs and their tokens of interest, ready for ``capturing.states.token_states``."""

    examples: tuple[Example, ...]
    items: tuple  # prompts.reasoning.Item, one per program
    step_names: tuple[str, ...]  # "value", "hop 1", ..., "query"


def probe_set(spec: TaskSpec, n: int = 1024, seed: int = 101, hops: int | None = None) -> ProbeSet:
    """``n`` held-out programs (hop counts uniform unless ``hops``) with targets at the queried chain.

    Target label = the chain's value; step ``j < hops`` = the right-hand side of the chain's statement
    ``j``; step ``max_hops`` = the queried name at the end.
    """
    from ..prompts.reasoning import Item, Target

    examples = generate(spec, n, hops=hops, split="heldout", seed=seed)
    items = []
    for example in examples:
        words = example.text.split()
        starts = np.cumsum([0, *(len(w) + 1 for w in words)])  # character start of each word
        targets = [
            Target(int(starts[p - 1]), int(starts[p - 1] + len(words[p - 1])), example.answer, j)
            for j, p in enumerate(example.chain_positions)
        ]
        q = example.query_position - 1
        targets.append(Target(int(starts[q]), int(starts[q] + len(words[q])), example.answer, spec.max_hops))
        items.append(Item(example.text, tuple(targets), str(example.answer)))
    names = ("value", *(f"hop {j}" for j in range(1, spec.max_hops)), "query")
    return ProbeSet(tuple(examples), tuple(items), names)


def guess_floor(spec: TaskSpec, hops: int, n: int = 512, seed: int = 11) -> float:
    """Accuracy of a model that answers a uniformly random value among those written in the program.

    ``mean over programs of 1 / (number of distinct values in the program)``: what reading the values
    without binding them achieves (it rises with hops, since longer chains leave fewer distractor chains).
    The programs are those ``accuracy_by_hops`` evaluates (same seed).
    """
    examples = generate(spec, n, hops=hops, split="heldout", seed=seed * 1000 + hops)
    return float(np.mean([1.0 / len(set(e.chain_values)) for e in examples]))


def first_value_floor(spec: TaskSpec, hops: int, n: int = 512, seed: int = 11) -> float:
    """Accuracy of answering the first value written in the program, binding nothing.

    A positional heuristic: a long queried chain must start early, so the first value is more often the
    answer the more hops there are (0.53 at 3 hops, 0.71 at 4 on the trained ladder's task), unless
    ``spec.balanced_starts`` (then near ``guess_floor``). Same programs as ``accuracy_by_hops`` (same seed).
    """
    examples = generate(spec, n, hops=hops, split="heldout", seed=seed * 1000 + hops)
    return float(np.mean([int(next(w for w in e.text.split() if w.isdigit())) == e.answer for e in examples]))


def capability(model, spec: TaskSpec, n: int = 512, seed: int = 11) -> dict:
    """Held-out accuracy per hop count with Wilson intervals, the mean over hop counts (the capability),
    and two baselines that bind nothing, per hop count (``guess_floor``, ``first_value_floor``)."""
    from .train import accuracy_by_hops

    acc = accuracy_by_hops(model, spec, n=n, split="heldout", seed=seed)
    return {
        "n_per_hop": n,
        "accuracy": {str(h): a for h, a in acc.items()},
        "ci": {str(h): wilson_interval(round(a * n) / n, n, Z95) for h, a in acc.items()},
        "mean": float(np.mean(list(acc.values()))),
        "guess_floor": {str(h): guess_floor(spec, h, n, seed) for h in acc},
        "first_value_floor": {str(h): first_value_floor(spec, h, n, seed) for h in acc},
        "uniform_floor": 1.0 / spec.n_values,
    }


def _rise(cap) -> dict:
    """``m(1) - m(0)`` with a prompt-bootstrap interval (paired: the same tokens at both depths)."""
    from ..analysis import omega, omega_profiles

    first, ids = omega.samples(cap, 0)
    last, _ = omega.samples(cap, -1)
    rise = (last - first)[None, :]  # a difference of Omegas: in [-1, 1]
    p = omega_profiles.profile(rise, prompt_ids=ids, gamma=np.array([1.0]), n_boot=1000, bounds=(-1.0, 1.0))
    return {"value": float(p.m[0]), "ci": (float(p.low[0]), float(p.high[0]))}


def omega_diagnostics(cap) -> dict:
    """``m(gamma)`` with intervals, the rise, bimodality at the last depth and ``gamma_c`` (if >= 6 depths)."""
    from ..analysis import bimodality, omega, omega_profiles, transition

    profile = omega_profiles.profile(cap)
    last, _ = omega.samples(cap, -1)
    bimodal = bimodality.bimodality(last)
    out = {
        "gamma": profile.gamma.tolist(),
        "m": profile.m.tolist(),
        "m_low": profile.low.tolist(),
        "m_high": profile.high.tolist(),
        "rise": _rise(cap),
        "bimodality": {
            "coefficient": bimodal.coefficient,
            "dip_p": bimodal.dip_p,
            "delta_bic": bimodal.delta_bic,
            "verdict": bimodal.verdict,
        },
        "bimodality_by_depth": [
            bimodality.bimodality_coefficient(omega.samples(cap, depth)[0]) for depth in cap.depths.tolist()
        ],
    }
    if transition.is_testable(cap.n_depths):
        t = transition.critical_depth(cap, n_boot=200)
        out["transition"] = {
            "has_transition": t.has_transition,
            "gamma_c": t.gamma_c,
            "ci": t.ci,
            "amplitude": t.amplitude,
            "amplitude_ci": t.amplitude_ci,
            "reason": t.reason,
        }
    else:
        out["transition"] = {
            "has_transition": False,
            "gamma_c": None,
            "ci": None,
            "amplitude": None,
            "amplitude_ci": None,
            "reason": (
                f"only {cap.n_depths} depths: the jump fit needs {transition.MIN_FITTED} after the "
                f"{sum(transition.SKIP)} edge depths"
            ),
        }
    return out


def spike_diagnostics(query_states: np.ndarray, labels: np.ndarray) -> dict:
    """Spikes above the MP edge of the query states' covariance at every depth, against ``k - 1``."""
    from ..analysis import classes

    per_depth = [
        classes.mixture_spikes(query_states[:, depth], labels) for depth in range(query_states.shape[1])
    ]
    return {
        "n_spikes": [s.n_spikes for s in per_depth],
        "bound": per_depth[0].bound,
        "within_bound": [bool(s.within_bound) for s in per_depth],
        "n_tokens": int(query_states.shape[0]),
    }


def contraction_diagnostics(
    query_states: np.ndarray, labels: np.ndarray, n_boot: int = 50, seed: int = 0, level: float = 0.95
) -> dict:
    """Transverse contraction ``q`` of the query states over all depths, with a bootstrap interval over programs.

    Relevant subspace: the span of the value-class centroids (``labels``); ``q < 1`` contracts. Each depth is
    first divided by its standard deviation (``sqrt(tr C / d)``, centred): every layer adds to the residual
    stream, so its scale grows with depth, and a norm removes that scale before any layer reads it; ``q`` then
    measures the transverse directions shrinking relative to all the variance, not the stream's growth. The
    ``"variance"`` estimator is used: at depth 0 the query states are the embeddings of a few held-out
    names, too few distinct vectors for the least-squares layer map of the ``"map"`` estimator.

    The interval (at ``level``) is the draws' percentile interval moved by their median bias
    (``resampling.recentred_interval``, floored at 0), so it contains ``q``. The draws are biased: a resample
    repeats programs, and on the trained ladder their ``q`` runs above the sample's (the plain percentile
    intervals held ``q`` at their low end), so the plain interval can miss ``q`` altogether.
    """
    from ..analysis import flow

    states = np.transpose(query_states, (1, 0, 2)).astype(np.float64)
    states = states / np.sqrt(np.mean(np.var(states, axis=1, keepdims=True), axis=2, keepdims=True))
    q = flow.contraction_factor(states, labels=labels, method="variance")
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n_boot):
        pick = rng.integers(0, states.shape[1], states.shape[1])
        if len(np.unique(labels[pick])) < 2:
            continue
        draws.append(flow.contraction_factor(states[:, pick], labels=labels[pick], method="variance").q)
    return {
        "q": q.q,
        "ci": recentred_interval(q.q, np.asarray(draws), level, floor=0.0),
        "per_step": q.per_step.tolist(),
    }


def stability_diagnostics(token_states, step_names: tuple[str, ...]) -> dict:
    """Accuracy of value centroids fitted at the assignment (step 0), at every later step and depth.

    ``score``: the mean accuracy over the later hops (steps ``1..max_hops-1``, not the query) at the
    last depth, the bound object carried along the chain; ``query``: the same at the query.
    """
    from ..analysis import classes

    s = classes.class_stability(
        token_states.states, token_states.labels, token_states.steps, token_states.items
    )
    counts = {int(v): int(np.sum(token_states.steps == v)) for v in s.steps}
    later = [row for row, v in enumerate(s.steps) if 0 < v < len(step_names) - 1]
    return {
        "accuracy": s.accuracy.tolist(),
        "steps": [step_names[int(v)] for v in s.steps],
        "n_tokens": [counts[int(v)] for v in s.steps],
        "chance": s.chance,
        "score": float(s.accuracy[later, -1].mean()),
        "query": float(s.accuracy[-1, -1]),
    }


def program_values(examples) -> list[list[int]]:
    """The values each program writes, in writing order (the digits of its text)."""
    return [[int(w) for w in e.text.split() if w.isdigit()] for e in examples]


def tco_diagnostics(token_states, probes: ProbeSet, spec: TaskSpec) -> dict:
    """The TCO test with its positive control (``analysis.tco``): two-way decoding of the bound value (against
    another value written in the program), probes fitted at the query and cross-fitted by program.

    ``scores``: at the last depth (the one the output layer reads; fixed before looking), the control (within the
    query step), stability (the query's probe at the hops ``1..max_hops-1``), the bag-of-values and first-value
    decoders on the same pairs, and the k-way versions (``tco.TCOScores.to_dict``); ``control_by_depth`` and
    ``stability_by_depth``: both at every depth.
    """
    from ..analysis import tco

    written = program_values(probes.examples)
    hops = range(1, spec.max_hops)
    _, decoding = tco.score_binding(
        token_states.states,
        token_states.labels,
        token_states.steps,
        token_states.items,
        written,
        spec.max_hops,
        hops,
    )
    last = tco.summarise(decoding, written, spec.max_hops, hops, depths=[token_states.states.shape[1] - 1])
    control, stability = tco.control_and_stability(decoding, spec.max_hops, hops)
    return {
        "target": "two-way choice: the bound value against another value written in the program (chance 0.5)",
        "depth": "last",
        "scores": last.to_dict(),
        "control_by_depth": control.tolist(),
        "stability_by_depth": stability.tolist(),
    }


def task_capture(loaded, spec: TaskSpec, n_capture: int = 256):
    """``lb.capture`` of ``n_capture`` held-out task sequences (seed 202), the first position excluded: what every
    Omega diagnostic of a ladder model reads."""
    from ..capturing import capture

    return capture(
        loaded,
        [e.text for e in generate(spec, n_capture, split="heldout", seed=202)],
        max_length=spec.seq_len,
        batch_size=64,
        exclude_first=True,
        progress=False,
    )


def measure_model(
    loaded, spec: TaskSpec, n_probe: int = 1024, n_capture: int = 256, n_accuracy: int = 512
) -> dict:
    """Capability and every diagnostic of one loaded ladder model (trained or its null)."""
    from ..capturing.states import token_states

    probes = probe_set(spec, n_probe)
    states = token_states(loaded, probes.items, max_length=spec.seq_len, batch_size=128)
    query = states.steps == spec.max_hops
    cap = task_capture(loaded, spec, n_capture)
    return {
        "model": loaded.name,
        "n_layers": loaded.n_layers,
        "d_model": loaded.d_model,
        "n_parameters": int(sum(p.numel() for p in loaded.model.parameters())),
        "capability": capability(loaded.model, spec, n_accuracy),
        "omega": omega_diagnostics(cap),
        "spikes": spike_diagnostics(states.states[query], states.labels[query]),
        "contraction": contraction_diagnostics(states.states[query], states.labels[query]),
        "stability": stability_diagnostics(states, probes.step_names),
        "tco": tco_diagnostics(states, probes, spec),
    }


# --- across the ladder -------------------------------------------------------------------------------------


def _ranks(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(x)


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    rx, ry = _ranks(x), _ranks(y)
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


@dataclass(frozen=True)
class RankCorrelation:
    """Spearman's rho across the ladder with a bootstrap interval over rungs and a permutation p-value."""

    rho: float
    ci: tuple[float, float]
    p_value: float  # two-sided, exact over all permutations (n <= 8) or 20000 random ones
    n: int


def spearman_ci(x, y, n_boot: int = 4000, seed: int = 0, level: float = 0.95) -> RankCorrelation:
    """Spearman's ``rho`` of ``x`` and ``y`` (one value per rung), percentile bootstrap over rungs.

    Resamples in which either variable is constant (rho undefined) are dropped. With few rungs the
    interval is wide: that width is the honest uncertainty of a ladder of that many models.

    The interval is ``scipy.stats.bootstrap(paired=True, method="percentile")`` draw for draw (the same
    ``rng.integers`` call on the seed's generator), except that scipy keeps a resample whose rho is undefined and
    its interval is then NaN; the p-value is ``scipy.stats.permutation_test``'s exact one
    (``permutation_type="pairings"``) up to 8 rungs, while beyond that the 20000 random permutations continue the
    bootstrap's generator and, unlike scipy's, count no +1 for the observed order (``tests/test_ladder.py``).
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 3:
        raise InvalidInputError(f"x and y need the same 1-d shape with >= 3 rungs, got {x.shape}, {y.shape}.")
    from scipy.stats import rankdata

    rho = _spearman(x, y)
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(x), (n_boot, len(x)))
    draws = _pearson_rows(rankdata(x[pick], axis=1), rankdata(y[pick], axis=1))
    draws = draws[np.isfinite(draws)]
    low, high = percentile_interval(draws, level) if len(draws) else (np.nan, np.nan)
    if len(x) <= 8:
        shuffled = y[np.array(list(itertools.permutations(range(len(x)))))]
    else:
        shuffled = np.array([rng.permutation(y) for _ in range(20000)])
    perms = _pearson_rows(np.broadcast_to(_ranks(x), shuffled.shape), rankdata(shuffled, axis=1))
    p = float(np.mean(np.abs(perms) >= abs(rho) - 1e-12)) if np.isfinite(rho) else float("nan")
    return RankCorrelation(rho, (float(low), float(high)), p, len(x))


@dataclass(frozen=True)
class PartialRankCorrelation:
    """Partial Spearman rho of ``x`` and ``y`` given ``z`` across the ladder, interval and permutation p-value."""

    rho: float
    ci: tuple[float, float]
    p_value: float  # two-sided, Freedman–Lane: exact over all permutations (n <= 8) or 20000 random ones
    n: int
    rho_xz: float  # plain Spearman rho of x with the control
    rho_yz: float  # plain Spearman rho of y with the control
    p_floor: float  # the smallest p any rank order of y could reach with these x and z (n <= 7; NaN beyond)


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row of ``a`` with the same row of ``b`` (NaN where a row is constant)."""
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    norm = np.sqrt(np.sum(a * a, axis=-1) * np.sum(b * b, axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 1e-12, np.sum(a * b, axis=-1) / np.where(norm > 0, norm, 1), np.nan)


def _partial_rows(rx: np.ndarray, ry: np.ndarray, rz: np.ndarray) -> np.ndarray:
    """``(r_xy - r_xz r_yz) / sqrt((1 - r_xz^2)(1 - r_yz^2))`` row by row on ranks (a constant ``z`` controls for
    nothing: the plain correlation); NaN where ``x`` or ``y`` is constant or a function of ``z``'s ranks alone."""
    r_xy = _pearson_rows(rx, ry)
    z_varies = np.ptp(rz, axis=-1) > 0
    r_xz = np.where(z_varies, _pearson_rows(rx, rz), 0.0)
    r_yz = np.where(z_varies, _pearson_rows(ry, rz), 0.0)
    denominator = np.sqrt(np.clip((1 - r_xz**2) * (1 - r_yz**2), 0, None))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 1e-9, (r_xy - r_xz * r_yz) / denominator, np.nan)


def partial_spearman_ci(
    x, y, z, n_boot: int = 4000, seed: int = 0, level: float = 0.95, min_distinct: int = 4
) -> PartialRankCorrelation:
    """Partial Spearman ``rho`` of ``x`` and ``y`` given ``z`` (one value each per rung).

    ``rho_xy.z = (r_xy - r_xz r_yz) / sqrt((1 - r_xz^2)(1 - r_yz^2))`` on the ranks: the correlation of the
    ranks of ``x`` and of ``y`` once each has had its least-squares line on the ranks of ``z`` removed.
    Interval: percentile bootstrap over rungs, dropping resamples with fewer than ``min_distinct`` distinct rungs
    (with three, the residuals have one degree of freedom and the partial is +-1 by construction) or an undefined
    partial. p-value: Freedman & Lane (1983), permuting the residuals of ``y``'s ranks on ``z``'s and removing
    ``z`` again (the scheme Anderson & Legendre 1999 found the most reliable), two-sided, exact over all ``n!``
    permutations up to ``n = 8``, else over the identity and 20000 random ones.
    ``scipy.stats.permutation_test`` has no Freedman–Lane scheme: it permutes the data it is given, so the scheme
    has to be written as its statistic (``tests/test_ladder.py`` does, and gets the same p); here one matrix of
    permutations serves the p-value and ``p_floor``. ``scipy.stats.bootstrap`` cannot drop resamples (a NaN
    statistic makes its interval NaN), which the ``min_distinct`` rule needs.

    How little six rungs can show: the residuals have ``n - 2 = 4`` degrees of freedom; a quarter of the bootstrap
    resamples have three distinct rungs or fewer (dropped) and most of the rest four or five; where ``x`` ranks
    almost like ``z`` (the trained ladder: two swapped pairs, rho 0.89) its residuals rest on the rungs that
    break the order, and the smallest p any order of ``y`` can reach (``p_floor``) is 2/720, 0.014 after Holm
    over five diagnostics.
    """
    x, y, z = (np.asarray(v, dtype=float) for v in (x, y, z))
    if not (x.shape == y.shape == z.shape) or x.ndim != 1 or len(x) < 4:
        raise InvalidInputError(
            f"x, y and z need the same 1-d shape with >= 4 rungs, got {x.shape}, {y.shape}, {z.shape}."
        )
    from scipy.stats import rankdata

    n = len(x)
    rx, ry, rz = _ranks(x), _ranks(y), _ranks(z)
    rho = float(_partial_rows(rx, ry, rz))
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, n, (n_boot, n))
    distinct = np.array([len(np.unique(row)) for row in pick]) >= min_distinct
    draws = _partial_rows(*(rankdata(v[pick[distinct]], axis=1) for v in (x, y, z)))
    draws = draws[np.isfinite(draws)]
    low, high = percentile_interval(draws, level) if len(draws) else (np.nan, np.nan)
    design = np.column_stack([np.ones(n), rz]) if np.ptp(rz) > 0 else np.ones((n, 1))
    residual = np.eye(n) - design @ np.linalg.pinv(design)  # removes the line on z's ranks
    ex = residual @ rx
    perms = (
        np.array(list(itertools.permutations(range(n))))
        if n <= 8
        else np.vstack([np.arange(n), np.argsort(rng.random((20000, n)), axis=1)])  # p >= 1/20001
    )
    p = _freedman_lane_p(ex, residual @ ry, residual, perms) if np.isfinite(rho) else float("nan")
    floor = float("nan")  # over the n! rank orders of y (without ties): how small p can get on these rungs
    if n <= 7 and np.linalg.norm(ex) > 1e-9:
        floor = min(_freedman_lane_p(ex, residual @ (order + 1.0), residual, perms) for order in perms)
    return PartialRankCorrelation(
        rho, (float(low), float(high)), p, n, _spearman(x, z), _spearman(y, z), floor
    )


def _freedman_lane_p(ex: np.ndarray, ey: np.ndarray, residual: np.ndarray, perms: np.ndarray) -> float:
    """Two-sided p of the correlation of residuals ``ex`` and ``ey``: ``ey`` permuted by each row of ``perms``,
    the control removed again (``residual``), correlated with ``ex`` (Freedman & Lane 1983)."""
    norm_x, norm_y = np.linalg.norm(ex), np.linalg.norm(ey)
    if norm_x < 1e-9 or norm_y < 1e-9:
        return float("nan")
    observed = ex @ ey / (norm_x * norm_y)
    shuffled = ey[perms] @ residual
    with np.errstate(invalid="ignore", divide="ignore"):
        stats = np.nan_to_num(shuffled @ ex / (norm_x * np.linalg.norm(shuffled, axis=1)))
    return float(np.mean(np.abs(stats) >= abs(observed) - 1e-12))


def signed_decision(
    ci: tuple[float, float], p_holm: float, expected_sign: int, alpha: float = ALPHA
) -> tuple[str | None, str]:
    """``("expected" | "opposite" | None, why)``: the Holm-adjusted p is below ``alpha`` and the interval lies on
    the expected (or the other) side of 0; ``None`` otherwise, with the reason neither holds."""
    low, high = sorted((expected_sign * ci[0], expected_sign * ci[1]))
    if p_holm < alpha and low > 0:
        return "expected", ""
    if p_holm < alpha and high < 0:
        return "opposite", ""
    return (
        None,
        "the interval includes 0" if low <= 0 <= high else f"the Holm-adjusted p is not below {alpha}",
    )


def partial_verdict(
    r: PartialRankCorrelation, p_holm: float, n_tests: int, expected_sign: int, alpha: float = ALPHA
) -> tuple[str, str]:
    """("predicts capability" | "does not" | "inconclusive", reason) from a partial rank correlation given size.

    Predicts: the Holm-adjusted p (``n_tests`` diagnostics) is below ``alpha`` and the interval lies on the
    expected side of 0. Does not: the diagnostic does not vary across the ladder, or the same two conditions with
    the interval on the other side. Inconclusive: anything else, size named as the confound.
    """
    if not np.isfinite(r.rho):
        if not np.isfinite(r.rho_yz):
            return "does not", "the diagnostic takes the same value on every rung while capability varies"
        return "inconclusive", (
            "capability or the diagnostic ranks exactly like log parameters across the rungs: nothing is left "
            "of it once size is controlled for, so size and capability cannot be told apart"
        )
    text = (
        f"partial Spearman rho given log parameters = {r.rho:+.2f}, 95% CI [{r.ci[0]:+.2f}, {r.ci[1]:+.2f}], "
        f"permutation p = {r.p_value:.3f}, Holm-adjusted over {n_tests} diagnostics p = {p_holm:.3f}, n = {r.n} "
        f"(capability against log parameters: rho = {r.rho_xz:+.2f}; the diagnostic: rho = {r.rho_yz:+.2f})"
    )
    side, why = signed_decision(r.ci, p_holm, expected_sign, alpha)
    if side == "expected":
        return "predicts capability", text
    if side == "opposite":
        return "does not", text + " (opposite to the paper's direction, beyond size)"
    if np.isfinite(r.p_floor) and min(1.0, n_tests * r.p_floor) >= alpha:
        why += (
            f"; these rungs cannot show it: no order of a diagnostic reaches p below {r.p_floor:.3f} given "
            f"capability and size, {min(1.0, n_tests * r.p_floor):.3f} after Holm"
        )
    return "inconclusive", text + f" ({why}: what the diagnostic shares with capability may be size)"


def verdict(r: RankCorrelation, expected_sign: int) -> tuple[str, str]:
    """("predicts capability" | "does not" | "inconclusive", reason) from a rank correlation.

    Predicts: the whole interval lies on the expected side of 0 and the permutation p < 0.05.
    Does not: the diagnostic does not vary across the ladder, or the interval lies on the other side.
    Inconclusive: anything else (the interval straddles 0).
    """
    if not np.isfinite(r.rho):
        return "does not", "the diagnostic takes the same value on every rung while capability varies"
    low, high = sorted((expected_sign * r.ci[0], expected_sign * r.ci[1]))
    text = f"Spearman rho = {r.rho:+.2f}, 95% CI [{r.ci[0]:+.2f}, {r.ci[1]:+.2f}], permutation p = {r.p_value:.3f}, n = {r.n}"
    if low > 0 and r.p_value < 0.05:
        return "predicts capability", text
    if high < 0:
        return "does not", text + " (opposite to the paper's direction)"
    return "inconclusive", text + " (the interval includes 0)"
