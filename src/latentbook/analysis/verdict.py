"""The verdict: every claim of PAPER.md against every model run, each decided by an explicit, tested criterion.

Usage:

1. ``runs = {label: measure(cap) for label, cap in captures.items()}`` (label ``"random:<name>"`` marks the
   random-weight twin of ``<name>``; its numbers are the null the trained model must beat);
2. optionally ``tco = {label: tco_summary(token_states, written)}`` for class stability (``analysis.tco``);
3. ``table = verdict_table(runs, tco, results_dir=find_results_dir())``: one row per claim and model run, plus
   rows for every capture file in ``results/`` (from ``latentbook capture`` on a GPU box, picked up
   automatically), the ladder's rows (``latentbook.ladder.verdict_rows``, chapter 7) and "not testable here"
   rows, with the command that would test them, for what needs 1.5B-30B weights.

Columns of a row: ``claim``, ``model``, ``run`` ("trained", "null: random weights", "null: shuffled words",
"results file", "not run"), ``parameters``, ``measured`` (in words), ``value``, ``ci_low``, ``ci_high`` (95 %),
``paper`` (the paper's number or statement), ``verdict``, ``reason`` and ``command``.

Verdicts (``VERDICTS``): "holds", "does not hold", "inconclusive", "not testable here", "not yet run".
"Twin" below is the random-weight model of the same architecture; a trained model's effect counts only when it
beats the twin's (a diagnostic the null model also passes is not evidence of learning). Nulls are judged by the
same criterion without a twin, so the table shows whether the null passes too.

Criteria (``split`` = the paper's ``gamma_c`` 0.42; "interior" = depths other than the embedding and the last):

- ``critical_depth``: ``transition.critical_depth`` (interior depths, a two-line jump against smooth nulls and a
  kink) finds a transition of at least ``MIN_TRANSITION`` and its whole 95 % interval for ``gamma_c`` lies inside
  ``0.42 +- GAMMA_C_TOLERANCE`` (wholly outside: does not hold; else inconclusive). Needs ``MIN_DEPTHS`` depths.
- ``omega_jump`` (and ``omega_jump_cleaned``, first position and ``K_MASSIVE`` coordinates removed): the same fit of
  ``m - m_perm`` (the excess over the coordinate-permutation null, ``omega.excess_profile``) has a jump whose
  interval lies above ``min_jump(d)`` (half the paper's 0.69 -> 0.90, mapped to the width) and above the twin's by
  as much.
- ``stays_liquid`` (and ``stays_liquid_cleaned``; models below ``SMALL_MODEL`` parameters): the interval of the
  highest interior ``m(gamma)`` lies below ``solid_threshold(d)``; "does not hold" when it lies above.
- ``bimodality``: ``judge_bimodality``: bimodal (three tests, prompt clustering and Holm across depths) at an
  interior depth after the split where neither the permutation null nor shuffled words are anything but unimodal,
  and the twin bimodal nowhere.
- ``spectral_concentration`` / ``effective_rank``: the participation ratio / effective rank after the split over
  before (``layer_spectra.pr_contrast`` / ``effective_rank_contrast``, prompt jackknife) has an interval below 1
  and below the twin's interval.
- ``attention_cooling``: ``cooling.judge_cooling``: the interval of the normalised attention entropy after the
  split over before lies below 0.9, and so does that of the ratio to the twin's, each row's sink key removed
  and the rest renormalised (older captures keep it in: said in the reason).
- ``mp_spikes``: the median spike count after the split (``layer_spectra.spike_contrast``, prompt bootstrap) lies
  above the count before and the twin's after, every MP fit settled (an unsettled count is a lower bound:
  inconclusive).
- ``transverse_contraction``: ``contraction.judge_transverse_gain`` of the blocks' transverse gains measured by
  Jacobian-vector products after the split (``capturing.jacobian``, a subspace held fixed across the window):
  the interval of ``q`` lies below ``contraction.MAX_Q`` and below the twin's interval (Theorem 6.1).
- ``tco``: ``judge_tco`` on ``analysis.tco``'s two-way decoding of the bound value (its value against another
  value written in the same prompt, chance 0.5), averaged over the interior depths after the split, Wilson
  intervals over programs. The *positive control* first: a probe fitted at the query (cross-fitted by program)
  must decode the value there with an interval above the strongest decoder that binds nothing (bag of values,
  first value written) by ``TCO_MARGIN``, else "inconclusive". Then *stability*: the same probe at the hop
  tokens must clear that bar by as much, and the twin's stability interval; else "does not hold".
- ``scaling``: over trained runs with a transition, the jump grows strictly with size and the largest model's
  interval lies above the smallest's; "not testable here" when no run reaches ``SMALL_MODEL`` parameters and
  fewer than two runs have a transition.
- ``reasoning_diagnostics``: rows of the ladder experiment (chapter 7), or one "not yet run" row; the ladder also
  gives one ``tco`` row per trained rung (at its last depth, judged against its untrained initialisation).

Introduced in: chapter 8.
"""

from __future__ import annotations

import importlib
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CaptureFileError, InvalidInputError
from . import omega, transition
from .tco import TCOScores

if TYPE_CHECKING:
    import pandas as pd

    from ..capturing.results import Capture

PAPER_GAMMA_C = 0.42
GAMMA_C_TOLERANCE = 0.10
PAPER_M_LIQUID, PAPER_M_SOLID = 0.69, 0.90  # at the paper's width, omega.PAPER_WIDTH
SOLID_THRESHOLD = (PAPER_M_LIQUID + PAPER_M_SOLID) / 2
MIN_JUMP = (PAPER_M_SOLID - PAPER_M_LIQUID) / 2
MIN_TRANSITION = (PAPER_M_SOLID - PAPER_M_LIQUID) / 4  # smaller steps are not the claimed transition
SMALL_MODEL = 1.5e9
TCO_MARGIN = 0.05  # how far a TCO interval's lower end must clear the strongest baseline that binds nothing
K_MASSIVE = 4  # coordinates removed as massive activations in the cleaned rows (chapter 3)
MIN_DEPTHS = transition.MIN_FITTED + sum(transition.SKIP)
SPIKE_BOOT = 10  # prompt-bootstrap draws of the spike counts (each refits the MP law at every depth)
ERANK_GROUPS = 10  # groups of prompts left out in turn for the effective rank's jackknife
VERDICTS = ("holds", "does not hold", "inconclusive", "not testable here", "not yet run")

