"""The verdict's rules: the claims of book/paper.md, the columns of a verdict row, and the criterion that decides each.

The criteria are pure functions of numbers (``judge_*``), tested on inputs with a known answer and calibrated on
planted families (``analysis.calibration``). The experiment that feeds them (which runs, their twins, results
files, the ladder, the table) is the study wing's: ``study.measure``, ``study.rows``, ``study.verdict_table``.

Columns of a row: ``claim``, ``model``, ``run`` ("trained", "null: random weights", "null: shuffled words",
"results file", "not run"), ``parameters``, ``measured`` (in words), ``value``, ``ci_low``, ``ci_high`` (95 %),
``paper`` (the paper's number or statement), ``verdict``, ``reason``, ``command`` and ``scope`` (``scope_of``: any
claim with a size measured below 1.5B parameters is "below the paper's range", so a small model's verdict is never
counted for or against the paper).

Verdicts (``VERDICTS``, defined once in ``VERDICT_MEANINGS``): "holds", "uninformative", "does not hold",
"inconclusive", "not testable here", "not yet run". "Twin" below is the random-weight model of the same
architecture; a trained model's effect counts only when it beats the twin's (a diagnostic the null model also
passes is not evidence of learning): a trained "holds" whose twin holds the same claim is "uninformative"
(``uninformative``). A "does not hold" that only failed to find the effect stands only where the judge's power
at the run's own noise reaches ``MIN_POWER`` for the paper's effect size (``jump_power``, ``judge_power``); else
"inconclusive". Nulls are judged by the same criterion without a twin, so the table shows whether the null passes.

Criteria (``split`` = the paper's ``gamma_c`` 0.42; "interior" = depths other than the embedding and the last;
each judge's docstring says its rule in full):

- ``omega_jump`` (``judge_jump``; ``omega_jump_cleaned``: first position and ``K_MASSIVE`` coordinates removed): a
  transition (``transition.critical_depth``, a jump of at least ``MIN_TRANSITION`` on ``MIN_DEPTHS`` depths or
  more) of ``m_z``, Omega of the standardised token vectors (``omega_profiles.standardised_profile``: free of shared
  coordinate scales, so a massive or rogue coordinate cannot make it and token-specific sparse codes do), whose
  jump lies above ``min_jump(d)`` and above the twin's by as much.
- ``critical_depth`` (``judge_critical_depth``): the same transition of ``m_z``, beyond the twin's (no gamma_c
  where the twin explains the step), whose whole interval for ``gamma_c`` lies inside ``0.42 +- GAMMA_C_TOLERANCE``.
- ``stays_liquid`` (``judge_liquid``; and cleaned; models below ``SMALL_MODEL`` parameters): the highest interior
  ``m(gamma)`` lies below ``solid_threshold(d)``.
- ``bimodality`` (``judge_bimodality``): bimodal after the split beyond both nulls, the twin bimodal nowhere.
- ``spectral_concentration`` / ``effective_rank`` (``judge_concentration``): the ratio after / before the split
  (``spectral_contrasts``, prompt jackknife) lies below ``MAX_CONCENTRATION``, and so does its ratio to the
  twin's (an interval of the difference of the logs); the ``_cleaned`` rows do the same on the correlation matrix
  (each coordinate's position profile removed, then standardised: ``layer_spectra.remove_position_profile``),
  which one massive coordinate or a leaking sink cannot concentrate, and a raw row holds only where its cleaned
  row holds too (``beside_cleaned``).
- ``attention_cooling`` (``cooling.judge_cooling``), ``mp_spikes`` (``judge_spikes``), ``transverse_contraction``
  (``judge_contraction``, Theorem 6.1), ``tco`` (``judge_tco``: a positive control, then stability), ``scaling``
  (``judge_scaling``): as their judges say.
- ``reasoning_diagnostics``: the rank correlation of each diagnostic with capability across the ladder of
  chapter 7 (``study.ladder_rows``).

Introduced in: chapter 8.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from . import bimodality, learned_basis, omega, transition
from .paper import PAPER_GAMMA_C
from .resampling import wilson_interval as wilson_interval  # re-exported: calibration reads it from here
from .tco import TWO_WAY_CHANCE, TCOScores

GAMMA_C_TOLERANCE = 0.10
LANDMARK_TOLERANCE = 0.05  # a landmark within this of gamma_c (intervals overlapping) is the same depth
PAPER_M_LIQUID, PAPER_M_SOLID = 0.69, 0.90  # at the paper's width, omega.PAPER_WIDTH
SOLID_THRESHOLD = (PAPER_M_LIQUID + PAPER_M_SOLID) / 2
MIN_JUMP = (PAPER_M_SOLID - PAPER_M_LIQUID) / 2
MIN_TRANSITION = (PAPER_M_SOLID - PAPER_M_LIQUID) / 4  # smaller steps are not the claimed transition
SMALL_MODEL = 1.5e9  # the smallest size the paper analysed (1.5B-30B+): its range starts here
# the paper names no size between its small and medium models: the book takes 1.5B to under 4B
SMALL_END = 4e9
MIN_POWER = 0.80  # a "does not hold" that found no effect needs this power at the paper's effect size
MAX_CONCENTRATION = 0.9  # PR or effective rank after / before: a fall of at least 10 % (no size in the paper)
TCO_MARGIN = 0.05  # how far a TCO interval's lower end must clear the strongest baseline that binds nothing
K_MASSIVE = 4  # coordinates removed as massive activations in the cleaned rows (chapter 3)
MIN_DEPTHS = transition.MIN_FITTED + sum(transition.SKIP)
VERDICT_MEANINGS = {
    "holds": "the criterion is met, beyond the random twin where the claim is about what training adds",
    "uninformative": "the criterion is met, but the random twin (untrained weights) meets it too: no evidence",
    "does not hold": "the criterion is not met: the interval excludes the claimed effect (for the jump rows, only "
    "where the judge had 80 % power to see the paper's jump)",
    "inconclusive": "the interval straddles the criterion's bar, or the judge had too little power to see it",
    "not testable here": "this machine cannot measure it (a model too large, a measurement not taken)",
    "not yet run": "a measurement that exists but has not been run",
}
VERDICTS = tuple(VERDICT_MEANINGS)
UNINFORMATIVE = "uninformative"
# What the paper predicts at which size (book/paper.md, claims 1-3 and 6: the transition, its jump, bimodality and the
# spectral anomalies in large models of 1.5B-30B+; small models stay liquid). Claims of a theorem or of the
# framework (contraction, cooling, class stability, diagnostics across a ladder) carry no size.
LARGE_MODEL_CLAIMS = frozenset(
    {
        "critical_depth",
        "omega_jump",
        "omega_jump_cleaned",
        "learned_basis_jump",
        "bimodality",
        "spectral_concentration",
        "spectral_concentration_cleaned",
        "effective_rank",
        "effective_rank_cleaned",
        "mp_spikes",
        "scaling",
    }
)
SMALL_MODEL_CLAIMS = frozenset({"stays_liquid", "stays_liquid_cleaned"})
# The m_z rows read how heavy-tailed each token's coordinates are. Objects make them heavier, and so do coordinates
# that turn heavy-tailed with no object in them: on planted models (issue 54, chapter 8's appendix) a gated product
# as SwiGLU MLPs write, Student-t coordinates and outlier features pass them. Their "holds" says so (``TAIL_NOTE``).
TAIL_BLIND_CLAIMS = frozenset({"critical_depth", "omega_jump", "omega_jump_cleaned"})
TAIL_NOTE = (
    "heavier-tailed coordinates, not by itself objects: heavy-tailed coordinates with no object in them (a gated "
    "product, as SwiGLU MLPs write; outlier features) pass this row too (the end-to-end calibration)"
)
IN_RANGE, BELOW_RANGE, ABOVE_RANGE, OTHER_KIND, ANY_SIZE, SIZE_UNKNOWN = (
    "in the paper's range",
    "below the paper's range (1.5B-30B+): not predicted at this size",
    "above the small models' range: not predicted at this size",
    "another kind of model (an encoder): the paper analysed decoders",
    "any size",
    "size unknown",
)
SCOPES = (IN_RANGE, BELOW_RANGE, ABOVE_RANGE, OTHER_KIND, ANY_SIZE, SIZE_UNKNOWN)


@dataclass(frozen=True)
class Claim:
    key: str
    statement: str
    paper: str


CLAIMS: dict[str, Claim] = {
    c.key: c
    for c in [
        Claim(
            "critical_depth",
            "m(gamma) jumps at a critical depth gamma_c ~ 0.42; judged on Omega of the standardised vectors, which "
            "places any change in how heavy-tailed the coordinates are, objects or not (the end-to-end calibration)",
            "gamma_c ~ 0.42",
        ),
        Claim(
            "omega_jump",
            "Omega rises sharply at gamma_c, e.g. ~0.69 -> ~0.90 (30B); judged on Omega of the standardised "
            "vectors (each coordinate centred and scaled over tokens); heavy-tailed coordinates with no object in "
            "them pass it too (the end-to-end calibration)",
            "jump ~0.21",
        ),
        Claim(
            "omega_jump_cleaned",
            "the same jump with the first position and the massive coordinates removed; heavy-tailed coordinates pass it too",
            "jump ~0.21",
        ),
        Claim(
            "learned_basis_jump",
            "the same jump read in a basis fitted to each depth's tokens (Omega of 32 independent components, "
            "cross-fitted by prompt: a sparse code off the coordinate axes, as features in superposition lie); "
            "judged as a rise between two read depths beyond the random twin's",
            f"a rise beyond the twin's > {learned_basis.RISE_BAR}",
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
            f"PR after / before < {MAX_CONCENTRATION}",
        ),
        Claim(
            "spectral_concentration_cleaned",
            "the same on the correlation matrix (each coordinate's position profile removed, then standardised: "
            "no massive or rogue coordinate, no sink leaking by position)",
            f"PR after / before < {MAX_CONCENTRATION}",
        ),
        Claim(
            "effective_rank",
            "after gamma_c: lower effective rank (Roy & Vetterli's exp of the spectral entropy)",
            f"effective rank after / before < {MAX_CONCENTRATION}",
        ),
        Claim(
            "effective_rank_cleaned",
            "the same on the correlation matrix (each coordinate's position profile removed, then standardised: "
            "no massive or rogue coordinate, no sink leaking by position)",
            f"effective rank after / before < {MAX_CONCENTRATION}",
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
        Claim(
            "landmark_coincidence",
            "a referee's question, not the paper's claim: gamma_c is a known landmark of depth under another name "
            "(intrinsic-dimension peak, massive-activation onset, logit-lens convergence; chapter 9)",
            "(the paper presents gamma_c as new)",
        ),
        Claim(
            "massive_step",
            "a referee's question, not the paper's claim: the largest step of the paper's raw m(gamma) is the onset "
            "of massive activations (chapter 3's confound), not a phase of the token cloud",
            "(the paper reads raw m as its order parameter)",
        ),
        Claim("scaling", "the amplitude of the transition grows with model size", "grows with size"),
        Claim(
            "reasoning_diagnostics",
            "gamma_c and spectral gaps are diagnostics of reasoning capacity",
            "diagnostics track capability",
        ),
    ]
}
# the claims in a reader's words, for the grid of chapter 8 (the keys stay the table's and the CSV's)
CLAIM_TITLES = {
    "critical_depth": "a transition at 42 % of depth",
    "omega_jump": "Omega jumps (standardised)",
    "omega_jump_cleaned": "Omega jumps (cleaned)",
    "learned_basis_jump": "Omega jumps in a learned basis",
    "stays_liquid": "small models stay liquid (raw m)",
    "stays_liquid_cleaned": "small models stay liquid (cleaned m)",
    "bimodality": "Omega becomes bimodal",
    "spectral_concentration": "participation ratio falls",
    "spectral_concentration_cleaned": "participation ratio falls (cleaned)",
    "effective_rank": "effective rank falls",
    "effective_rank_cleaned": "effective rank falls (cleaned)",
    "mp_spikes": "spikes leave the MP bulk",
    "transverse_contraction": "transverse directions contract",
    "attention_cooling": "attention cools",
    "tco": "class objects persist across steps",
    "landmark_coincidence": "gamma_c is a known landmark",
    "massive_step": "raw m's step is massive activations",
    "scaling": "the jump grows with size",
    "reasoning_diagnostics": "diagnostics track capability",
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
    "scope",
)


def scope_of(claim: str, parameters: float, encoder: bool = False) -> str:
    """Where a verdict stands against the paper's range, the sizes it analysed (``SMALL_MODEL`` = 1.5B to 30B+).

    A claim with a size (``LARGE_MODEL_CLAIMS``, and ``SMALL_MODEL_CLAIMS``: the paper's small models are the
    bottom of its suite) measured below ``SMALL_MODEL`` is ``BELOW_RANGE`` (not predicted there: neither a
    "holds" nor a "does not hold" bears on the paper); a small-model claim on a model of ``SMALL_END`` or more is
    ``ABOVE_RANGE``; on an ``encoder`` any sized claim is ``OTHER_KIND``; claims without a size are ``ANY_SIZE``."""
    if claim not in LARGE_MODEL_CLAIMS | SMALL_MODEL_CLAIMS:
        return ANY_SIZE
    if encoder:
        return OTHER_KIND
    if not np.isfinite(parameters):
        return SIZE_UNKNOWN
    if parameters < SMALL_MODEL:
        return BELOW_RANGE
    if claim in SMALL_MODEL_CLAIMS and parameters >= SMALL_END:
        return ABOVE_RANGE
    return IN_RANGE


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
    scope: str = ""  # scope_of(claim, parameters) when not given

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise InvalidInputError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}.")
        if self.claim not in CLAIMS:
            raise InvalidInputError(f"claim must be one of {sorted(CLAIMS)}, got {self.claim!r}.")
        if not self.scope:
            object.__setattr__(self, "scope", scope_of(self.claim, self.parameters))
        if self.scope not in SCOPES:
            raise InvalidInputError(f"scope must be one of {SCOPES}, got {self.scope!r}.")


def uninformative(verdict_reason: tuple[str, str], twin_verdict: str | None) -> tuple[str, str]:
    """A trained model's verdict read beside its random twin's on the same claim: a "holds" that the twin
    (untrained weights) holds too is ``UNINFORMATIVE`` (the criterion is met without training, so meeting it says
    nothing about what the model learned); every other verdict stands."""
    verdict, reason = verdict_reason
    if verdict != "holds" or twin_verdict != "holds":
        return verdict_reason
    return UNINFORMATIVE, f"{reason}; the random twin holds it too, so it is no evidence"


def paper_jump(d: int) -> float:
    """The paper's jump (0.69 -> 0.90 at d = 5120) at width ``d``, same Hoyer sparseness: twice ``min_jump``."""
    return 2 * min_jump(d)


