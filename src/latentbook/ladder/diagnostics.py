"""Measure a ladder model: its capability and every diagnostic of the paper, beside its untrained null.

1. ``probe_set(spec)``: held-out programs (names never seen in training) with their tokens of interest:
   the right-hand side of each statement of the queried chain (step 0 = the value's assignment
   ``a = 7``, step ``j`` = the ``j``-th later hop ``k = a``) and the query (step ``max_hops``);
2. ``measure_model(loaded, spec)``: capability (held-out accuracy by hop count, Wilson intervals) and the
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

3. ``MEASURING_MODULES`` and ``diagnostics_hash()``: the code a measurement runs; a stored measurement is current
   while the hash it records equals ``diagnostics_hash()``. The correlations across the ladder are
   ``ladder.rank_correlation``'s.

Introduced in: chapter 7.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.resampling import Z95, recentred_interval, wilson_interval
from .task import Example, TaskSpec, generate


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


# Every module of the package whose code runs when a ladder model is loaded and measured (``measure_model``;
# tests/test_ladder.py traces a measurement of a ten-layer model and checks that none is missing).
MEASURING_MODULES = (
    "latentbook._files",
    "latentbook.analysis.bimodality",
    "latentbook.analysis.bulk_fit",
    "latentbook.analysis.classes",
    "latentbook.analysis.flow",
    "latentbook.analysis.mp_law",
    "latentbook.analysis.omega",
    "latentbook.analysis.omega_profiles",
    "latentbook.analysis.paper",
    "latentbook.analysis.resampling",
    "latentbook.analysis.ridge_probe",
    "latentbook.analysis.standardisation",
    "latentbook.analysis.tco",
    "latentbook.analysis.transition",
    "latentbook.capturing.accumulators",
    "latentbook.capturing.capture",
    "latentbook.capturing.hooks",
    "latentbook.capturing.results",
    "latentbook.capturing.settings",
    "latentbook.capturing.states",
    "latentbook.ladder",
    "latentbook.ladder.diagnostics",
    "latentbook.ladder.folders",
    "latentbook.ladder.store",
    "latentbook.ladder.task",
    "latentbook.ladder.train",
    "latentbook.models.anatomy",
    "latentbook.models.weights",
    "latentbook.models.zoo",
    "latentbook.prompts",
    "latentbook.prompts.reasoning",
)


def diagnostics_hash() -> str:
    """``_code_hash.modules_hash`` of ``MEASURING_MODULES`` (docstrings and comments left out): a model in
    ``measurements.json`` was measured by the current code while its ``"measured_by"`` equals this."""
    from .._code_hash import modules_hash

    return modules_hash(MEASURING_MODULES)
