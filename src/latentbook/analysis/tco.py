"""Transient Class Objects with a positive control: decode the bound value within a step, then across steps.

Claim 5 (book/paper.md) says a bound object keeps its class code across reasoning steps. Reading that claim needs
three things the plain class-stability score (``classes.class_stability``) lacks:

1. **Baselines on the same tokens.** A state that only knows the bag of values (which values the prompt writes
   and how often, not which variable holds which) already guesses right about ``1 / |values in the prompt|``
   of the time, and one that answers the first value written scores whatever the task's layout gives away
   (``bag_of_values_baseline``, ``first_value_baseline``). Beating chance is not evidence of binding; beating
   these is.
2. **The decoding target: a two-way choice between values present in the prompt** (the binding-ID test of
   Feng & Steinhardt 2023). For every token of interest, the probe's scores of its bound value and of one
   other value written in the same prompt are compared (``two_way_distractors``); chance is 0.5. The
   distractor is chosen, where the program allows, written as often as the bound value (so a bag of values
   scores 0.5: both candidates are in the bag equally) and so that the bound value is written first in half
   the pairs (so a first-value or last-value reader scores 0.5 too); the baselines measure what is left. The
   k-way accuracy (all values) is kept beside it, against its own baselines.
3. **A positive control.** Within one step (probe fitted and tested at the query), the bound value must be
   decodable above the baselines; only then does a failure to transfer across steps say something. A probe
   fitted at the query and tested at the hop tokens (where the value is held only by reference) measures
   stability; if the control fails, stability is unreadable ("inconclusive" in ``verdict.judge_tco``).

The probe (``ridge_probe.fit_probe``) is a ridge regression of the one-hot value on the standardised state, its penalty
chosen by generalised cross-validation on the training tokens only (Golub, Heath & Wahba 1979). Every
probe is **cross-fitted by program** (``program_folds``): the tokens of one program all sit in one fold, so no
program is classified by a probe it helped fit, and a program's idiosyncrasies shared across its tokens
cannot leak into the score.

Usage::

    written = [[7, 3, 7], [2, 5], ...]      # the values each program writes, in writing order
    scores, decoding = score_binding(states, labels, steps, items, written, query_step, hop_steps, depths)
    scores.control, scores.stability, scores.control_bar   # -> verdict.judge_tco(scores, twin_scores)

which is ``two_way_distractors`` -> ``decode_binding`` (probes at the query) -> ``summarise`` (the depth window,
the baselines); ``control_and_stability(decoding, ...)`` gives both numbers at every depth.
``score_token_states(states, written)`` does all of it for token states, averaged over the depths after 0.42.

The stability tested is that of the *query's* code at the hop tokens; the digit itself (step 0) is not used,
since a probe fitted on the value token reads the token's identity, not a bound object.
``synthetic.planted_binding`` makes states with a known answer (a stable class code, a code that changes between
steps, only the bag of values, only the first value) for the tests and ``calibration``.
Introduced in: chapter 6 (the embedded models), chapter 7 (the ladder), chapter 8 (the criterion).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from ..errors import InvalidInputError
from .classes import group_folds
from .paper import PAPER_GAMMA_C
from .resampling import Z95, wilson_interval
from .ridge_probe import Probe, fit_probe

N_FOLDS = 5
TWO_WAY_CHANCE = 0.5  # the two-way choice between the bound value and one other value


# --- intervals and baselines ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rate:
    """An accuracy over ``n`` programs with a 95 % Wilson interval (programs are the independent units)."""

    accuracy: float
    ci: tuple[float, float]
    n: int


def program_rate(scores: np.ndarray, items: np.ndarray) -> Rate:
    """Mean over programs of each program's mean token score (NaN tokens ignored), with a Wilson interval."""
    scores, items = np.asarray(scores, dtype=np.float64), np.asarray(items)
    keep = np.isfinite(scores)
    if not keep.any():
        return Rate(float("nan"), (float("nan"), float("nan")), 0)
    ids, inverse = np.unique(items[keep], return_inverse=True)
    per_program = np.bincount(inverse, scores[keep]) / np.bincount(inverse)
    p = float(np.clip(per_program.mean(), 0.0, 1.0))
    return Rate(p, wilson_interval(p, len(ids), Z95), len(ids))


def _facts(written: Sequence[Sequence[int]]) -> list[tuple[dict[int, int], dict[int, int]]]:
    """Per program: (first writing position of each value, how often each value is written)."""
    out = []
    for w in written:
        first: dict[int, int] = {}
        count: dict[int, int] = {}
        for i, v in enumerate(w):
            first.setdefault(v, i)
            count[v] = count.get(v, 0) + 1
        out.append((first, count))
    return out


