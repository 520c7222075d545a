"""The text of ``latentbook report CAPTURE``: the ``Report`` that ``study.capture_report.capture_report`` fills,
and ``Report.text()``, which writes its provenance, Omega's reference values, the depth-by-depth table, the
landmarks and the verdict rows in words and tables, within 100 columns.

Usage: ``print(capture_report(cap, label).text())``; ``report.spectrum(layer)`` gives the eigenvalues and the MP
fit behind one depth's row (``view.report_figure`` draws them). The text estimates nothing: it formats the numbers
``capture_report`` measured, and names the analysis function behind each.
Introduced in: the appendix "Reproduce on a GPU" (the command line).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._text import WIDTH, text_table, wrap
from ..analysis import bulk_fit, layer_spectra, omega, omega_profiles, ranks
from ..analysis import verdict as judged

if TYPE_CHECKING:
    import pandas as pd

    from ..capturing.results import Capture

N_BOOT = 1000  # bootstrap draws of m(gamma) and of the excess (omega_profiles.profile's default)
NOISE_REPS = 3  # pure-noise samples of the token sample's shape (layer_spectra.gaussian_reference)


@dataclass
class Report:
    """Everything ``latentbook report`` prints about one capture (see the module docstring)."""

    label: str
    facts: list[tuple[str, str]]  # provenance, in words: (what, value)
    references: dict[str, float]  # omega.reference_values(d) plus the paper's levels at this width
    profile: omega_profiles.Profile  # m(gamma), prompt bootstrap
    excess: omega_profiles.Profile | None  # m - m_perm, prompt bootstrap; None: see excess_note
    spectra: pd.DataFrame | None  # layer_spectra.token_sample_spectrum_profile; None: see spectra_note
    noise: dict[str, float] | None  # mean of layer_spectra.gaussian_reference at the sample's shape
    spectrum_depths: list[int]  # the depths the figure draws against the MP law
    rows: pd.DataFrame | None  # verdict rows (analysis.verdict.COLUMNS); None: not measurable (verdict_note)
    landmarks: pd.DataFrame | None = (
        None  # study.run_landmarks.DepthLandmarks.table(); None: see landmarks_note
    )
    twin_label: str | None = None  # the random twin the rows were judged against
    is_null: bool = False  # the capture is itself a null model (random weights)
    excess_note: str = ""
    spectra_note: str = ""
    verdict_note: str = ""
    landmarks_note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def spectrum(self, layer: int) -> tuple[np.ndarray, bulk_fit.MPFit]:
        """Eigenvalues of the sink-free token sample at ``layer`` and their MP fit: the numbers behind that
        depth's row of ``spectra`` (``layer_spectra.spectrum_summary`` fits the same law)."""
        cap = self.extra["capture"]
        sample = layer_spectra.token_sample(cap, layer)
        lam = ranks.sample_eigvals(sample.x)
        return lam, bulk_fit.mp_fit(lam, sample.n_dof)

    def text(self, width: int = WIDTH) -> str:
        return "\n".join(_render(self, width))


def held_depths(cap: Capture) -> np.ndarray:
    """The model depths ``l`` the capture holds, one per entry of ``cap.gamma`` (every ``0..L`` by default)."""
    depths = getattr(cap, "depths", None)
    return np.arange(cap.n_depths) if depths is None else np.asarray(depths, dtype=np.int64)


# --- the text -------------------------------------------------------------------------------------------------


def _fmt(value: float, digits: int = 4, sign: bool = False) -> str:
    if value is None or not np.isfinite(value):
        return "n/a"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _interval(low: float, high: float, digits: int = 4, sign: bool = False) -> str:
    if not (np.isfinite(low) and np.isfinite(high)):
        return ""
    return f"[{_fmt(low, digits, sign)}, {_fmt(high, digits, sign)}]"


def _section(title: str, width: int) -> list[str]:
    return ["", title, "-" * min(len(title), width)]


def _render(r: Report, width: int) -> list[str]:
    out = [f"Capture report: {r.label}"]
    key_width = max(len(k) for k, _ in r.facts)
    for key, value in r.facts:
        lines = wrap(value, width - key_width - 4)
        out.append(f"  {key.ljust(key_width)}  {lines[0]}")
        out += [" " * (key_width + 4) + line for line in lines[1:]]
    out += _render_references(r, width)
    out += _render_depths(r, width)
    out += _render_landmarks(r, width)
    out += _render_verdict(r, width)
    return out


