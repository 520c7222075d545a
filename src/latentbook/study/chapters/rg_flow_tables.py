"""Chapter 5's tables (the contraction ``q`` of the transverse share, its sensitivity to ``k``, the blocks'
transverse gains), the correlation of tokens against their distance at every depth, and the numbers its prose glues under the prefix ``rg``, keyed by their names without it
(``glue_frame("rg", values)``). A model label names its glue keys as ``smollm2`` or ``random_smollm2``.
Introduced in: chapter 5.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ...analysis import contraction, flow
from . import label_key

if TYPE_CHECKING:
    from ...analysis.contraction import ContractionFit, GainFit
    from ...capturing import Capture


def q_table(fits: Mapping[str, ContractionFit]) -> pd.DataFrame:
    """One row per model: ``q`` per layer of the transverse share after the split
    (``contraction.contraction_after``), its interval, the depths fitted and whether the interval lies below 1."""
    return pd.DataFrame(
        [
            {
                "model": label,
                "q per layer": f.q,
                "CI low": f.ci[0],
                "CI high": f.ci[1],
                "layers": f"{f.start}-{f.stop}",
                "contracts": f.ci[1] < 1,
            }
            for label, f in fits.items()
        ]
    )


def q_word(fit: ContractionFit) -> str:
    """Where the interval of ``q`` lies: "below 1", "above 1" or "compatible with 1"."""
    return "below 1" if fit.ci[1] < 1 else "above 1" if fit.ci[0] > 1 else "compatible with 1"


def q_glue(
    fits: Mapping[str, ContractionFit], names: Sequence[str], shuffled: str = "smollm2-135m (shuffled)"
) -> dict[str, object]:
    """``q_{label}`` with ``_lo``, ``_hi`` and ``_word`` (``q_word``) for each of ``names`` and its random twin,
    and ``q_shuffled`` with ``q_shuffled_word`` for the ``shuffled`` run."""
    glued: dict[str, object] = {}
    for label in [run for name in names for run in (name, f"random:{name}")]:
        key = label_key(label)
        glued[f"q_{key}"] = float(fits[label].q)
        glued[f"q_{key}_lo"] = float(fits[label].ci[0])
        glued[f"q_{key}_hi"] = float(fits[label].ci[1])
        glued[f"q_{key}_word"] = q_word(fits[label])
    glued["q_shuffled"] = float(fits[shuffled].q)
    glued["q_shuffled_word"] = q_word(fits[shuffled])
    return glued


def k_sensitivity_table(
    captures: Mapping[str, Capture], ks: Iterable[int] = (5, 10, 20), split: float = 0.42, n_boot: int = 20
) -> pd.DataFrame:
    """Per capture (index): ``q`` of ``contraction.contraction_after`` with ``k`` relevant directions, one
    column ``q with k = {k}`` per ``k``."""
    table = pd.DataFrame(
        {
            k: {
                label: contraction.contraction_after(cap, split=split, k=k, n_boot=n_boot).q
                for label, cap in captures.items()
            }
            for k in ks
        }
    )
    table.columns = [f"q with k = {k}" for k in table.columns]
    return table


def gain_table(gain_fits: Mapping[str, GainFit]) -> pd.DataFrame:
    """One row per run: ``q = q⊥ / q∥`` of the blocks' gains (``contraction.transverse_gain``), its
    prompt-bootstrap interval, each part alone, the median block's ratio (a contraction must be steady, not one
    block's step) and the depths of the window."""
    return pd.DataFrame(
        [
            {
                "run": label,
                "q = q⊥ / q∥": f.q,
                "CI low": f.ci[0],
                "CI high": f.ci[1],
                "q⊥ (transverse alone)": f.transverse,
                "q∥ (relevant)": f.relevant,
                "median block": f.steady,
                "depths": f"{f.start}-{f.stop}",
            }
            for label, f in gain_fits.items()
        ]
    )


def gain_glue(gain_fits: Mapping[str, GainFit], names: Sequence[str]) -> dict[str, object]:
    """``gain_{label}`` (``q = q⊥ / q∥``) with ``_lo``, ``_hi``, ``_perp`` (``q⊥``) and ``_par`` (``q∥``) for each
    of ``names`` and its random twin, and each trained model's ``gain_{label}_verdict``, the word of
    ``contraction.judge_transverse_gain`` against its twin."""
    glued: dict[str, object] = {}
    for name in names:
        for label in (name, f"random:{name}"):
            fit = gain_fits[label]
            key = f"gain_{label_key(label)}"
            glued[key] = float(fit.q)
            glued[f"{key}_lo"] = float(fit.ci[0])
            glued[f"{key}_hi"] = float(fit.ci[1])
            glued[f"{key}_perp"] = float(fit.transverse)
            glued[f"{key}_par"] = float(fit.relevant)
        verdict_word, _ = contraction.judge_transverse_gain(gain_fits[name], gain_fits[f"random:{name}"])
        glued[f"gain_{label_key(name)}_verdict"] = verdict_word
    return glued


@dataclass(frozen=True)
class DistanceProfile:
    """One run's correlation against token distance at every depth ``l``: ``gamma`` (``l / L``),
    ``correlation`` (``C_l(r)`` for ``r = 0..R``, one row per depth) and ``length`` (``xi_l``)."""

    gamma: np.ndarray
    correlation: np.ndarray
    length: np.ndarray


def distance_profile(hidden: np.ndarray, mask: np.ndarray, max_distance: int) -> DistanceProfile:
    """``flow.distance_correlation`` and ``flow.correlation_length`` at every depth of ``hidden``
    (``(L + 1, n_prompts, T, d)`` and its ``mask``, as ``capturing.states.sequence_states`` returns them), the
    first position of every prompt left out (the attention sink, or [CLS])."""
    kept = np.array(mask, dtype=bool)
    kept[:, 0] = False
    correlation = flow.distance_correlation(hidden, kept, max_distance=max_distance)
    n_depths = len(correlation)
    return DistanceProfile(
        np.arange(n_depths) / (n_depths - 1), correlation, np.asarray(flow.correlation_length(correlation))
    )


def distance_glue(profiles: Mapping[str, DistanceProfile], labels: Sequence[str]) -> dict[str, float]:
    """For each of ``labels``, after the first layer (depth 1) and at the last depth (before the final norm):
    ``c1_first_{label}`` and ``c1_last_`` (``C(1)``), ``c8_first_`` and ``c8_last_`` (``C(8)``), ``xi_first_``
    and ``xi_last_`` (the correlation length)."""
    glued = {}
    for label in labels:
        key, p = label_key(label), profiles[label]
        glued |= {
            f"c1_first_{key}": float(p.correlation[1, 1]),
            f"c1_last_{key}": float(p.correlation[-1, 1]),
            f"c8_first_{key}": float(p.correlation[1, 8]),
            f"c8_last_{key}": float(p.correlation[-1, 8]),
            f"xi_first_{key}": float(p.length[1]),
            f"xi_last_{key}": float(p.length[-1]),
        }
    return glued