def jump_power(trans, twin_trans, effect: float, bar: float) -> float:
    """The power of ``judge_jump(trans, twin_trans, bar)`` if the true jump were ``effect``, at the run's own noise.

    The jump's estimate is taken as normal with the standard error of its interval,
    ``se = (high - low) / (2 z)`` (``z = 1.96``), and the judge needs its lower end ``b - z se`` to clear
    ``bar + max(u_twin, 0)`` (``u_twin`` the upper end of the twin's jump interval, 0 without a twin):
    ``power = Phi((effect - bar - max(u_twin, 0)) / se - z)``. NaN where there is no fit or no finite interval.
    """
    from scipy.stats import norm

    if trans is None:
        return math.nan
    low, high = trans.amplitude_ci
    twin_high = twin_trans.amplitude_ci[1] if twin_trans is not None else 0.0
    if not np.isfinite([low, high, twin_high]).all():
        return math.nan
    z = norm.ppf(0.975)
    se = max((high - low) / (2 * z), 1e-12)
    return float(norm.cdf((effect - bar - max(twin_high, 0.0)) / se - z))


# the reasons of judge_jump and judge_critical_depth that say an effect was not found (not that it was excluded)
NOT_FOUND = ("no transition", "is not above", "does not exceed the random twin", "no finite lower end")