def _render_landmarks(r: Report, width: int) -> list[str]:
    from ..analysis.paper import PAPER_GAMMA_C

    out = _section("Other clocks of depth", width)
    if r.landmarks is None:
        return out + wrap(f"Not available: {r.landmarks_note}.", width)
    out += wrap(
        "The field's landmarks on the same gamma axis (study.run_landmarks, chapter 9): the intrinsic-dimension peak "
        "of the token sample (TwoNN; Gride at a larger scale), the onset of massive activations, the logit "
        f"lens, and the Omega transition of m_z. 'near' means within {PAPER_GAMMA_C} +- "
        f"{judged.GAMMA_C_TOLERANCE}. The logit lens needs the model: lb.study.run_landmarks.lens_of(cap, "
        "lb.load_model(NAME)) computes it.",
        width,
    )
    table = r.landmarks
    shown = table.assign(
        at=[_fmt(g, 3) for g in table["gamma"]],
        interval=[_interval(lo, hi, 3) for lo, hi in zip(table["CI low"], table["CI high"])],
        near=["yes" if v else "no" for v in table["near 0.42"]],
    )[["landmark", "at", "interval", "near", "what"]]
    out.append(text_table(shown, width=width, wrap_column="what", indent=4, below=True))
    return out


def _render_references(r: Report, width: int) -> list[str]:
    ref, d = r.references, int(r.extra["capture"].d_model)
    out = _section(f"What Omega means at width d = {d}", width)
    out += wrap(
        "Omega(h) = 1 - ||h||_1 / (sqrt(d) ||h||_2) of each token vector h; m(gamma), the order parameter, is "
        "mean Omega over tokens at depth gamma. Reference values at this width:",
        width,
    )
    for name, value, meaning in (
        ("constant vector", ref["constant"], "the minimum: every coordinate equally large"),
        (
            "Gaussian vector",
            ref["gaussian"],
            f"pure noise, E Omega of N(0, I_d) ({ref['gaussian_limit']:.4f} as d grows)",
        ),
        (
            "paper's 'liquid'",
            ref["paper_liquid"],
            f"{judged.PAPER_M_LIQUID:.2f} at d = {omega.PAPER_WIDTH}, same sparseness",
        ),
        ("solid threshold", ref["solid_threshold"], "the verdict's line between liquid and solid"),
        (
            "paper's 'solid'",
            ref["paper_solid"],
            f"{judged.PAPER_M_SOLID:.2f} at d = {omega.PAPER_WIDTH}, same sparseness",
        ),
        ("one-hot vector", ref["one_hot"], "the maximum: a single nonzero coordinate"),
    ):
        out += wrap(f"{name:<17} {value:.4f}  {meaning}", width, indent=2)
    out += wrap(
        "An m near the Gaussian value says tokens are as diffuse as noise. m - m_perm is the excess over the "
        "coordinate-permutation null (each coordinate shuffled across tokens: its scale kept, structure within "
        "tokens destroyed); only that excess needs structure within tokens. The paper's jump, mapped to this "
        f"width, is {ref['paper_solid'] - ref['paper_liquid']:.4f} (the verdict asks for {ref['min_jump']:.4f}).",
        width,
    )
    return out


