"""The verdict rows of the experiment: one model run's claims (``claim_rows``), the scaling row over the trained
runs (``scaling_row``) and the "not testable here" rows of the paper's scale (``not_testable_rows``), each judged
by ``analysis.verdict``, with the command that measures it at the book's settings (``capture_command``).

A run's kind comes from its label (``run_kind``): ``"random:<model>"`` is the random-weight twin of ``<model>``,
a label with "shuffled" the same model on shuffled words (``study.runs`` makes the labels).
Introduced in: chapter 8.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..analysis.cooling import judge_cooling
from ..analysis.learned_basis import best_step, judge_rise, rise_contrast
from ..analysis.verdict import (
    CLAIMS,
    SMALL_END,
    SMALL_MODEL,
    Row,
    TCOSummary,
    beside_cleaned,
    judge_bimodality,
    judge_concentration,
    judge_contraction,
    judge_critical_depth,
    judge_jump,
    judge_liquid,
    judge_scaling,
    judge_spikes,
    judge_tco,
    min_jump,
    places_gamma_c,
)
from .measure import Measurements

if TYPE_CHECKING:
    from .run_landmarks import DepthLandmarks

# The paper's scale, for the commands of "not testable here" rows (Hugging Face ids; weights needed locally).
LARGE_MODELS = {"Qwen/Qwen2.5-1.5B": 1.5e9, "Qwen/Qwen2.5-7B": 7.6e9, "Qwen/Qwen2.5-32B": 32.8e9}


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", name.split("/")[-1].lower()).strip("-")


def capture_command(model_name: str) -> str:
    """The ``latentbook capture`` command that writes a results file at the book's settings."""
    return (
        f"latentbook capture {model_name} --prompts general --max-prompts 128 --max-length 128 "
        f"--out results/{_slug(model_name)}.safetensors"
    )


def run_kind(label: str) -> str:
    """The ``run`` column of a label: "null: random weights", "null: shuffled words" or "trained"."""
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
    run = run or run_kind(m.label)
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

    t = m.standardised
    twin_t = twin.standardised if twin is not None else None
    rows = [
        _row(
            "critical_depth",
            m,
            run,
            f"gamma_c = {t.gamma_c:.3f} (m_z)" if t is not None else "no fit",
            t.gamma_c if t is not None else math.nan,
            t.ci if t is not None else nan2,
            judge_critical_depth(t, m.n_depths, twin_t),
            command,
        ),
        fit_row("omega_jump", t, twin_t, "m_z"),
        fit_row(
            "omega_jump_cleaned",
            m.standardised_clean,
            twin.standardised_clean if twin is not None else None,
            "cleaned m_z",
        ),
    ]
    if m.learned is not None:
        rows.append(learned_row(m, twin, run, command))
    if m.parameters < SMALL_END:
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
    if m.pr is None:  # measured for the Omega claims only (spectra=False), and the flow claims where measured
        if m.contraction is not None:
            rows.append(contraction_row(m, twin, run, command))
        rows.append(cooling_row(m, twin, run, command))
        return rows
    pr_clean = judge_concentration(m.pr_clean, twin.pr_clean if twin is not None else None, "correlation PR")
    erank_clean = judge_concentration(
        m.erank_clean, twin.erank_clean if twin is not None else None, "correlation effective rank"
    )
    rows += [
        _row(
            "spectral_concentration",
            m,
            run,
            f"PR after / before = {m.pr.ratio:.3f}",
            m.pr.ratio,
            m.pr.ci,
            beside_cleaned(judge_concentration(m.pr, twin.pr if twin is not None else None), pr_clean),
            command,
        ),
        _row(
            "spectral_concentration_cleaned",
            m,
            run,
            f"correlation PR after / before = {m.pr_clean.ratio:.3f}",
            m.pr_clean.ratio,
            m.pr_clean.ci,
            pr_clean,
            command,
        ),
        _row(
            "effective_rank",
            m,
            run,
            f"effective rank after / before = {m.erank.ratio:.3f}",
            m.erank.ratio,
            m.erank.ci,
            beside_cleaned(
                judge_concentration(m.erank, twin.erank if twin is not None else None, "effective rank"),
                erank_clean,
            ),
            command,
        ),
        _row(
            "effective_rank_cleaned",
            m,
            run,
            f"correlation effective rank after / before = {m.erank_clean.ratio:.3f}",
            m.erank_clean.ratio,
            m.erank_clean.ci,
            erank_clean,
            command,
        ),
        spike_row(m, twin, run, command),
    ]
    rows.append(contraction_row(m, twin, run, command))
    rows.append(cooling_row(m, twin, run, command))
    if tco is not None:
        rows.append(tco_row(m, run, tco, twin_tco))
    return rows