# The paper's scale, for the commands of "not testable here" rows (Hugging Face ids; weights needed locally).
LARGE_MODELS = {"Qwen/Qwen2.5-1.5B": 1.5e9, "Qwen/Qwen2.5-7B": 7.6e9, "Qwen/Qwen2.5-32B": 32.8e9}


@dataclass(frozen=True)
class Claim:
    key: str
    statement: str
    paper: str


CLAIMS: dict[str, Claim] = {
    c.key: c
    for c in [
        Claim("critical_depth", "m(gamma) jumps at a critical depth gamma_c ~ 0.42", "gamma_c ~ 0.42"),
        Claim(
            "omega_jump",
            "Omega rises sharply at gamma_c, e.g. ~0.69 -> ~0.90 (30B); judged on the excess over the "
            "coordinate-permutation null",
            "jump ~0.21",
        ),
        Claim(
            "omega_jump_cleaned",
            "the same jump with the first position and the massive coordinates removed",
            "jump ~0.21",
        ),
        Claim(
            "stays_liquid",
            "small models never cross the practical threshold and stay liquid",
            f"small (< 1.5B): max m below the solid level (threshold {SOLID_THRESHOLD:.3f} at d = 5120)",
        ),
        Claim(
            "stays_liquid_cleaned",
            "the same with the first position and the massive coordinates removed",
            f"small (< 1.5B): max m below the solid level (threshold {SOLID_THRESHOLD:.3f} at d = 5120)",
        ),
        Claim(
            "bimodality", "capable models: the Omega distribution becomes bimodal", "bimodal after gamma_c"
        ),
        Claim(
            "spectral_concentration",
            "after gamma_c: lower effective rank and participation ratio",
            "PR after / before < 1",
        ),
        Claim(
            "effective_rank",
            "after gamma_c: lower effective rank (Roy & Vetterli's exp of the spectral entropy)",
            "effective rank after / before < 1",
        ),
        Claim(
            "mp_spikes",
            "after gamma_c: spectral tails leave the MP bulk (spikes)",
            "more spikes after gamma_c",
        ),
        Claim(
            "transverse_contraction",
            "TCOs: the transverse subspace contracts (Theorem 6.1)",
            "q < 1 per layer",
        ),
        Claim(
            "attention_cooling",
            "attention cools with depth: its entropy falls (chapter 2)",
            "entropy after / before < 1",
        ),
        Claim("tco", "TCOs: class identity is stable across reasoning steps", "class stability above chance"),
        Claim("scaling", "the amplitude of the transition grows with model size", "grows with size"),
        Claim(
            "reasoning_diagnostics",
            "gamma_c and spectral gaps are diagnostics of reasoning capacity",
            "diagnostics track capability",
        ),
    ]
}
COLUMNS = (
    "claim",
    "model",
    "run",
    "parameters",
    "measured",
    "value",
    "ci_low",
    "ci_high",
    "paper",
    "verdict",
    "reason",
    "command",
)


@dataclass(frozen=True)
class Row:
    """One claim for one model run. ``value`` and its interval are NaN where a claim has no single number."""

    claim: str
    model: str
    run: str
    parameters: float
    measured: str
    value: float
    ci_low: float
    ci_high: float
    paper: str
    verdict: str
    reason: str
    command: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise InvalidInputError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}.")
        if self.claim not in CLAIMS:
            raise InvalidInputError(f"claim must be one of {sorted(CLAIMS)}, got {self.claim!r}.")


# --- sizes and commands ---------------------------------------------------------------------------------------

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([bm])(?![a-z])", re.IGNORECASE)


def n_parameters(cap: Capture) -> tuple[float, bool]:
    """Parameter count of the captured model and whether it is exact: the provenance's ``n_parameters`` (counted
    at capture), for older results files a size in the name (``135m``, ``1.5B``), else ``12 L d^2`` (approximate)."""
    if cap.provenance.get("n_parameters"):
        return float(cap.provenance["n_parameters"]), True
    base = cap.model_name.removeprefix("random:")
    match = _SIZE.search(base.split("/")[-1])
    if match:
        return float(match.group(1)) * (1e9 if match.group(2).lower() == "b" else 1e6), True
    return 12.0 * cap.n_layers * cap.d_model**2, False


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", name.split("/")[-1].lower()).strip("-")


def capture_command(model_name: str) -> str:
    """The ``latentbook capture`` command that writes a results file at the book's settings."""
    return (
        f"latentbook capture {model_name} --prompts general --max-prompts 128 --max-length 128 "
        f"--out results/{_slug(model_name)}.safetensors"
    )


def _fmt_ci(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]"


# --- measurements --------------------------------------------------------------------------------------------