def _check(labels, items, written) -> tuple[np.ndarray, np.ndarray, list[tuple[int, ...]]]:
    labels, items = np.asarray(labels).astype(int), np.asarray(items).astype(int)
    if labels.shape != items.shape or labels.ndim != 1:
        raise InvalidInputError(
            f"labels and items need the same 1-d shape, got {labels.shape}, {items.shape}."
        )
    written = [tuple(int(v) for v in w) for w in written]
    if len(items) and (items.min() < 0 or items.max() >= len(written)):
        raise InvalidInputError(
            f"items must index the programs of `written` (0..{len(written) - 1}), got "
            f"{items.min()}..{items.max()}."
        )
    if any(len(w) == 0 for w in written):
        raise InvalidInputError("Every program must write at least one value.")
    return labels, items, written


def two_way_distractors(labels, items, written, steps=None, seed: int = 0) -> np.ndarray:
    """For each token, another value written in its program (``-1`` where the program writes no other).

    The pairs are balanced by order within each step (``steps``; default one group): tokens whose program
    allows only one order (every other value written after the bound value, or every one before) take it, and
    the others are assigned, in a seeded order, to whichever order is short, so the bound value is written
    first in as close to half the pairs as the programs allow; a decoder that answers by position (the first or
    the last value written) then scores about 0.5 (``first_value_baseline`` says exactly how much). On each
    side a value written as often as the bound value is preferred, so the bag of values
    (``bag_of_values_baseline``) cannot tell the pair apart either, where the program allows.
    """
    labels, items, written = _check(labels, items, written)
    steps = np.zeros(len(labels), dtype=int) if steps is None else np.asarray(steps).astype(int)
    if steps.shape != labels.shape:
        raise InvalidInputError(f"steps needs one entry per token ({len(labels)}), got shape {steps.shape}.")
    facts = _facts(written)
    rng = np.random.default_rng(seed)
    out = np.full(len(labels), -1, dtype=np.int64)
    options: list[tuple[list[int], list[int]]] = []  # (distractors written after the label, before it)
    for y, p in zip(labels.tolist(), items.tolist()):
        first, count = facts[p]
        at, own = first.get(y, -1), count.get(y, 0)
        after = [v for v in first if v != y and first[v] > at]
        before = [v for v in first if v != y and first[v] < at]
        options.append(
            (
                [v for v in after if count[v] == own] or after,  # a value written as often, if there is one
                [v for v in before if count[v] == own] or before,
            )
        )
    for step in np.unique(steps):
        tokens = rng.permutation(np.flatnonzero(steps == step))
        counts = [0, 0]  # pairs with the label written first, second
        flexible = []
        for t in tokens:
            after, before = options[t]
            if after and before:
                flexible.append(t)
            elif after or before:
                side = 0 if after else 1
                out[t] = options[t][side][rng.integers(len(options[t][side]))]
                counts[side] += 1
        for t in flexible:
            side = int(counts[1] < counts[0]) if counts[0] != counts[1] else int(rng.integers(2))
            out[t] = options[t][side][rng.integers(len(options[t][side]))]
            counts[side] += 1
    return out


def bag_of_values_baseline(labels, items, written, distractors=None) -> Rate:
    """Accuracy of the best decoder that knows only the bag of values: which values the prompt writes and how
    often, not which variable holds which.

    Chains are exchangeable, so the bound value is a value written ``c`` times with probability proportional to
    ``c``; the decoder answers a most frequent value (ties broken at random). k-way (``distractors`` None): right
    with probability ``1 / #ties`` when the bound value is among the most frequent, else 0 (``1 / |values|``
    when every value is written once). Two-way: the more frequent of the pair, 0.5 on a tie (always 0.5 when the
    values are distinct).
    """
    labels, items, written = _check(labels, items, written)
    facts = _facts(written)
    scores = np.full(len(labels), np.nan)
    pairs = None if distractors is None else np.asarray(distractors).astype(int).tolist()
    for t, (y, p) in enumerate(zip(labels.tolist(), items.tolist())):
        count = facts[p][1]
        own = count.get(y, 0)
        if pairs is None:
            top = max(count.values())
            scores[t] = (own == top) / sum(c == top for c in count.values())
        elif pairs[t] >= 0:
            other = count[pairs[t]]
            scores[t] = 1.0 if own > other else 0.5 if own == other else 0.0
    return program_rate(scores, items)