def largest_jump(trans) -> float:
    """The largest jump the run's own interval allows: its upper end, before anything is taken away for the twin (a
    twin whose interval lies above 0 by chance would otherwise exclude the paper's jump for it); NaN without a
    fit."""
    if trans is None:
        return math.nan
    return float(trans.amplitude_ci[1])


def judge_power(
    verdict_reason: tuple[str, str], power: float, effect: float, largest: float, bar: float
) -> tuple[str, str]:
    """A jump row's "does not hold" that only failed to find the effect (``NOT_FOUND``) stands where the judge
    could have seen the paper's ``effect`` (``power``, from ``jump_power``, reaches ``MIN_POWER``) and the run's own
    interval excludes even the judge's ``bar``, the smallest jump it calls one (``largest``, from ``largest_jump``,
    lies below it: an equivalence test, which a smooth rise the step fit reads as a smaller jump cannot pass by
    accident); otherwise, or where either is unknown (NaN), it is "inconclusive": no evidence of absence. A "does
    not hold" that excludes the claim in itself (a transition outside the window, a twin sharing its depth) and
    every other verdict stand."""
    verdict, reason = verdict_reason
    if verdict != "does not hold" or not any(words in reason for words in NOT_FOUND):
        return verdict_reason
    shown = f"{power:.0%}" if np.isfinite(power) else "unknown"
    if np.isfinite(power) and power >= MIN_POWER and largest < bar:
        return verdict, (
            f"{reason}; the jump is at most {largest:.3f}, below the bar of {bar:.3f}, and the judge had the power "
            f"to see the paper's {effect:.3f} ({shown})"
        )
    if not (np.isfinite(largest) and largest < bar):
        return "inconclusive", (
            f"{reason}; but its interval allows a jump of {largest:.3f}, not below the bar of {bar:.3f} (power "
            f"for the paper's {effect:.3f}: {shown}): no evidence of absence"
        )
    return "inconclusive", (
        f"{reason}; but the judge's power for the paper's jump of {effect:.3f} at this run's noise is {shown} "
        f"(below {MIN_POWER:.0%}): no evidence of absence"
    )


