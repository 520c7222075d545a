"""What one capture holds and what its numbers mean: ``latentbook report CAPTURE [--plot PNG]``.

Usage:

1. ``report = capture_report(cap, label)``: the provenance, Omega's reference values at the capture's width,
   ``m(gamma)`` with prompt-bootstrap intervals (``omega_profiles.profile``), the excess over the
   coordinate-permutation null (``omega_profiles.excess_profile``), the spectrum of the sink-free token sample at
   every depth (``layer_spectra.token_sample_spectrum_profile``) beside pure noise of the same shape
   (``layer_spectra.gaussian_reference``), and the verdict rows of this capture (``verdict_rows``:
   ``study.measure.measure`` and ``study.rows.claim_rows``, the functions ``latentbook verdict`` runs on a results
   file), and the field's landmarks of depth beside the Omega transition (``study.run_landmarks.depth_landmarks``;
   the logit lens needs the model, so a capture alone reports it as not computed);
2. ``print(report.text())``: all of it in words and tables, within 100 columns (``study.capture_report_text``);
3. ``view.report_figure.report_figure(report)``: ``m(gamma)`` with its band and the spectra against the MP law.

Nothing here estimates anything new: every number comes from the analysis function named beside it.
Introduced in: the appendix "Reproduce on a GPU" (the command line).
"""

from __future__ import annotations

import math
from dataclasses import asdict, replace
from typing import TYPE_CHECKING

import numpy as np

from ..analysis import layer_spectra, omega, omega_profiles
from ..analysis import verdict as judged
from ..analysis.bimodality_power import band_spreads
from ..errors import InvalidInputError
from .capture_report_text import N_BOOT, NOISE_REPS, Report, held_depths  # Report and its text live there
from .evidence import is_encoder, weigh
from .measure import Measurements, measure, n_parameters
from .rows import capture_command, claim_rows, landmark_row, massive_step_row
from .run_landmarks import depth_landmarks

if TYPE_CHECKING:
    import pandas as pd

    from ..capturing.results import Capture
    from .run_landmarks import DepthLandmarks

SPECTRAL_CLAIMS = (
    "spectral_concentration",
    "spectral_concentration_cleaned",
    "effective_rank",
    "effective_rank_cleaned",
    "mp_spikes",
    "transverse_contraction",
)
NOT_ALONE = "not testable from this capture alone"


def results_label(cap: Capture, file_name: str) -> str:
    """The label ``latentbook verdict`` gives a results file (``study.verdict_table.load_results``).

    Parameters
    ----------
    cap : Capture
        The capture read from the file.
    file_name : str
        The file's name.

    Returns
    -------
    str
        ``"MODEL (FILE_NAME)"``.
    """
    return f"{cap.model_name} ({file_name})"


# --- the numbers ----------------------------------------------------------------------------------------------