def _render_depths(r: Report, width: int) -> list[str]:
    p, e, s = r.profile, r.excess, r.spectra
    level = round(100 * p.level)
    n_what = (
        f"{p.n_prompts} prompts"
        if p.n_prompts
        else f"{p.n_tokens} tokens, resampled as if independent (one prompt: the interval is too narrow)"
    )
    out = _section("Depth by depth", width)
    out += wrap(
        f"m(gamma) = mean Omega over all {r.extra['capture'].n_tokens} captured tokens, {level}% interval from "
        f"{p.draws.shape[0] if p.draws is not None else N_BOOT} bootstrap draws of the {n_what} "
        "(omega_profiles.profile). m - m_perm on the token-vector sample (omega_profiles.excess_profile). "
        "Spectrum of the "
        "token-vector sample without the first position (layer_spectra.token_sample_spectrum_profile): "
        "participation ratio PR, effective rank, and spikes above the fitted Marchenko-Pastur edge; '>=' marks an unsettled fit, "
        "whose count is a lower bound.",
        width,
    )
    header = f"{'l':>3}  {'gamma':>5}  {'m(gamma)':>8}  {f'{level}% interval':<18}"
    header += f"  {'m - m_perm':>10}  {f'{level}% interval':<20}  {'PR':>7}  {'erank':>7}  {'spikes':>6}"
    out.append(header.rstrip())
    held = held_depths(r.extra["capture"])
    for i, gamma in enumerate(p.gamma):
        line = f"{held[i]:>3}  {gamma:5.3f}  {_fmt(p.m[i]):>8}  {_interval(p.low[i], p.high[i]):<18}"
        if e is not None:
            line += f"  {_fmt(e.m[i], sign=True):>10}  {_interval(e.low[i], e.high[i], sign=True):<20}"
        else:
            line += f"  {'n/a':>10}  {'':<20}"
        if s is not None:
            row = s.iloc[i]
            spikes = ("" if row["settled"] else ">=") + str(int(row["n_spikes"]))
            line += f"  {row['participation_ratio']:7.2f}  {row['effective_rank']:7.2f}  {spikes:>6}"
        out.append(line.rstrip())
    if e is None:
        out += wrap(f"m - m_perm: not available ({r.excess_note})", width)
    if s is None:
        out += wrap(f"spectra: not available ({r.spectra_note})", width)
    elif r.noise is not None:
        n, d = int(s["n"].iloc[0]), int(s["d"].iloc[0])
        out += wrap(
            f"Pure noise of the same shape ({n} Gaussian tokens in d = {d}, {NOISE_REPS} samples): PR "
            f"{r.noise['participation_ratio']:.2f}, effective rank {r.noise['effective_rank']:.2f}, spikes "
            f"{r.noise['n_spikes']:.1f}. A PR far below noise's means a few directions hold the variance.",
            width,
        )
    return out


def _render_verdict(r: Report, width: int) -> list[str]:
    out = _section("The paper's claims on this capture", width)
    if r.rows is None:
        return out + wrap(f"No verdict rows: {r.verdict_note}.", width)
    if r.is_null:
        against = "This is a null run (random weights): its rows show what the null model passes."
    elif r.twin_label and r.twin_label.startswith("random:"):
        against = f"Judged against the random twin {r.twin_label}."
    elif r.twin_label:
        against = (
            f"Judged against {r.twin_label} as the twin. Its capture names no random: model, so nothing here "
            "shows its weights are untrained: each 'random twin' in the reasons is that model, and a 'holds' "
            "says this capture beats it, not that training made the difference unless it is untrained. The "
            "random twin of a model folder: latentbook capture random:FOLDER."
        )
    else:
        against = (
            "Judged without a random twin (pass --twin FILE): a 'holds' here is not yet shown to beat the "
            "null model, and bimodality is judged without shuffled words."
        )
    out += wrap(
        "The rows `latentbook verdict` gives this file (study.measure, study.rows.claim_rows); claims about "
        f"several models (scaling) or the ladder need other runs. {against}",
        width,
    )
    shown = r.rows.assign(
        estimate=[_fmt(v, 3) for v in r.rows["value"]],
        interval=[_interval(lo, hi, 3) for lo, hi in zip(r.rows["ci_low"], r.rows["ci_high"])],
    )[["claim", "verdict", "estimate", "interval", "reason"]]
    out.append(text_table(shown, width=width, wrap_column="reason", indent=4, below=True))
    below = r.rows.loc[r.rows["scope"] == judged.BELOW_RANGE, "claim"].tolist()
    if below:
        size = float(r.rows["parameters"].iloc[0]) / 1e6
        out += wrap(
            f"Scope: this model has {size:.1f}M parameters, and the paper analysed models of "
            f"{judged.SMALL_MODEL / 1e9:g}B to 30B and more: {', '.join(below)} are below its range, so those "
            "verdicts say how a smaller model behaves, not whether the paper holds (analysis.verdict.scope_of).",
            width,
        )
    other = r.rows.loc[r.rows["scope"] == judged.OTHER_KIND, "claim"].tolist()
    if other:
        out += wrap(
            f"Scope: this model is an encoder, and the paper analysed decoders: {', '.join(other)} are measured "
            "on another kind of model, so they do not bear on the paper (analysis.verdict.scope_of).",
            width,
        )
    return out