def weigh_jump(
    verdict_reason: tuple[str, str], trans, twin_trans, effect: float, bar: float
) -> tuple[str, str]:
    """``judge_power`` of a jump row's verdict, with its power (``jump_power``) and largest jump (``largest_jump``)
    read from the run's fit ``trans`` and its twin's ``twin_trans``: the one call the verdict table and the power
    table both make."""
    power = jump_power(trans, twin_trans, effect, bar)
    return judge_power(verdict_reason, power, effect, largest_jump(trans), bar)


def _fmt_ci(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]"


def solid_threshold(d: int) -> float:
    """The paper's solid threshold (midway between 0.69 and 0.90 at d = 5120) at width ``d``, same Hoyer
    sparseness (``omega.level_at_width``)."""
    return omega.level_at_width(SOLID_THRESHOLD, d)


def min_jump(d: int) -> float:
    """Half the paper's jump (0.69 -> 0.90 at d = 5120) at width ``d``, same Hoyer sparseness."""
    return omega.level_at_width(PAPER_M_SOLID, d) / 2 - omega.level_at_width(PAPER_M_LIQUID, d) / 2


TCOSummary = TCOScores  # what ``judge_tco`` reads: ``analysis.tco.TCOScores`` (control, stability, baselines)


# --- criteria: each a pure function of numbers, tested on inputs with a known answer -----------------------