def capture_report(
    cap: Capture,
    label: str | None = None,
    twin: Capture | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    verdict: bool = True,
) -> Report:
    """The report of ``cap`` (labelled ``label``, as in the verdict table), its verdict rows judged against
    ``twin`` (a capture of the random-weight model of the same architecture) when given.

    Parameters
    ----------
    cap : Capture
        The capture to report on.
    label : str, optional
        Its label in the verdict rows; None uses ``cap.model_name``.
    twin : Capture, optional
        A capture of the random-weight twin (the same layers and width); None judges the rows without one.
    n_boot : int
        Bootstrap draws of ``m(gamma)`` and of the excess.
    seed : int
        Seed of the bootstraps, the permutation null, the noise reference and the landmarks (the verdict rows
        are measured with ``verdict_rows``' default seed, 0).
    verdict : bool
        Measure and judge the claims (the slow part on large captures); False leaves ``rows`` None.

    Returns
    -------
    Report
        The facts, reference values, profiles, spectra, verdict rows and landmarks; a part that cannot be computed
        from this capture is None, with a note saying why. ``Report.text()`` renders it.

    Raises
    ------
    InvalidInputError
        For a ``twin`` that cannot be compared with ``cap`` (``check_twin``).
    """
    import pandas as pd

    if twin is not None:
        check_twin(cap, twin)
    label = label or cap.model_name
    one_prompt = len(np.unique(cap.omega_sample.prompt_ids)) < 2
    # one prompt has no prompts to resample: its tokens are, and the text says the interval is optimistic
    prof = omega_profiles.profile(cap, n_boot=n_boot, seed=seed, by="token" if one_prompt else "prompt")
    excess, excess_note = _try(lambda: omega_profiles.excess_profile(cap, n_boot=n_boot, seed=seed))
    table, spectra_note = _try(lambda: layer_spectra.token_sample_spectrum_profile(cap))
    noise = None
    if table is not None:
        n, d = int(table["n"].iloc[0]), int(table["d"].iloc[0])
        reference = layer_spectra.gaussian_reference(n, d, n_rep=NOISE_REPS, seed=seed)
        noise = {k: float(reference[k].mean()) for k in ("participation_ratio", "effective_rank", "n_spikes")}
    found, landmarks_note = _try(lambda: depth_landmarks(cap, label, seed=seed))
    rows, verdict_note = (
        (None, "skipped (--no-verdict)") if not verdict else _verdict(cap, label, twin, found)
    )
    return Report(
        label=label,
        facts=_facts(cap),
        references=_references(cap.d_model),
        profile=prof,
        excess=excess,
        spectra=table,
        noise=noise,
        spectrum_depths=_spectrum_depths(cap) if table is not None else [],
        rows=rows,
        twin_label=twin.model_name if twin is not None else None,
        is_null=cap.model_name.startswith("random:") or "init" in cap.model_name.split(":")[-1:],
        excess_note=excess_note,
        spectra_note=spectra_note,
        verdict_note=verdict_note,
        landmarks=pd.DataFrame(found.table()) if found is not None else None,
        landmarks_note=landmarks_note,
        extra={"capture": cap},
    )


# what a twin must share with the capture it is the null of: (what, how to read it from a capture)
TWIN_KEYS = (
    ("architecture", lambda c: c.provenance.get("model_family")),
    ("layers", lambda c: c.n_layers),
    ("width", lambda c: c.d_model),
    ("prompts", lambda c: c.provenance.get("prompt_set_sha256")),
    ("max length", lambda c: c.provenance.get("max_length")),
)


def check_twin(cap: Capture, twin: Capture) -> None:
    """Refuse a ``twin`` that is no null of ``cap``: naming every difference of ``TWIN_KEYS`` (another architecture,
    depth or width, other prompts or another max length: the comparison would measure that, not training; a key
    neither file records is not compared), or the capture's own model (the same weights: it compares nothing)."""
    differ = [
        f"{what} {read(twin)!r} against {read(cap)!r}"
        for what, read in TWIN_KEYS
        if read(cap) is not None and read(twin) is not None and read(cap) != read(twin)
    ]
    if differ:
        raise InvalidInputError(
            f"--twin {twin.model_name} cannot be compared with {cap.model_name}: "
            + "; ".join(differ)
            + ". A twin is "
            "the same architecture with random weights, captured on the same prompts at the same max length "
            "(latentbook capture random:MODEL with the capture's --prompts and --max-length)."
        )
    same = cap.provenance.get("model_sha256")
    if same is not None and same == twin.provenance.get("model_sha256") and cap.model_name == twin.model_name:
        raise InvalidInputError(
            f"--twin is a capture of {cap.model_name} itself (the same weights): it compares nothing. Capture its "
            f"random twin: latentbook capture random:{cap.model_name}."
        )


