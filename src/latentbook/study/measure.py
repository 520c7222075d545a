"""What the verdict's criteria read from one capture: ``measure(cap)`` -> ``Measurements``.

``measure`` runs every capture-based estimator at the book's settings (bootstrap draws, the ``K_MASSIVE``
coordinates of the cleaned profile, the spike bootstrap and the rank jackknife below) and keeps the numbers the
judges of ``analysis.verdict`` read; ``n_parameters`` says how big the captured model is. ``study.rows`` turns a
run's ``Measurements`` into verdict rows.
Introduced in: chapter 8.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis import bimodality, omega, omega_profiles, transition
from ..analysis.verdict import K_MASSIVE, MIN_TRANSITION, PAPER_GAMMA_C

if TYPE_CHECKING:
    from ..capturing.results import Capture

SPIKE_BOOT = 10  # prompt-bootstrap draws of the spike counts (each refits the MP law at every depth)
ERANK_GROUPS = 10  # groups of prompts left out in turn for the effective rank's jackknife


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
    standardised: Any  # transition.Transition of m_z (omega_profiles.standardised_profile), or None
    standardised_clean: Any  # the same with the first position and K_MASSIVE coordinates removed, or None
    m_peak: float  # the highest m over the fitted (interior) depths
    m_peak_ci: tuple[float, float]
    m_peak_gamma: float
    m_peak_clean: float  # the highest m of confounds.cleaned_profile over the same depths
    m_peak_clean_ci: tuple[float, float]
    m_peak_clean_gamma: float
    bimodal: list  # bimodality.Bimodality at each interior depth after the split (first position removed)
    bimodal_perm: list  # the same of the coordinate-permuted vector sample (omega.permutation_null)
    after_gammas: list[float]
    pr: Any  # spectral_contrasts.Contrast of the participation ratio (jackknife over prompts); None: not measured
    erank: Any  # spectral_contrasts.Contrast of the effective rank; None: not measured
    pr_clean: Any  # the same of the correlation matrix (each coordinate standardised); None: not measured
    erank_clean: Any  # the same of the correlation matrix; None: not measured
    spikes: Any  # spectral_contrasts.SpikeContrast (median counts, prompt-bootstrap intervals); None: not measured
    contraction: Any  # contraction.GainFit of the Jacobian-vector gains, or None when not measured
    cooling: Any = None  # cooling.CoolingSummary, or None without attention statistics
    split: float = PAPER_GAMMA_C
    # learned_basis.LearnedProfile at the depths nearest BOOK_GAMMAS, or None: not measured
    learned: Any = None

    @property
    def n_bimodal_after(self) -> int:
        return sum(b.verdict == "bimodal" for b in bimodality.holm_adjusted(self.bimodal))


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
    spikes: bool = True,
    learned: bool = False,
) -> Measurements:
    """Measure every capture-based claim on ``cap`` (``analysis.verdict`` says what each claim reads);
    ``attention``: a capture of the same run with attention statistics, for the cooling claim (``cap`` itself
    when it has them); ``spectra=False`` skips the spectral claims (the costly part: a null run measured only
    for bimodality, such as shuffled words); ``gains``: the run's ``capturing.jacobian.TransverseGains`` (a
    Jacobian-vector measurement needs the model, so a capture alone leaves the contraction claim untested);
    ``spikes=False`` skips the spike counts (each refits the MP law at every depth of every bootstrap draw), which
    leaves the spike claim "not testable here"; ``learned=True`` reads Omega in a learned basis
    (``learned_basis.book_profile``, about 2 s a depth at d = 576) for the learned-basis row."""
    from ..analysis import confounds, contraction, cooling, learned_basis, spectral_contrasts

    if attention is None and getattr(cap, "attention", None) is not None:
        attention = cap

    parameters, exact = n_parameters(cap)
    testable = transition.is_testable(cap.n_depths)

    def fit(prof):
        return transition.critical_depth(
            prof.gamma, prof.m, draws=prof.draws, n_boot=n_boot, seed=seed, min_amplitude=MIN_TRANSITION
        )

    prof = omega_profiles.profile(cap, n_boot=max(n_boot, 100), seed=seed)
    standardised = omega_profiles.standardised_profile(cap, n_boot=max(n_boot, 100), seed=seed)
    standardised_clean = omega_profiles.standardised_profile(
        cap, n_boot=max(n_boot, 100), seed=seed, drop_first=True, drop_top_dims=K_MASSIVE
    )
    clean = confounds.cleaned_profile(cap, k=K_MASSIVE, n_boot=max(n_boot, 100), seed=seed)
    start, stop = transition.SKIP[0], cap.n_depths - transition.SKIP[1]
    if stop <= start:
        start, stop = 0, cap.n_depths
    m_peak, m_peak_ci, m_peak_gamma = _peak(prof, start, stop)
    clean_peak, clean_ci, clean_gamma = _peak(clean, start, stop)

    _, after = spectral_contrasts.depth_windows(cap.gamma, split)
    keep = cap.vectors.positions > 0
    bimodal, bimodal_perm = [], []
    for layer in cap.depths[after].tolist():  # the depths after the split (positions -> depths held)
        values, ids = omega.samples(cap, layer, drop_first=True)
        bimodal.append(bimodality.bimodality(values, prompt_ids=ids))
        permuted = omega.permutation_null(cap.token_vectors(layer).astype(np.float64)[keep], seed + layer)
        bimodal_perm.append(bimodality.bimodality(permuted, prompt_ids=cap.vectors.prompt_ids[keep]))

    spike_counts = pr = erank = pr_clean = erank_clean = None
    if spectra:
        if spikes:
            spike_counts = spectral_contrasts.spike_contrast(cap, split=split, n_boot=SPIKE_BOOT, seed=seed)
        pr = spectral_contrasts.pr_contrast(cap, split=split)
        erank = spectral_contrasts.effective_rank_contrast(cap, split=split, n_groups=ERANK_GROUPS)
        pr_clean = spectral_contrasts.pr_contrast(cap, split=split, standardised=True)
        erank_clean = spectral_contrasts.effective_rank_contrast(
            cap, split=split, n_groups=ERANK_GROUPS, standardised=True
        )
    contracted = contraction.transverse_gain(gains, seed=seed) if gains is not None else None
    return Measurements(
        label=label or cap.model_name,
        model_name=cap.model_name,
        parameters=parameters,
        parameters_exact=exact,
        n_depths=cap.n_depths,
        d_model=cap.d_model,
        transition=fit(prof) if testable else None,
        standardised=fit(standardised) if testable else None,
        standardised_clean=fit(standardised_clean) if testable else None,
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
        pr_clean=pr_clean,
        erank_clean=erank_clean,
        spikes=spike_counts,
        contraction=contracted,
        cooling=cooling.cooling_summary(attention, split=split, seed=seed) if attention is not None else None,
        split=split,
        learned=learned_basis.book_profile(cap, seed=seed) if learned else None,
    )