def judge_critical_depth(
    trans, n_depths: int, twin_trans=None, min_jump: float = MIN_TRANSITION
) -> tuple[str, str]:
    """Holds when there is a transition (``transition.critical_depth``, jump >= ``MIN_TRANSITION``) that beats the
    twin (``judge_jump`` at ``min_jump``, by default ``MIN_TRANSITION``: the jump's interval above it and above the
    twin's by as much, so no gamma_c is read where the twin explains the step; the size of the paper's jump is
    ``omega_jump``'s claim), that the twin does not share (a twin placing a gamma_c of its own, ``places_gamma_c``,
    whose interval overlaps the model's: the depth is the architecture's, and a twin jumping a little less there
    does not make it learned), and whose whole interval lies inside ``0.42 +- GAMMA_C_TOLERANCE`` (an equivalence
    test: imprecision cannot hold); does not hold when there is no transition, its interval lies wholly outside,
    the twin shares it or it does not beat the twin; else inconclusive."""
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
    if high < window[0] or low > window[1]:
        return "does not hold", f"{found}, outside {PAPER_GAMMA_C} +- {GAMMA_C_TOLERANCE}"
    jump, why = judge_jump(trans, twin_trans, min_jump)
    if jump != "holds":
        return "does not hold", f"no critical depth beyond the null: {why}"
    if twin_trans is not None and places_gamma_c(twin_trans):
        twin_low, twin_high = twin_trans.ci
        if twin_low <= high and low <= twin_high:
            return "does not hold", (
                f"{found}, and the twin has one of its own at {twin_trans.gamma_c:.3f} "
                f"{_fmt_ci(twin_low, twin_high)}: the depth is the architecture's"
            )
    if window[0] <= low and high <= window[1]:
        return "holds", f"{found}, inside {PAPER_GAMMA_C} +- {GAMMA_C_TOLERANCE}"
    return "inconclusive", f"{found}: the interval is not inside {PAPER_GAMMA_C} +- {GAMMA_C_TOLERANCE}"