def verdict_rows(
    cap: Capture,
    label: str,
    twin: Capture | None = None,
    seed: int = 0,
    landmarks: DepthLandmarks | None = None,
) -> list[judged.Row]:
    """The verdict table's rows for ``cap``: ``measure`` then ``claim_rows`` with run
    "results file", as ``latentbook verdict`` judges a capture file (against ``twin`` when given), and the
    landmark row (``landmarks``: ``study.run_landmarks.depth_landmarks`` of ``cap``, measured here when not given).
    A capture too shallow for the spectral claims is measured for the others, and those rows say why they cannot
    be tested ("not testable here", reason naming the capture's limit); so does the cooling row of attention
    statistics it cannot read (a capture with ``depths=...`` holds its depths' layers only).

    Parameters
    ----------
    cap : Capture
        The capture to judge.
    label : str
        Its label in the rows (``results_label``).
    twin : Capture, optional
        A capture of the random-weight twin to judge against; None judges without one.
    seed : int
        Seed of the measurements.
    landmarks : DepthLandmarks, optional
        The landmarks of ``cap`` when already measured; None measures them here.

    Returns
    -------
    list of Row
        One row per claim (``analysis.verdict.Row``), the landmark row last.
    """
    cooling_problem = cooling_problem_of(cap)
    if cooling_problem:  # attention that cannot be judged costs the cooling row, not the table
        cap = replace(cap, attention=None)
    if twin is not None and cooling_problem_of(twin):
        twin = replace(twin, attention=None)
    measured, missing = measure_what_it_can(cap, label, seed)
    twin_measured = (
        measure_what_it_can(twin, f"random twin of {label}", seed)[0] if twin is not None else None
    )
    twin_rows = claim_rows(twin_measured, run="null: random weights") if twin_measured is not None else None
    rows = weigh(
        claim_rows(measured, twin_measured, run="results file"),
        measured,
        twin_measured,
        twin_rows,
        encoder=is_encoder(cap.model_name, cap.provenance.get("model_family")),
        spreads=band_spreads(cap, measured.split),
    )
    if missing:
        gap = [untestable_row(claim, measured, missing) for claim in SPECTRAL_CLAIMS]
        rows = rows[:-1] + gap + rows[-1:]  # claim_rows' order: ... bimodality, spectra, cooling
    if cooling_problem:
        rows = [
            untestable_row(row.claim, measured, cooling_problem) if row.claim == "attention_cooling" else row
            for row in rows
        ]
    try:
        found = landmarks if landmarks is not None else depth_landmarks(cap, label, seed=seed)
        rows.append(landmark_row(measured, found, run="results file"))
        rows.append(massive_step_row(measured, found, run="results file"))
    except InvalidInputError as exc:  # too few sampled tokens for the landmarks: the rows say so
        rows.append(untestable_row("landmark_coincidence", measured, str(exc)))
        rows.append(untestable_row("massive_step", measured, str(exc)))
    return rows


def cooling_problem_of(cap: Capture) -> str:
    """Why the cooling claim cannot be judged on ``cap``'s attention statistics (a capture with ``depths=...``
    records its depths' layers only), or "" when it can or ``cap`` holds none."""
    from ..analysis.cooling import attention_sums

    if cap.attention is None:
        return ""
    try:
        attention_sums(cap)
    except InvalidInputError as exc:
        return str(exc)
    return ""


def measure_what_it_can(
    cap: Capture, label: str, seed: int = 0, n_boot: int = 200
) -> tuple[Measurements, str]:
    """(``measure`` of ``cap`` with Omega in a learned basis, ""); where the spectra cannot be measured (too few
    depths or tokens), the Omega claims' measurements and why the spectral ones are missing (their rows are then
    ``untestable_row``). Where the learned basis cannot be fitted (fewer coordinates, or tokens in a prompt half,
    than its 32 sources), the measurements without it: no learned-basis row."""
    try:
        return _with_learned_basis(cap, label, seed, n_boot, spectra=True), ""
    except InvalidInputError as exc:  # too few depths or tokens for the spectra: the Omega claims still run
        return _with_learned_basis(cap, label, seed, n_boot, spectra=False), str(exc)


def _with_learned_basis(cap: Capture, label: str, seed: int, n_boot: int, spectra: bool) -> Measurements:
    try:
        return measure(cap, label, seed=seed, n_boot=n_boot, spectra=spectra, learned=True)
    except InvalidInputError:  # the learned basis, or the spectra: without the first, the second raises again
        return measure(cap, label, seed=seed, n_boot=n_boot, spectra=spectra)


def untestable_row(claim: str, m: Measurements, why: str) -> judged.Row:
    """The "not testable here" row of ``claim`` for the run ``m`` of a results file, saying ``why``."""
    return judged.Row(
        claim=claim,
        model=m.label,
        run="results file",
        parameters=m.parameters,
        measured="not measured",
        value=math.nan,
        ci_low=math.nan,
        ci_high=math.nan,
        paper=judged.CLAIMS[claim].paper,
        verdict="not testable here",
        reason=f"{NOT_ALONE}: {why}",
        command=capture_command(m.model_name),
    )