@dataclass
class Measurements:
    """Everything the criteria read from one capture (``measure``)."""

    label: str
    model_name: str
    parameters: float
    parameters_exact: bool
    n_depths: int
    d_model: int
    transition: Any  # transition.Transition of m(gamma), or None with fewer than MIN_DEPTHS depths
    excess: Any  # transition.Transition of m - m_perm (omega.excess_profile), or None
    excess_clean: Any  # the same with the first position and K_MASSIVE coordinates removed, or None
    m_peak: float  # the highest m over the fitted (interior) depths
    m_peak_ci: tuple[float, float]
    m_peak_gamma: float
    m_peak_clean: float  # the highest m of confounds.cleaned_profile over the same depths
    m_peak_clean_ci: tuple[float, float]
    m_peak_clean_gamma: float
    bimodal: list  # omega.Bimodality at each interior depth after the split (first position removed)
    bimodal_perm: list  # the same of the coordinate-permuted vector sample (omega.permutation_null)
    after_gammas: list[float]
    pr: Any  # layer_spectra.Contrast of the participation ratio (jackknife over prompts); None: not measured
    erank: Any  # layer_spectra.Contrast of the effective rank; None: not measured
    spikes: Any  # layer_spectra.SpikeContrast (median counts, prompt-bootstrap intervals); None: not measured
    contraction: Any  # contraction.GainFit of the Jacobian-vector gains, or None when not measured
    cooling: Any = None  # cooling.CoolingSummary, or None without attention statistics
    split: float = PAPER_GAMMA_C
    extra: dict = field(default_factory=dict)

    @property
    def n_bimodal_after(self) -> int:
        return sum(b.verdict == "bimodal" for b in omega.holm_adjusted(self.bimodal))


def solid_threshold(d: int) -> float:
    """The paper's solid threshold (midway between 0.69 and 0.90 at d = 5120) at width ``d``, same Hoyer
    sparseness (``omega.level_at_width``)."""
    return omega.level_at_width(SOLID_THRESHOLD, d)


def min_jump(d: int) -> float:
    """Half the paper's jump (0.69 -> 0.90 at d = 5120) at width ``d``, same Hoyer sparseness."""
    return omega.level_at_width(PAPER_M_SOLID, d) / 2 - omega.level_at_width(PAPER_M_LIQUID, d) / 2


def _peak(prof, start: int, stop: int) -> tuple[float, tuple[float, float], float]:
    layer = start + int(np.argmax(prof.m[start:stop]))
    low, high = max(float(prof.low[layer]), 0.0), min(float(prof.high[layer]), 1.0)
    return float(prof.m[layer]), (low, high), float(prof.gamma[layer])


def measure(
    cap: Capture,
    label: str | None = None,
    split: float = PAPER_GAMMA_C,
    n_boot: int = 200,
    seed: int = 0,
    attention: Capture | None = None,
    spectra: bool = True,
    gains: Any = None,
) -> Measurements:
    """Measure every capture-based claim on ``cap`` (see the module docstring for what each number is);
    ``attention``: a capture of the same run with attention statistics, for the cooling claim (``cap`` itself
    when it has them); ``spectra=False`` skips the spectral claims (the costly part: a null run measured only
    for bimodality, such as shuffled words); ``gains``: the run's ``capturing.jacobian.TransverseGains`` (a
    Jacobian-vector measurement needs the model, so a capture alone leaves the contraction claim untested)."""
    from . import confounds, contraction, cooling, layer_spectra

    if attention is None and getattr(cap, "attention", None) is not None:
        attention = cap

    parameters, exact = n_parameters(cap)
    testable = transition.is_testable(cap.n_depths)

    def fit(prof):
        return transition.critical_depth(
            prof.gamma, prof.m, draws=prof.draws, n_boot=n_boot, seed=seed, min_amplitude=MIN_TRANSITION
        )

    prof = omega.profile(cap, n_boot=max(n_boot, 100), seed=seed)
    excess = omega.excess_profile(cap, n_boot=max(n_boot, 100), seed=seed)
    excess_clean = omega.excess_profile(
        cap, n_boot=max(n_boot, 100), seed=seed, drop_first=True, drop_top_dims=K_MASSIVE
    )
    clean = confounds.cleaned_profile(cap, k=K_MASSIVE, n_boot=max(n_boot, 100), seed=seed)
    start, stop = transition.SKIP[0], cap.n_depths - transition.SKIP[1]
    if stop <= start:
        start, stop = 0, cap.n_depths
    m_peak, m_peak_ci, m_peak_gamma = _peak(prof, start, stop)
    clean_peak, clean_ci, clean_gamma = _peak(clean, start, stop)

    _, after = layer_spectra.depth_windows(cap.gamma, split)
    keep = cap.vectors.positions > 0
    bimodal, bimodal_perm = [], []
    for layer in cap.depths[after].tolist():  # the depths after the split (positions -> depths held)
        values, ids = omega.samples(cap, layer, drop_first=True)
        bimodal.append(omega.bimodality(values, seed=seed, prompt_ids=ids))
        permuted = omega.permutation_null(cap.token_vectors(layer).astype(np.float64)[keep], seed + layer)
        bimodal_perm.append(omega.bimodality(permuted, seed=seed, prompt_ids=cap.vectors.prompt_ids[keep]))

    spikes = pr = erank = None
    if spectra:
        spikes = layer_spectra.spike_contrast(cap, split=split, n_boot=SPIKE_BOOT, seed=seed)
        pr = layer_spectra.pr_contrast(cap, split=split)
        erank = layer_spectra.effective_rank_contrast(cap, split=split, n_groups=ERANK_GROUPS)
    contracted = contraction.transverse_gain(gains, seed=seed) if gains is not None else None
    return Measurements(
        label=label or cap.model_name,
        model_name=cap.model_name,
        parameters=parameters,
        parameters_exact=exact,
        n_depths=cap.n_depths,
        d_model=cap.d_model,
        transition=fit(prof) if testable else None,
        excess=fit(excess) if testable else None,
        excess_clean=fit(excess_clean) if testable else None,
        m_peak=m_peak,
        m_peak_ci=m_peak_ci,
        m_peak_gamma=m_peak_gamma,
        m_peak_clean=clean_peak,
        m_peak_clean_ci=clean_ci,
        m_peak_clean_gamma=clean_gamma,
        bimodal=bimodal,
        bimodal_perm=bimodal_perm,
        after_gammas=[float(cap.gamma[layer]) for layer in after],
        pr=pr,
        erank=erank,
        spikes=spikes,
        contraction=contracted,
        cooling=cooling.cooling_summary(attention, split=split, seed=seed) if attention is not None else None,
        split=split,
    )


TCOSummary = TCOScores  # what ``judge_tco`` reads: ``analysis.tco.TCOScores`` (control, stability, baselines)