def first_value_baseline(labels, items, written, distractors=None) -> Rate:
    """Accuracy of a decoder that answers the first value written (binding nothing).

    k-way: right when the bound value is the program's first value. Two-way: right when the bound value is
    written before its distractor.
    """
    labels, items, written = _check(labels, items, written)
    if distractors is None:
        scores = np.array([float(written[p][0] == y) for y, p in zip(labels.tolist(), items.tolist())])
        return program_rate(scores, items)
    facts = _facts(written)
    scores = np.full(len(labels), np.nan)
    for t, (y, p, v) in enumerate(zip(labels.tolist(), items.tolist(), np.asarray(distractors).tolist())):
        if v >= 0:
            first = facts[p][0]
            scores[t] = float(first.get(y, len(written[p])) < first[v])
    return program_rate(scores, items)


# --- the probe ---------------------------------------------------------------------------------------------


def program_folds(items, n_folds: int = N_FOLDS, seed: int = 0) -> np.ndarray:
    """Fold of each token, drawn by program: every token of a program lands in one fold (``classes.group_folds``)."""
    return group_folds(items, n_folds, seed)


def _hits(scores: np.ndarray, labels: np.ndarray, distractors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(two-way hits: 1, 0.5 on a tie, NaN without a distractor; k-way hits: 0/1) of ``scores`` ``(t, k)``."""
    rows = np.arange(len(labels))
    own = scores[rows, labels]
    other = scores[rows, np.maximum(distractors, 0)]
    two = np.where(own > other, 1.0, np.where(own == other, 0.5, 0.0))
    two = np.where(distractors >= 0, two, np.nan)
    return two, (np.argmax(scores, axis=1) == labels).astype(float)


@dataclass(frozen=True)
class Decoding:
    """Per-token hits of cross-fitted probes at every depth of ``depths``.

    ``within`` / ``within_kway``: the probe fitted on the other folds' tokens *of the token's own step*;
    ``transfer`` / ``transfer_kway``: the probe fitted on the other folds' tokens of ``fit_step``, applied to
    tokens of every step. Two-way hits are 1, 0 or 0.5 (a tie), NaN where a token has no distractor.
    """

    within: np.ndarray  # (n_tokens, n_depths); NaN at steps not in `within_steps`
    within_kway: np.ndarray
    transfer: np.ndarray  # (n_tokens, n_depths)
    transfer_kway: np.ndarray
    labels: np.ndarray
    steps: np.ndarray
    items: np.ndarray
    distractors: np.ndarray
    depths: np.ndarray  # the depth index of each column
    fit_step: int


def decode_binding(
    states: np.ndarray,
    labels,
    steps,
    items,
    distractors,
    fit_step: int,
    depths: Sequence[int] | None = None,
    within_steps: Sequence[int] | None = None,
    n_folds: int = N_FOLDS,
    seed: int = 0,
) -> Decoding:
    """Cross-fitted (by program) two-way and k-way decoding of each token's bound value, at every depth.

    ``states`` ``(n, n_depths, d)`` with each token's bound value ``labels``, reasoning ``steps``, program
    ``items`` and two-way ``distractors`` (``two_way_distractors``). ``within_steps`` (default: every step)
    limits the within-step probes; the transfer probe is always fitted at ``fit_step``.
    Introduced in: chapter 6.
    """
    states = np.asarray(states)
    if states.ndim != 3 or states.shape[0] < 2:
        raise InvalidInputError(f"states must be (n_tokens, n_depths, d), got shape {states.shape}.")
    n = states.shape[0]
    labels, steps = np.asarray(labels).astype(int), np.asarray(steps).astype(int)
    items, distractors = np.asarray(items), np.asarray(distractors).astype(int)
    for name, arr in (("labels", labels), ("steps", steps), ("items", items), ("distractors", distractors)):
        if arr.shape != (n,):
            raise InvalidInputError(f"{name} needs one entry per token ({n}), got shape {arr.shape}.")
    if not np.isfinite(states).all():
        raise InvalidInputError("states contain NaN or Inf: drop those tokens first.")
    if not np.any(steps == fit_step):
        raise InvalidInputError(
            f"No token at fit_step {fit_step}: choose one of {sorted(set(steps.tolist()))}."
        )
    depths = np.arange(states.shape[1]) if depths is None else np.asarray(depths, dtype=int)
    within_steps = np.unique(steps) if within_steps is None else np.asarray(within_steps, dtype=int)
    n_classes = int(max(labels.max(), distractors.max()) + 1)
    folds = program_folds(items, n_folds, seed)
    with threadpool_limits(1):  # many small solves: one BLAS thread each is fastest, and kind to shared cores
        return _decode(
            states, labels, steps, items, distractors, fit_step, depths, within_steps, n_classes, folds
        )


def _decode(states, labels, steps, items, distractors, fit_step, depths, within_steps, n_classes, folds):
    n, n_folds = states.shape[0], int(folds.max()) + 1
    shape = (n, len(depths))
    within, within_k = np.full(shape, np.nan), np.full(shape, np.nan)
    transfer, transfer_k = np.full(shape, np.nan), np.full(shape, np.nan)
    for fold in range(n_folds):
        test = folds == fold
        if not test.any():
            continue
        for column, depth in enumerate(depths):
            fitted: dict[int, Probe] = {}
            for step in sorted(set(within_steps.tolist()) | {fit_step}):
                train = ~test & (steps == step)
                if len(np.unique(labels[train])) < 2:
                    continue
                fitted[step] = fit_probe(states[train, depth], labels[train], n_classes)
                here = test & (steps == step)
                if step in within_steps and here.any():
                    two, kway = _hits(
                        fitted[step].scores(states[here, depth]), labels[here], distractors[here]
                    )
                    within[here, column], within_k[here, column] = two, kway
            if fit_step in fitted:
                scores = fitted[fit_step].scores(states[test, depth])
                transfer[test, column], transfer_k[test, column] = _hits(
                    scores, labels[test], distractors[test]
                )
    return Decoding(
        within, within_k, transfer, transfer_k, labels, steps, items, distractors, depths, int(fit_step)
    )


# --- the numbers the criterion reads ------------------------------------------------------------------------


@dataclass(frozen=True)
class TCOScores:
    """What ``verdict.judge_tco`` reads, for one model: every number over programs, with Wilson intervals.

    ``control``: two-way accuracy at the query of the probe fitted there (within one step); ``stability``: the
    same probe at the hop tokens (steps strictly between the value and the query); each beside the bag-of-values
    and first-value decoders on the *same* tokens and pairs, and the k-way version of each for reference.
    """

    control: Rate
    stability: Rate
    control_bag: Rate
    control_first: Rate
    stability_bag: Rate
    stability_first: Rate
    control_kway: Rate
    stability_kway: Rate
    control_kway_bag: Rate
    control_kway_first: Rate
    depths: tuple[int, ...]
    best_depth_control: float  # the best single depth of the control (reported only: chosen after looking)

    @property
    def control_bar(self) -> float:
        """The strongest decoder that binds nothing, on the query's pairs: max(bag of values, first value)."""
        return max(self.control_bag.accuracy, self.control_first.accuracy)

    @property
    def stability_bar(self) -> float:
        """The same on the hop tokens' pairs."""
        return max(self.stability_bag.accuracy, self.stability_first.accuracy)

    def to_dict(self) -> dict:
        """Plain JSON: every rate as ``{"accuracy", "ci", "n"}``."""
        out = {}
        for name, value in self.__dict__.items():
            out[name] = (
                {"accuracy": value.accuracy, "ci": list(value.ci), "n": value.n}
                if isinstance(value, Rate)
                else list(value)
                if isinstance(value, tuple)
                else value
            )
        return out

    @classmethod
    def from_dict(cls, data: dict) -> TCOScores:
        """The inverse of ``to_dict``."""
        kwargs = {}
        for name in cls.__dataclass_fields__:
            value = data[name]
            if isinstance(value, dict):
                kwargs[name] = Rate(
                    float(value["accuracy"]), tuple(float(c) for c in value["ci"]), int(value["n"])
                )
            elif isinstance(value, list):
                kwargs[name] = tuple(int(v) for v in value)
            else:
                kwargs[name] = float(value)
        return cls(**kwargs)


def _window_scores(hits: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Each token's mean hit over the chosen depth columns (NaN where the token has none)."""
    part = hits[:, columns]
    counts = np.sum(np.isfinite(part), axis=1)
    total = np.nansum(part, axis=1)
    return np.where(counts > 0, total / np.maximum(counts, 1), np.nan)


def summarise(
    decoding: Decoding,
    written,
    query_step: int,
    hop_steps: Sequence[int],
    depths: Sequence[int] | None = None,
) -> TCOScores:
    """The control at ``query_step`` and stability at ``hop_steps``, averaged over ``depths`` (default: all
    decoded depths; the window is fixed before looking, never picked by its result), with the baselines."""
    d = decoding
    if d.fit_step != query_step:
        raise InvalidInputError(
            f"The probe was fitted at step {d.fit_step}, not at the query step {query_step}."
        )
    wanted = d.depths if depths is None else np.asarray(depths, dtype=int)
    columns = np.flatnonzero(np.isin(d.depths, wanted))
    if len(columns) == 0:
        raise InvalidInputError(f"None of the depths {list(wanted)} was decoded (decoded: {list(d.depths)}).")
    query = d.steps == query_step
    hops = np.isin(d.steps, list(hop_steps))
    if not query.any() or not hops.any():
        raise InvalidInputError("Need tokens at the query step and at one hop step at least.")

    def rate(hits, mask):
        return program_rate(_window_scores(hits[mask], columns), d.items[mask])

    def baselines(mask, pairs):
        args = (d.labels[mask], d.items[mask], written)
        return bag_of_values_baseline(*args, pairs), first_value_baseline(*args, pairs)

    control_bag, control_first = baselines(query, d.distractors[query])
    stability_bag, stability_first = baselines(hops, d.distractors[hops])
    kway_bag, kway_first = baselines(query, None)
    per_depth = np.array(
        [program_rate(d.within[query, c], d.items[query]).accuracy for c in columns], dtype=np.float64
    )
    return TCOScores(
        control=rate(d.within, query),
        stability=rate(d.transfer, hops),
        control_bag=control_bag,
        control_first=control_first,
        stability_bag=stability_bag,
        stability_first=stability_first,
        control_kway=rate(d.within_kway, query),
        stability_kway=rate(d.transfer_kway, hops),
        control_kway_bag=kway_bag,
        control_kway_first=kway_first,
        depths=tuple(int(x) for x in d.depths[columns]),
        best_depth_control=float(np.nanmax(per_depth)) if np.isfinite(per_depth).any() else float("nan"),
    )


def control_and_stability(
    decoding: Decoding, query_step: int, hop_steps: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """(control, stability) at each decoded depth: two-way accuracy over programs at the query (within step) and
    at the hop tokens (the query's probe)."""
    d = decoding
    query, hops = d.steps == query_step, np.isin(d.steps, list(hop_steps))
    control = [program_rate(d.within[query, c], d.items[query]).accuracy for c in range(len(d.depths))]
    stability = [program_rate(d.transfer[hops, c], d.items[hops]).accuracy for c in range(len(d.depths))]
    return np.array(control), np.array(stability)


def score_binding(
    states: np.ndarray,
    labels,
    steps,
    items,
    written,
    query_step: int,
    hop_steps: Sequence[int],
    depths: Sequence[int] | None = None,
    n_folds: int = N_FOLDS,
    seed: int = 0,
) -> tuple[TCOScores, Decoding]:
    """``two_way_distractors`` -> ``decode_binding`` (within-step probes at the query only) -> ``summarise``."""
    pairs = two_way_distractors(labels, items, written, steps=steps, seed=seed)
    decoding = decode_binding(
        states, labels, steps, items, pairs, query_step, depths=depths, within_steps=[query_step],
        n_folds=n_folds, seed=seed,
    )  # fmt: skip
    return summarise(decoding, written, query_step, hop_steps), decoding


def score_token_states(
    states,
    written,
    gamma: np.ndarray | None = None,
    split: float = PAPER_GAMMA_C,
    query_step: int | None = None,
    seed: int = 0,
) -> TCOScores:
    """``score_binding`` on token states (``states``, ``labels``, ``steps``, ``items``, as from
    ``capturing.states.token_states``): the query is the last step (or ``query_step``), the hops the steps strictly
    between the value (step 0) and the query; ``written[i]`` the values program ``i`` writes, in order. Averaged
    over the interior depths after ``split`` (no depth is chosen by its result); ``gamma`` defaults to
    ``l / L``. What ``verdict.judge_tco`` reads."""
    from .spectral_contrasts import depth_windows

    n_depths = np.asarray(states.states).shape[1]
    gamma = np.arange(n_depths) / max(n_depths - 1, 1) if gamma is None else np.asarray(gamma, dtype=float)
    _, after = depth_windows(gamma, split)
    if len(after) == 0:
        raise InvalidInputError(f"No interior depth after gamma = {split}.")
    steps = np.asarray(states.steps)
    query = int(steps.max()) if query_step is None else int(query_step)
    scores, _ = score_binding(
        states.states, states.labels, steps, states.items, written, query, range(1, query), after, seed=seed
    )
    return scores


def written_values(items) -> list[list[int]]:
    """The values of each ``prompts.reasoning`` item in writing order: the labels of its step-0 targets."""
    return [[t.label for t in sorted(item.targets, key=lambda t: t.start) if t.step == 0] for item in items]


# --- planted binding states ------------------------------------------------------------------------------------