def _verdict(
    cap: Capture, label: str, twin: Capture | None, landmarks: DepthLandmarks | None
) -> tuple[pd.DataFrame | None, str]:
    import pandas as pd

    try:
        rows = verdict_rows(cap, label, twin, landmarks=landmarks)
    except InvalidInputError as exc:
        return None, f"{NOT_ALONE}: {exc}"
    return pd.DataFrame([asdict(row) for row in rows], columns=list(judged.COLUMNS)), ""


def _try(compute):
    try:
        return compute(), ""
    except InvalidInputError as exc:
        return None, str(exc)


def _references(d: int) -> dict[str, float]:
    values = omega.reference_values(int(d))
    values["paper_liquid"] = omega.level_at_width(judged.PAPER_M_LIQUID, int(d))
    values["paper_solid"] = omega.level_at_width(judged.PAPER_M_SOLID, int(d))
    values["solid_threshold"] = judged.solid_threshold(int(d))
    values["min_jump"] = judged.min_jump(int(d))
    return values


def _spectrum_depths(cap: Capture) -> list[int]:
    """The held interior depth nearest ``gamma = 1/4`` and the last held interior one (the embedding and the
    output are edge effects); the last held depth when none is interior."""
    held = held_depths(cap)
    interior = held[(held > 0) & (held < cap.n_layers)]
    if len(interior) == 0:
        return [int(held[-1])]
    early = interior[np.argmin(np.abs(interior - 0.25 * cap.n_layers))]
    return sorted({int(early), int(interior[-1])})


def _facts(cap: Capture) -> list[tuple[str, str]]:
    p = cap.provenance
    parameters, exact = n_parameters(cap)
    size = f"{parameters / 1e6:.1f}M parameters" + ("" if exact else ", estimated")
    family = p.get("model_family")
    facts = [("model", f"{cap.model_name} ({', '.join(filter(None, [family, size]))})")]
    facts.append(("shape", f"{cap.n_layers} layers, width d = {cap.d_model}"))
    n_prompts = p.get("prompts_done", p.get("n_prompts"))
    prompts = f"{n_prompts} prompts" if n_prompts is not None else "prompts: not recorded"
    if (
        p.get("prompts_done") is not None
        and p.get("n_prompts") is not None
        and p["prompts_done"] < p["n_prompts"]
    ):
        prompts = (
            f"UNFINISHED: {p['prompts_done']} of {p['n_prompts']} prompts (an interrupted capture's checkpoint; "
            "a capture runs its prompts shortest first, so these are not a sample of the set). Finish it with "
            "the same latentbook capture command and --resume"
        )
    if p.get("prompt_set"):
        prompts += f" from the set {p['prompt_set']!r}"
    if p.get("max_length"):
        prompts += f", at most {p['max_length']} tokens each"
    first = p.get("exclude_first")
    if first is not None:
        prompts += ", first position " + ("dropped" if first else "kept")
    facts.append(("prompts", prompts))
    facts.append(
        (
            "tokens",
            f"{cap.n_tokens} in the streamed statistics; samples of {len(cap.vectors.prompt_ids)} token vectors "
            f"and {len(cap.omega_sample.prompt_ids)} Omega values (the intervals resample their prompts)",
        )
    )
    facts.append(
        (
            "depths",
            f"{cap.n_layers + 1}: l = 0..{cap.n_layers}, gamma = l / {cap.n_layers} (l = 0: the embeddings; "
            f"l = {cap.n_layers}: the last layer's output, before the final norm)",
        )
    )
    held = held_depths(cap)
    if len(held) != cap.n_layers + 1:
        facts.append(("held", f"statistics only at the depths l = {', '.join(map(str, held.tolist()))}"))
    extras = [f"attention statistics: {'yes' if cap.attention is not None else 'no'}"]
    if p.get("synthetic"):
        extras.append("synthetic data (analysis.synthetic), not a model")
    facts.append(("also", "; ".join(extras)))
    dates = p.get("date") if isinstance(p.get("date"), list) else [p.get("date")]
    when = [" and ".join(str(d) for d in dates if d)] if any(dates) else []
    when += [f"{p[k]}" for k in ("device", "dtype") if p.get(k)]
    parts = p.get("versions") if isinstance(p.get("versions"), list) else [p.get("versions") or {}]
    for versions in parts:  # a merge of captures written by other versions keeps each
        if versions:
            when.append(", ".join(f"{k} {v}" for k, v in versions.items()))
    if when:
        facts.append(("captured", "; ".join(when)))
    return facts