def coincides(gamma: float, ci: tuple[float, float], trans) -> bool:
    """A landmark at ``gamma`` (interval ``ci``) is the transition ``trans``'s depth: within
    ``LANDMARK_TOLERANCE`` of ``gamma_c``, the two intervals overlapping."""
    low, high = trans.ci
    return bool(abs(gamma - trans.gamma_c) <= LANDMARK_TOLERANCE and ci[0] <= high and low <= ci[1])


def places_gamma_c(trans) -> bool:
    """Whether ``trans`` (``transition.critical_depth`` of ``m_z``) has a gamma_c to place: a transition whose
    jump's interval clears ``MIN_TRANSITION``, the step ``judge_critical_depth`` needs too."""
    return trans is not None and judge_jump(trans, None, MIN_TRANSITION)[0] == "holds"


def judge_landmark(trans, landmarks, n_depths: int) -> tuple[str, str]:
    """Whether the Omega transition ``trans`` (``transition.critical_depth`` of ``m_z``) sits at one of the
    ``landmarks`` found (``(name, gamma, (low, high))`` each): holds when a landmark lies within
    ``LANDMARK_TOLERANCE`` of ``gamma_c`` and their intervals overlap; does not hold when every landmark's
    interval is disjoint from gamma_c's (or none was found); else inconclusive. Not testable without a
    transition, or with a step whose interval does not clear ``MIN_TRANSITION`` (where ``critical_depth`` sees
    no transition either): there is no gamma_c to place."""
    if trans is None:
        return "not testable here", f"{n_depths} depths: the Omega fit needs {MIN_DEPTHS}"
    if not trans.has_transition:
        return "not testable here", f"no Omega transition to place ({trans.reason})"
    step, why = judge_jump(trans, None, MIN_TRANSITION)
    if step != "holds":
        return "not testable here", f"no Omega transition to place: {why}"
    low, high = trans.ci
    found = f"gamma_c = {trans.gamma_c:.3f} {_fmt_ci(low, high)}"
    if not landmarks:
        return "does not hold", f"{found}; no landmark found"
    same = [(name, g, ci) for name, g, ci in landmarks if coincides(g, ci, trans)]
    if same:
        name, g, ci = same[0]
        return "holds", f"{found} coincides with the {name} at {g:.3f} {_fmt_ci(*ci)}"
    if all(ci[1] < low or ci[0] > high for _, _, ci in landmarks):
        where = ", ".join(f"{name} {g:.2f}" for name, g, _ in landmarks)
        return "does not hold", f"{found}; every landmark's interval lies apart ({where})"
    return "inconclusive", f"{found}: a landmark's interval overlaps it, more than {LANDMARK_TOLERANCE} away"