def wilson_interval(p: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a proportion ``p`` observed on ``n`` independent units."""
    if n < 1 or not 0 <= p <= 1:
        raise InvalidInputError(f"Need n >= 1 and 0 <= p <= 1, got n={n!r}, p={p!r}.")
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def tco_summary(
    states,
    written,
    gamma: np.ndarray | None = None,
    split: float = PAPER_GAMMA_C,
    query_step: int | None = None,
    seed: int = 0,
) -> TCOSummary:
    """``analysis.tco.score_binding`` on token states (``states``, ``labels``, ``steps``, ``items``, as from
    ``capturing.states.token_states``): the query is the last step (or ``query_step``), the hops the steps strictly
    between the value (step 0) and the query; ``written[i]`` the values program ``i`` writes, in order. Averaged
    over the interior depths after ``split`` (no depth is chosen by its result); ``gamma`` defaults to
    ``l / L``."""
    from .layer_spectra import depth_windows
    from .tco import score_binding

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


# --- criteria: each a pure function of numbers, tested on inputs with a known answer -----------------------


def judge_critical_depth(trans, n_depths: int) -> tuple[str, str]:
    """Holds when there is a transition (``transition.critical_depth``, jump >= ``MIN_TRANSITION``) and its whole
    interval lies inside ``0.42 +- GAMMA_C_TOLERANCE`` (an equivalence test: imprecision cannot hold); does not
    hold when there is none or its interval lies wholly outside; else inconclusive."""
    if trans is None:
        return "not testable here", (
            f"{n_depths} depths: the fit needs {MIN_DEPTHS} ({transition.MIN_FITTED} after the "
            f"{sum(transition.SKIP)} edge depths)"
        )
    if not trans.has_transition:
        return "does not hold", f"no transition: {trans.reason}"
    low, high = trans.ci
    window = (PAPER_GAMMA_C - GAMMA_C_TOLERANCE, PAPER_GAMMA_C + GAMMA_C_TOLERANCE)
    found = f"a transition at gamma_c = {trans.gamma_c:.3f} {_fmt_ci(low, high)}"
    if window[0] <= low and high <= window[1]:
        return "holds", f"{found}, inside {PAPER_GAMMA_C} +- {GAMMA_C_TOLERANCE}"
    if high < window[0] or low > window[1]:
        return "does not hold", f"{found}, outside {PAPER_GAMMA_C} +- {GAMMA_C_TOLERANCE}"
    return "inconclusive", f"{found}: the interval is not inside {PAPER_GAMMA_C} +- {GAMMA_C_TOLERANCE}"


def judge_jump(trans, twin_trans=None, min_jump: float = MIN_JUMP) -> tuple[str, str]:
    """Holds when there is a transition whose jump's interval lies above ``min_jump`` and, by ``min_jump`` too,
    above the twin's (what training adds must itself be the effect: a twin that jumps as much leaves nothing)."""
    if trans is None:
        return "not testable here", f"fewer than {MIN_DEPTHS} depths: no transition fit"
    if not trans.has_transition:
        return "does not hold", f"no transition to have a jump: {trans.reason}"
    low, high = trans.amplitude_ci
    if low < min_jump:
        return (
            "does not hold",
            f"jump {trans.amplitude:+.3f} {_fmt_ci(low, high)} is not above {min_jump:.3f}",
        )
    if twin_trans is not None and low - max(twin_trans.amplitude_ci[1], 0.0) < min_jump:
        return "does not hold", (
            f"jump {_fmt_ci(low, high)} does not exceed the random twin's {_fmt_ci(*twin_trans.amplitude_ci)} "
            f"by {min_jump:.3f}"
        )
    return "holds", f"jump {trans.amplitude:+.3f} {_fmt_ci(low, high)} >= {min_jump:.3f}"


def judge_liquid(m_peak: float, ci: tuple[float, float], gamma: float, d: int) -> tuple[str, str]:
    """Holds when the interval of the highest interior ``m`` lies below ``solid_threshold(d)``; does not hold
    when it lies above; else inconclusive."""
    threshold = solid_threshold(d)
    where = f"highest interior m = {m_peak:.3f} {_fmt_ci(*ci)} at gamma = {gamma:.2f}"
    if ci[1] < threshold:
        return "holds", f"{where}, below the threshold {threshold:.3f} at d = {d}"
    if ci[0] >= threshold:
        return "does not hold", f"{where} crosses the threshold {threshold:.3f} at d = {d}"
    return "inconclusive", f"{where}: its interval straddles {threshold:.3f} (d = {d})"


def judge_bimodality(real: list, permuted: list, shuffled: list | None = None, twin: list | None = None):
    """``omega.Bimodality`` at the interior depths after the split of a run and of its nulls (same depths).

    Holds when the run is bimodal (all three tests, the dip's p-value Holm-adjusted across the depths and
    corrected for prompt clustering) at one depth or more where neither the coordinate-permutation null nor the
    shuffled-words run is anything but unimodal (per depth, unadjusted, one vote enough: a null gets every
    chance to explain the modes), and the random twin is bimodal nowhere. Returns (verdict, reason).
    """
    if not real:
        return "not testable here", "no interior depth after the split"
    bimodal = [b.verdict == "bimodal" for b in omega.holm_adjusted(real)]

    def null_at(results: list | None, i: int) -> bool:
        return results is not None and results[i].verdict != "unimodal"

    excess = [i for i, b in enumerate(bimodal) if b and not null_at(permuted, i) and not null_at(shuffled, i)]
    found = f"bimodal at {sum(bimodal)} of {len(real)} interior depths after gamma = {PAPER_GAMMA_C} (Holm)"
    if not any(bimodal):
        return "does not hold", found + " (first position removed; all three tests must agree)"
    if not excess:
        return "does not hold", found + ", where the permutation null or shuffled words are bimodal too"
    n_twin = sum(b.verdict == "bimodal" for b in twin) if twin is not None else 0
    if n_twin:
        return "does not hold", found + f", but the random twin is bimodal at {n_twin} too"
    return "holds", found + f"; {len(excess)} beyond both nulls"


def judge_concentration(contrast, twin=None, what: str = "PR") -> tuple[str, str]:
    low, high = contrast.ci
    found = f"{what} after / before = {contrast.ratio:.3f} {_fmt_ci(low, high)}"
    if high >= 1:
        return "does not hold", found + ": no significant drop"
    if twin is not None and high >= twin.ci[0]:
        return "does not hold", found + f": not below the random twin's {_fmt_ci(*twin.ci)}"
    return "holds", found


def judge_spikes(contrast, twin=None) -> tuple[str, str]:
    """Holds when every MP fit settled and the interval of the median spike count after the split lies above the
    one before it and above the twin's after it; an unsettled fit makes the counts lower bounds: inconclusive."""
    if contrast is None or not contrast.n_before or not contrast.n_after:
        return "not testable here", "no interior depths on both sides of the split"
    found = (
        f"median spikes {contrast.before:.0f} {_fmt_ci(*contrast.before_ci)} before, {contrast.after:.0f} "
        f"{_fmt_ci(*contrast.after_ci)} after gamma = {PAPER_GAMMA_C}"
    )
    if not contrast.settled:
        return "inconclusive", found + (
            f": {contrast.unsettled} fits of the sample and {contrast.unsettled_draws} of the draws did not "
            "settle, so the counts are lower bounds"
        )
    if contrast.after_ci[1] <= contrast.before_ci[0]:
        return "does not hold", found + ": fewer after than before"
    if contrast.after_ci[0] <= contrast.before_ci[1]:
        return "inconclusive", found + ": the intervals overlap"
    if twin is not None and contrast.after_ci[0] <= twin.after_ci[1]:
        return "does not hold", found + f": not above the random twin's {_fmt_ci(*twin.after_ci)}"
    return "holds", found


def judge_contraction(fit, twin=None) -> tuple[str, str]:
    """``contraction.judge_transverse_gain`` of the blocks' Jacobian-vector gains; not testable without them."""
    from .contraction import judge_transverse_gain

    if fit is None:
        return "not testable here", (
            "no Jacobian-vector measurement of this run: the block gains need the model "
            "(capturing.jacobian.transverse_gains), not only its capture"
        )
    return judge_transverse_gain(fit, twin)


def judge_tco(summary: TCOSummary, twin: TCOSummary | None = None) -> tuple[str, str]:
    """The positive control, then stability (``analysis.tco``; two-way choice, chance 0.5).

    Inconclusive when the control's interval (a probe fitted and tested at the query, cross-fitted by program)
    does not clear ``control_bar + TCO_MARGIN`` (the bag-of-values and first-value decoders on the same pairs):
    a model that cannot be read within a step says nothing about stability across steps. Does not hold when
    stability's interval (the query's probe at the hop tokens) does not clear ``stability_bar + TCO_MARGIN``, or
    lies at or below the top of the twin's stability interval. Holds otherwise.
    """
    c, s = summary.control, summary.stability
    found = (
        f"two-way decoding (chance 0.5, {c.n} programs): within the query step {c.accuracy:.3f} "
        f"{_fmt_ci(*c.ci)} against bag of values {summary.control_bag.accuracy:.3f} and first value "
        f"{summary.control_first.accuracy:.3f}; across steps (the query's probe at the hops) {s.accuracy:.3f} "
        f"{_fmt_ci(*s.ci)} against {summary.stability_bag.accuracy:.3f} and {summary.stability_first.accuracy:.3f}"
    )
    if not c.ci[0] > summary.control_bar + TCO_MARGIN:
        return "inconclusive", found + (
            f": the positive control fails (within-step decoding does not clear the baselines + {TCO_MARGIN}), "
            "so stability cannot be read"
        )
    if not s.ci[0] > summary.stability_bar + TCO_MARGIN:
        return "does not hold", found + f": stability does not clear the baselines + {TCO_MARGIN}"
    if twin is not None and not s.ci[0] > twin.stability.ci[1]:
        return (
            "does not hold",
            found + f": stability not above the random twin's {_fmt_ci(*twin.stability.ci)}",
        )
    return "holds", found


def judge_scaling(runs: Sequence[tuple[str, float, Any]]) -> tuple[str, str, float]:
    """``runs``: (label, parameters, transition or None) of trained models. Returns verdict, reason, Spearman."""
    from scipy.stats import spearmanr

    with_transition = sorted(
        ((p, label, t) for label, p, t in runs if t is not None and t.has_transition), key=lambda r: r[0]
    )
    largest = max((p for _, p, _ in runs), default=0.0)
    if len(with_transition) < 2:
        sizes = ", ".join(f"{label} ({p / 1e6:.0f}M)" for label, p, _ in runs)
        if largest < SMALL_MODEL:
            return (
                "not testable here",
                (
                    f"{len(with_transition)} of the runs here ({sizes}) has a transition and none reaches 1.5B "
                    "parameters: growth with size needs models on both sides of the emergence"
                ),
                math.nan,
            )
        return (
            "does not hold",
            (
                f"fewer than two runs ({sizes}) show a transition, including one of {largest / 1e9:.1f}B parameters"
            ),
            math.nan,
        )
    sizes = np.array([p for p, _, _ in with_transition])
    jumps = np.array([t.amplitude for _, _, t in with_transition])
    rho = float(spearmanr(sizes, jumps).statistic)
    smallest, biggest = with_transition[0][2], with_transition[-1][2]
    listing = ", ".join(f"{label}: {t.amplitude:+.3f}" for _, label, t in with_transition)
    if np.all(np.diff(jumps) > 0) and biggest.amplitude_ci[0] > smallest.amplitude_ci[1]:
        return "holds", f"jumps grow with size ({listing})", rho
    return "does not hold", f"jumps do not grow with size beyond their intervals ({listing})", rho


# --- rows -------------------------------------------------------------------------------------------------------


def _run_kind(label: str) -> str:
    if label.startswith("random:"):
        return "null: random weights"
    if "shuffled" in label:
        return "null: shuffled words"
    return "trained"


def _row(
    claim: str, m: Measurements, run: str, measured: str, value, ci, verdict_reason, command: str
) -> Row:
    verdict, reason = verdict_reason
    return Row(
        claim=claim,
        model=m.label,
        run=run,
        parameters=m.parameters,
        measured=measured,
        value=float(value),
        ci_low=float(ci[0]),
        ci_high=float(ci[1]),
        paper=CLAIMS[claim].paper,
        verdict=verdict,
        reason=reason,
        command=command,
    )


def claim_rows(
    m: Measurements,
    twin: Measurements | None = None,
    tco: TCOSummary | None = None,
    twin_tco: TCOSummary | None = None,
    run: str | None = None,
    shuffled: Measurements | None = None,
) -> list[Row]:
    """The rows of one model run: every capture-based claim (and ``tco`` when given), judged against ``twin``
    and, for bimodality, the ``shuffled``-words run of the same model."""
    run = run or _run_kind(m.label)
    command = capture_command(m.model_name)
    nan2 = (math.nan, math.nan)

    def fit_row(claim: str, t, twin_t, what: str) -> Row:
        return _row(
            claim,
            m,
            run,
            f"{what} {t.base:.3f} -> {t.base + t.amplitude:.3f}" if t is not None else "no fit",
            t.amplitude if t is not None else math.nan,
            t.amplitude_ci if t is not None else nan2,
            judge_jump(t, twin_t, min_jump(m.d_model)),
            command,
        )

    t = m.transition
    rows = [
        _row(
            "critical_depth",
            m,
            run,
            f"gamma_c = {t.gamma_c:.3f}" if t is not None else "no fit",
            t.gamma_c if t is not None else math.nan,
            t.ci if t is not None else nan2,
            judge_critical_depth(t, m.n_depths),
            command,
        ),
        fit_row("omega_jump", m.excess, twin.excess if twin is not None else None, "m - m_perm"),
        fit_row(
            "omega_jump_cleaned",
            m.excess_clean,
            twin.excess_clean if twin is not None else None,
            "cleaned m - m_perm",
        ),
    ]
    if m.parameters < SMALL_MODEL:
        for claim, peak, ci, gamma in (
            ("stays_liquid", m.m_peak, m.m_peak_ci, m.m_peak_gamma),
            ("stays_liquid_cleaned", m.m_peak_clean, m.m_peak_clean_ci, m.m_peak_clean_gamma),
        ):
            rows.append(
                _row(
                    claim,
                    m,
                    run,
                    f"max m = {peak:.3f} at gamma = {gamma:.2f}",
                    peak,
                    ci,
                    judge_liquid(peak, ci, gamma, m.d_model),
                    command,
                )
            )
    n_after = len(m.bimodal)
    rows += [
        _row(
            "bimodality",
            m,
            run,
            f"bimodal at {m.n_bimodal_after} of {n_after} depths",
            m.n_bimodal_after / n_after if n_after else math.nan,
            nan2,
            judge_bimodality(
                m.bimodal,
                m.bimodal_perm,
                shuffled.bimodal if shuffled is not None else None,
                twin.bimodal if twin is not None else None,
            ),
            command,
        ),
    ]
    if m.pr is None:  # measured for the Omega claims only (spectra=False)
        rows.append(_cooling_row(m, twin, run, command))
        return rows
    rows += [
        _row(
            "spectral_concentration",
            m,
            run,
            f"PR after / before = {m.pr.ratio:.3f}",
            m.pr.ratio,
            m.pr.ci,
            judge_concentration(m.pr, twin.pr if twin is not None else None),
            command,
        ),
        _row(
            "effective_rank",
            m,
            run,
            f"effective rank after / before = {m.erank.ratio:.3f}",
            m.erank.ratio,
            m.erank.ci,
            judge_concentration(m.erank, twin.erank if twin is not None else None, "effective rank"),
            command,
        ),
        _row(
            "mp_spikes",
            m,
            run,
            f"median spikes {m.spikes.before:.0f} -> {m.spikes.after:.0f}"
            + ("" if m.spikes.settled else " (lower bounds)"),
            m.spikes.after,
            m.spikes.after_ci,
            judge_spikes(m.spikes, twin.spikes if twin is not None else None),
            command,
        ),
    ]
    c = m.contraction
    rows.append(
        _row(
            "transverse_contraction",
            m,
            run,
            f"block gain q = {c.q:.3f}" if c is not None else "not measured",
            c.q if c is not None else math.nan,
            c.ci if c is not None else nan2,
            judge_contraction(
                c, twin.contraction if twin is not None and twin.contraction is not None else None
            ),
            command,
        )
    )
    rows.append(_cooling_row(m, twin, run, command))
    if tco is not None:
        rows.append(tco_row(m, run, tco, twin_tco))
    return rows


def tco_row(m, run: str, tco: TCOSummary, twin_tco: TCOSummary | None = None) -> Row:
    """The ``tco`` row of a run (``m`` needs ``label``, ``parameters`` and ``model_name``): its value is the
    stability, its interval stability's, judged by ``judge_tco`` against ``twin_tco``."""
    return _row(
        "tco",
        m,
        run,
        f"two-way stability {tco.stability.accuracy:.3f} (within-step control "
        f"{tco.control.accuracy:.3f}; baselines {tco.stability_bar:.3f}, chance 0.5)",
        tco.stability.accuracy,
        tco.stability.ci,
        judge_tco(tco, twin_tco),
        f"book_token_states({m.model_name!r}, 'binding') then verdict.tco_summary (chapter 6)",
    )


def _cooling_row(m: Measurements, twin: Measurements | None, run: str, command: str) -> Row:
    from .cooling import judge_cooling

    c = m.cooling
    if c is None:
        judged = ("not testable here", "no attention statistics for this run (capture it with --attention)")
    else:
        judged = judge_cooling(c, twin.cooling if twin is not None else None)
    return _row(
        "attention_cooling",
        m,
        run,
        f"entropy after / before = {c.estimate:.3f}" if c is not None else "no attention capture",
        c.estimate if c is not None else math.nan,
        c.ci if c is not None else (math.nan, math.nan),
        judged,
        command.replace("--out", "--attention --out"),
    )


def scaling_row(runs: Mapping[str, Measurements]) -> Row:
    """One row over the trained runs: does the jump grow with size (``judge_scaling``)?"""
    trained = [
        (label, m.parameters, m.transition) for label, m in runs.items() if _run_kind(label) == "trained"
    ]
    verdict, reason, rho = judge_scaling(trained)
    command = " && ".join(capture_command(name) for name in LARGE_MODELS)
    return Row(
        claim="scaling",
        model="all trained runs",
        run="trained",
        parameters=max((p for _, p, _ in trained), default=math.nan),
        measured="Spearman rho(size, jump)" if not math.isnan(rho) else "no two transitions to compare",
        value=rho,
        ci_low=math.nan,
        ci_high=math.nan,
        paper=CLAIMS["scaling"].paper,
        verdict=verdict,
        reason=reason,
        command=command if verdict == "not testable here" else "",
    )


def not_testable_rows(largest_run: float) -> list[Row]:
    """ "Not testable here" rows for what only 1.5B-30B models can show, unless a run of that size was measured."""
    if largest_run >= SMALL_MODEL:
        return []
    big = "Qwen/Qwen2.5-32B"
    reason = (
        "the paper's claims are about 1.5B-30B+ models; no such weights are on this machine (offline, CPU), "
        f"the largest run here has {largest_run / 1e6:.0f}M parameters"
    )
    rows = []
    for claim in (
        "critical_depth",
        "omega_jump",
        "bimodality",
        "spectral_concentration",
        "effective_rank",
        "mp_spikes",
        "transverse_contraction",
    ):
        rows.append(
            Row(
                claim,
                f"{big} (the paper's 30B scale)",
                "not run",
                LARGE_MODELS[big],
                "",
                math.nan,
                math.nan,
                math.nan,
                CLAIMS[claim].paper,
                "not testable here",
                reason,
                capture_command(big),
            )
        )
    rows.append(
        Row(
            "tco",
            f"{big} (the paper's 30B scale)",
            "not run",
            LARGE_MODELS[big],
            "",
            math.nan,
            math.nan,
            math.nan,
            CLAIMS["tco"].paper,
            "not testable here",
            reason + "; class stability needs token states, which no capture file carries",
            f'python -c "from latentbook.capturing.state_cache import book_token_states; '
            f"book_token_states('{big}', 'binding')\" (then chapter 6 with the model added)",
        )
    )
    return rows


# --- the ladder (chapter 7) -------------------------------------------------------------------------------------


# The ladder's own verdict words (``ladder.measure.verdict``) in this table's words.
LADDER_VERDICTS = {
    "predicts capability": "holds",
    "does not": "does not hold",
    "inconclusive": "inconclusive",
}
_NUMBER = re.compile(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?")


def _not_yet_run(why: str, command: str) -> Row:
    return Row(
        "reasoning_diagnostics",
        "ladder of small models trained on variable binding (chapter 7)",
        "not run",
        math.nan,
        "",
        math.nan,
        math.nan,
        math.nan,
        CLAIMS["reasoning_diagnostics"].paper,
        "not yet run",
        why + ": capability is not measured, so no diagnostic can be checked against it",
        command,
    )


def _ladder_row(raw: Mapping[str, Any]) -> Row:
    """One row of ``ladder.verdict_rows()`` in this table's columns (see ``ladder_rows``)."""
    data = dict(raw)
    known = set(COLUMNS) | {"ci"}
    unknown = set(data) - known
    if unknown:
        raise InvalidInputError(
            f"ladder.verdict_rows gave unknown keys {sorted(unknown)}; use {sorted(known)}."
        )
    word = str(data.get("verdict", ""))
    word = LADDER_VERDICTS.get(word, word)
    if word not in VERDICTS:
        raise InvalidInputError(
            f"ladder.verdict_rows gave the verdict {data.get('verdict')!r}; use one of {VERDICTS} "
            f"or {sorted(LADDER_VERDICTS)}."
        )
    ci = data.get("ci")
    if ci is not None and "ci_low" not in data:
        bounds = (
            [float(v) for v in _NUMBER.findall(str(ci))] if isinstance(ci, str) else [float(v) for v in ci]
        )
        if len(bounds) == 2:
            data["ci_low"], data["ci_high"] = bounds
    claim_text = str(data.get("claim", ""))
    measured = str(data.get("measured") or "")
    if claim_text and claim_text not in CLAIMS:  # the ladder names its diagnostic in the claim
        measured = f"{claim_text}: {measured}" if measured else claim_text

    def number(key: str) -> float:
        value = data.get(key)
        return float(value) if value is not None else math.nan

    claim = claim_text if claim_text in CLAIMS else "reasoning_diagnostics"  # e.g. a rung's "tco" row
    return Row(
        claim=claim,
        model=str(data.get("model") or "ladder (chapter 7)"),
        run=str(data.get("run") or "ladder"),
        parameters=number("parameters"),
        measured=measured,
        value=number("value"),
        ci_low=number("ci_low"),
        ci_high=number("ci_high"),
        paper=str(data.get("paper") or CLAIMS[claim].paper),
        verdict=word,
        reason=str(data.get("reason") or ""),
        command=str(data.get("command") or ""),
    )


def ladder_rows() -> list[Row]:
    """Rows of ``latentbook.ladder.verdict_rows()`` for the claim "diagnostics of reasoning capacity".

    Each row the ladder returns is a mapping with keys among ``COLUMNS`` plus ``ci`` (``"[low, high]"`` or a pair);
    its ``claim`` text names the diagnostic and goes in front of ``measured`` (a claim key of ``CLAIMS``, such as a
    rung's ``"tco"`` row, is kept as the row's claim instead); its verdict is one of ``VERDICTS``
    or of ``LADDER_VERDICTS`` ("predicts capability" -> "holds", "does not" -> "does not hold",
    "inconclusive"). When the ladder module, its ``verdict_rows``, or its measurements do not exist yet, one
    honest "not yet run" row that says why.
    """
    from ..errors import LatentbookError

    try:
        module = importlib.import_module("latentbook.ladder")
    except ImportError:
        module = None
    function = getattr(module, "verdict_rows", None)
    command = getattr(module, "COMMAND", None) or "latentbook train-ladder --measure"
    if function is None:
        return [
            _not_yet_run(
                "the ladder experiment (latentbook.ladder.verdict_rows) is not in this version", command
            )
        ]
    try:
        raw_rows = function()
    except LatentbookError as exc:
        return [_not_yet_run(f"the ladder has not been measured ({exc})", command)]
    return [_ladder_row(raw) for raw in raw_rows] or [_not_yet_run("the ladder returned no rows", command)]


# --- results files from elsewhere -------------------------------------------------------------------------------


def find_results_dir(start: str | Path | None = None) -> Path | None:
    """``$LATENTBOOK_RESULTS`` if set, else the ``results/`` folder of the repository above ``start`` (the
    working directory by default: chapters run inside ``book/``), found by its ``_toc.yml`` or ``pyproject.toml``."""
    if os.environ.get("LATENTBOOK_RESULTS"):
        return Path(os.environ["LATENTBOOK_RESULTS"])
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file() or (folder / "pyproject.toml").is_file():
            return folder / "results" if (folder / "results").is_dir() else None
    return None


def load_results(folder: str | Path | None) -> tuple[dict[str, Capture], list[str]]:
    """Every ``*.safetensors`` capture in ``folder`` (not recursive), by label ``"<model> (<file>)"``, and a
    message for each file that is not a readable capture (it is skipped, never silently)."""
    from ..capturing.results import load_capture

    captures, problems = {}, []
    if folder is None or not Path(folder).is_dir():
        return captures, problems
    for path in sorted(Path(folder).glob("*.safetensors")):
        try:
            cap = load_capture(path)
        except CaptureFileError as exc:
            problems.append(f"{path.name}: {exc}")
            continue
        captures[f"{cap.model_name} ({path.name})"] = cap
    return captures, problems


# --- the table ---------------------------------------------------------------------------------------------------


def _twin_of(label: str, runs: Mapping[str, Measurements]) -> Measurements | None:
    """The run labelled ``"random:" + label``, else a run of the model ``"random:" + model_name`` (results)."""
    if label.startswith("random:") or "shuffled" in label:
        return None
    if "random:" + label in runs:
        return runs["random:" + label]
    wanted = "random:" + runs[label].model_name
    return next((m for m in runs.values() if m.model_name == wanted), None)


def _shuffled_of(label: str, runs: Mapping[str, Measurements]) -> Measurements | None:
    """The run labelled ``label + " (shuffled)"`` (the same model on shuffled words), if measured."""
    if label.startswith("random:") or "shuffled" in label:
        return None
    return runs.get(f"{label} (shuffled)")


def verdict_table(
    runs: Mapping[str, Measurements],
    tco: Mapping[str, TCOSummary] | None = None,
    results_dir: str | Path | None = None,
    ladder: bool = True,
    n_boot: int = 200,
) -> pd.DataFrame:
    """Every claim against every run: ``runs`` (from ``measure``), capture files in ``results_dir`` (measured
    here, labelled "results file"), the ladder's rows, and "not testable here" rows for the paper's scale.

    Files in ``results_dir`` that are not readable captures are listed in ``table.attrs["problems"]``.
    """
    import pandas as pd

    runs = dict(runs)
    kinds = {label: _run_kind(label) for label in runs}
    results, problems = load_results(results_dir)
    for label, cap in results.items():
        runs[label] = measure(cap, label, n_boot=n_boot)
        kinds[label] = "results file"
    tco = tco or {}
    rows: list[Row] = []
    for label, m in runs.items():
        twin = _twin_of(label, runs)
        twin_tco = tco.get(twin.label) if twin is not None else None
        rows += claim_rows(
            m, twin, tco.get(label), twin_tco, run=kinds[label], shuffled=_shuffled_of(label, runs)
        )
    rows.append(scaling_row({k: v for k, v in runs.items() if kinds[k] in ("trained", "results file")}))
    trained_sizes = [m.parameters for k, m in runs.items() if kinds[k] in ("trained", "results file")]
    rows += not_testable_rows(max(trained_sizes, default=0.0))
    if ladder:
        rows += ladder_rows()
    table = pd.DataFrame([asdict(row) for row in rows], columns=list(COLUMNS))
    table.attrs["problems"] = problems
    return table


CSV_COLUMNS = ("claim", "model", "run", "estimate", "ci_low", "ci_high", "verdict", "reason")


def to_csv_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The table in the columns of ``latentbook verdict --csv``: ``claim, model, run, estimate, ci_low, ci_high,
    verdict, reason`` (numbers as numbers, NaN where a claim has no single number)."""
    return table.rename(columns={"value": "estimate"})[list(CSV_COLUMNS)]


def interval_problems(table: pd.DataFrame) -> pd.DataFrame:
    """Rows whose interval does not contain its estimate, or whose interval's ends are not ordered (none should)."""
    has = table["ci_low"].notna() & table["ci_high"].notna() & table["value"].notna()
    bad = has & ~((table["ci_low"] <= table["value"]) & (table["value"] <= table["ci_high"]))
    return table[bad]


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Claims as rows, model runs as columns, verdicts as cells (the table at a glance)."""
    return table.pivot_table(index="claim", columns="model", values="verdict", aggfunc="first").reindex(
        [c for c in CLAIMS if c in set(table["claim"])]
    )