def spike_row(m: Measurements, twin: Measurements | None, run: str, command: str) -> Row:
    """The ``mp_spikes`` row of a run (``judge_spikes`` against the twin's), not testable when not measured."""
    s = m.spikes
    if s is None:
        return _row(
            "mp_spikes",
            m,
            run,
            "not measured",
            math.nan,
            (math.nan, math.nan),
            ("not testable here", "the spike counts were not measured for this run (measure(spikes=False))"),
            command,
        )
    return _row(
        "mp_spikes",
        m,
        run,
        f"median spikes {s.before:.0f} -> {s.after:.0f}" + ("" if s.settled else " (lower bounds)"),
        s.after,
        s.after_ci,
        judge_spikes(s, twin.spikes if twin is not None else None),
        command,
    )


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
        f"book_token_states({m.model_name!r}, 'binding') then tco.score_token_states (chapter 6)",
    )


def learned_row(m: Measurements, twin: Measurements | None, run: str, command: str) -> Row:
    """The ``learned_basis_jump`` row of a run measured with ``learned=True``: ``learned_basis.judge_rise`` of its
    ``m_ICA`` steps beyond the twin's (``rise_contrast``); not testable without the twin's profile at the same
    depths (two at least)."""
    steps, judged = None, ("not testable here", "no random twin read in a learned basis to judge against")
    if twin is not None and twin.learned is not None:
        gamma, twin_gamma = m.learned.profile.gamma, twin.learned.profile.gamma
        if len(gamma) >= 2 and np.array_equal(gamma, twin_gamma):
            steps = rise_contrast(m.learned, twin.learned)
            judged = judge_rise(steps)
        else:
            judged = (
                "not testable here",
                "the twin's learned basis was read at other depths: no step to compare",
            )
    best = best_step(steps) if steps is not None else None
    return _row(
        "learned_basis_jump",
        m,
        run,
        f"m_ICA rise {best['gamma_from']:.2f} -> {best['gamma_to']:.2f}, beyond the twin's"
        if best is not None
        else "m_ICA without a twin's",
        best["excess"] if best is not None else math.nan,
        (best["low"], best["high"]) if best is not None else (math.nan, math.nan),
        judged,
        command,
    )


def contraction_row(m: Measurements, twin: Measurements | None, run: str, command: str) -> Row:
    """The ``transverse_contraction`` row of a run (``judge_contraction`` of its gains against the twin's), not
    testable where the Jacobian-vector gains were not measured."""
    c = m.contraction
    return _row(
        "transverse_contraction",
        m,
        run,
        f"block gain q = {c.q:.3f}" if c is not None else "not measured",
        c.q if c is not None else math.nan,
        c.ci if c is not None else (math.nan, math.nan),
        judge_contraction(c, twin.contraction if twin is not None and twin.contraction is not None else None),
        command,
    )


def cooling_row(m: Measurements, twin: Measurements | None, run: str, command: str) -> Row:
    """The ``attention_cooling`` row of a run (``cooling.judge_cooling`` against the twin's), not testable without
    attention statistics."""
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


def landmark_row(m: Measurements, landmarks: DepthLandmarks, run: str | None = None) -> Row:
    """The ``landmark_coincidence`` row of a run (``DepthLandmarks.verdict``: ``analysis.verdict.judge_landmark``
    of the Omega transition of ``m_z`` against the landmarks found; chapter 9)."""
    jump = landmarks.omega_jump
    found = landmarks.found()
    listed = ", ".join(f"{name} {gamma:.2f}" for name, gamma, _ in found) or "no landmark found"
    placed = places_gamma_c(jump)
    return _row(
        "landmark_coincidence",
        m,
        run or run_kind(m.label),
        f"gamma_c = {jump.gamma_c:.3f}; {listed}" if placed else listed,
        jump.gamma_c if placed else math.nan,
        jump.ci if placed else (math.nan, math.nan),
        landmarks.verdict(),
        capture_command(m.model_name),
    )


def massive_step_row(m: Measurements, landmarks: DepthLandmarks, run: str | None = None) -> Row:
    """The ``massive_step`` row of a run (``DepthLandmarks.massive_step_verdict``: is the largest one-layer step of
    raw m the massive-activation onset?); its value is the step's depth."""
    step = landmarks.raw_step
    nan2 = (math.nan, math.nan)
    return _row(
        "massive_step",
        m,
        run or run_kind(m.label),
        f"raw m steps by {step.size:+.3f} at gamma = {step.gamma:.2f}; massive onset "
        + (f"at {landmarks.onset.gamma:.2f}" if landmarks.onset.found else "none")
        if step is not None
        else "not measured",
        step.gamma if step is not None else math.nan,
        step.ci if step is not None else nan2,
        landmarks.massive_step_verdict(),
        capture_command(m.model_name),
    )


def scaling_row(runs: Mapping[str, Measurements]) -> Row:
    """One row over the trained runs: does the jump grow with size (``judge_scaling``)?"""
    trained = [
        (label, m.parameters, m.standardised) for label, m in runs.items() if run_kind(label) == "trained"
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