def judge_massive_step(step, onset_gamma: float, onset_found: bool, min_step: float = MIN_TRANSITION):
    """Whether the largest one-layer step of raw ``m`` (``landmarks.RawStep``) is the massive-activation onset
    (``landmarks.Onset``: one depth, a maximum over every token, no interval). Not testable where the step's
    interval does not clear ``min_step`` (no step to explain); does not hold where no onset was found, or the onset
    lies farther than ``LANDMARK_TOLERANCE`` beyond the step's interval; holds where it lies within
    ``LANDMARK_TOLERANCE`` of the step and of its interval; else inconclusive. Returns (verdict, reason)."""
    found = (
        f"raw m's largest one-layer rise {step.size:+.3f} {_fmt_ci(*step.size_ci)} reaches gamma = "
        f"{step.gamma:.2f} {_fmt_ci(*step.ci)}"
    )
    if not step.size_ci[0] >= min_step:
        return "not testable here", f"{found}: no step of at least {min_step:.3f} to explain"
    if not onset_found:
        return "does not hold", f"{found}; no massive-activation onset, so the step is not theirs"
    low, high = step.ci[0] - LANDMARK_TOLERANCE, step.ci[1] + LANDMARK_TOLERANCE
    where = f"{found}; massive activations begin at gamma = {onset_gamma:.2f}"
    if not low <= onset_gamma <= high:
        return "does not hold", f"{where}, apart from it"
    if abs(onset_gamma - step.gamma) <= LANDMARK_TOLERANCE:
        return "holds", f"{where}: the paper's statistic steps where they begin"
    return "inconclusive", f"{where}, inside the step's interval but more than {LANDMARK_TOLERANCE} away"


def judge_jump(trans, twin_trans=None, min_jump: float = MIN_JUMP) -> tuple[str, str]:
    """Holds when there is a transition whose jump's interval lies above ``min_jump`` and, by ``min_jump`` too,
    above the twin's (what training adds must itself be the effect: a twin that jumps as much leaves nothing);
    NaN in either interval is no evidence: does not hold."""
    if trans is None:
        return "not testable here", f"fewer than {MIN_DEPTHS} depths: no transition fit"
    if not trans.has_transition:
        return "does not hold", f"no transition to have a jump: {trans.reason}"
    low, high = trans.amplitude_ci
    if not np.isfinite(low):
        return "does not hold", f"jump {trans.amplitude:+.3f} {_fmt_ci(low, high)}: no finite lower end"
    if low < min_jump:
        return (
            "does not hold",
            f"jump {trans.amplitude:+.3f} {_fmt_ci(low, high)} is not above {min_jump:.3f}",
        )
    # NaN in the twin's interval is no evidence either: the comparison is False
    if twin_trans is not None and not low - max(twin_trans.amplitude_ci[1], 0.0) >= min_jump:
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
    """``bimodality.Bimodality`` at the interior depths after the split of a run and of its nulls (same depths).

    Holds when the run is bimodal (all three tests, the dip's p-value Holm-adjusted across the depths and
    corrected for prompt clustering) at one depth or more where neither the coordinate-permutation null nor the
    shuffled-words run is anything but unimodal (per depth, unadjusted, one vote enough: a null gets every
    chance to explain the modes), and the random twin is bimodal nowhere. Returns (verdict, reason).
    """
    if not real:
        return "not testable here", "no interior depth after the split"
    bimodal = [b.verdict == "bimodal" for b in bimodality.holm_adjusted(real)]

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
    """Holds when the interval of ``after / before`` lies below ``MAX_CONCENTRATION`` (a fall of 10 % or more) and,
    by that factor too, below the twin's: the upper end of the interval of ``log(model) - log(twin)`` (centres and
    half-widths of the two log-scale intervals, the half-widths added in quadrature) lies below
    ``log MAX_CONCENTRATION`` (what training adds must itself be the fall, as in ``judge_jump``: a twin that falls
    nearly as much leaves nothing; a twin that does not fall asks only for the bar). Does not hold when the interval
    lies at or above the bar (no fall, or one too small to be the claimed concentration) or that of the fall beyond
    the twin's does (NaN in either interval included); inconclusive when either straddles the bar."""
    low, high = contrast.ci
    found = f"{what} after / before = {contrast.ratio:.3f} {_fmt_ci(low, high)}"
    if not np.isfinite([contrast.ratio, low, high]).all():
        return "does not hold", found + ": no finite ratio and interval, so no evidence of a fall"
    if low >= MAX_CONCENTRATION:
        return "does not hold", found + f": no fall to {MAX_CONCENTRATION} or below"
    if high >= MAX_CONCENTRATION:
        return "inconclusive", found + f": the interval reaches {MAX_CONCENTRATION}"
    if twin is None:
        return "holds", found
    model_log, twin_log = np.log([low, high]), np.log(twin.ci)
    twin_centre = twin_log.mean()
    if twin_centre >= 0:
        return "holds", found + f"; the random twin's {_fmt_ci(*twin.ci)} does not fall"
    half = np.hypot(np.diff(model_log)[0] / 2, np.diff(twin_log)[0] / 2)
    least, beyond = np.exp(model_log.mean() - twin_centre + np.array([-half, half]))
    over_twin = f"its ratio to the random twin's {_fmt_ci(*twin.ci)} is"
    if beyond < MAX_CONCENTRATION:
        return "holds", found + f"; {over_twin} at most {beyond:.3f}"
    if least < MAX_CONCENTRATION:
        return (
            "inconclusive",
            found + f": {over_twin} {_fmt_ci(least, beyond)}, which reaches {MAX_CONCENTRATION}",
        )
    return "does not hold", found + f": {over_twin} at least {least:.3f}, not below {MAX_CONCENTRATION}"


def beside_cleaned(raw: tuple[str, str], cleaned: tuple[str, str]) -> tuple[str, str]:
    """A raw spectral row's verdict read beside its cleaned row's (``judge_concentration`` of the covariance and of
    the correlation matrix of the same tokens): a fall of the covariance that the correlation matrix does not share
    is made of a few high-variance coordinates (massive or rogue), not of the token cloud, so "holds" stands only
    where the cleaned row holds too, and is otherwise the cleaned row's verdict, with both reasons; any other raw
    verdict stands."""
    if raw[0] != "holds" or cleaned[0] == "holds":
        return raw
    word, reason = cleaned
    return word, f"{raw[1]}; but once cleaned, {reason}: the fall is a few coordinates', not the tokens'"


def judge_spikes(contrast, twin=None) -> tuple[str, str]:
    """Holds when every MP fit settled, the paired prompt-bootstrap interval of ``after - before`` (median spike
    counts after and before the split) lies above 0, and the interval after lies above the twin's; an unsettled
    fit makes the counts lower bounds: inconclusive."""
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
    low, high = contrast.difference_ci
    if not (np.isfinite(low) and np.isfinite(high)):
        return "inconclusive", found + ": no paired interval of the difference"
    change = f"; after - before {_fmt_ci(low, high)}"
    if high <= 0:
        return "does not hold", found + change + ": no more after than before"
    if low <= 0:
        return "inconclusive", found + change + ": the difference's interval reaches 0"
    if twin is not None and contrast.after_ci[0] <= twin.after_ci[1]:
        return "does not hold", found + change + f": not above the random twin's {_fmt_ci(*twin.after_ci)}"
    return "holds", found + change


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

    Not testable here when the control's interval (a probe fitted and tested at the query, cross-fitted by
    program) reaches chance (``TWO_WAY_CHANCE``); inconclusive when it does not clear ``control_bar + TCO_MARGIN`` (the bag-of-values and first-value decoders on the same pairs):
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
    if not c.ci[0] > TWO_WAY_CHANCE:
        return "not testable here", found + (
            ": the positive control is at chance (its interval reaches 0.5): this model's states cannot be read "
            "within a step, so stability across steps cannot be asked of it"
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
