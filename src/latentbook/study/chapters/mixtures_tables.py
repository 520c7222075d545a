"""Chapter 6's tables (spikes of synthetic mixtures against Theorem 6.3, the TCO scores of the binding task) and
the numbers its prose glues under the prefix ``mx``, keyed by their names without it
(``glue_frame("mx", values)``). A model label names its glue keys as ``smollm2`` or ``random_smollm2``.
Introduced in: chapter 6.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ...analysis import classes, synthetic, tco, verdict
from . import label_key

if TYPE_CHECKING:
    from ...analysis.classes import Separability
    from ...analysis.tco import TCOScores


def spike_table(n: int, d: int, ks: Iterable[int], separations: Iterable[float]) -> pd.DataFrame:
    """One row per separation ``s`` and class count ``k``: the spikes ``classes.mixture_spikes`` finds in ``n``
    tokens of ``synthetic.mixture(n, d, k, separation=s, seed=k)``, Theorem 6.3's bound ``k - 1``, the signal
    strength ``theta = signal eigenvalue / sigma^2`` and whether it clears the BBP threshold ``sqrt(d/n)``."""
    rows = []
    for s in separations:
        for k in ks:
            mix = synthetic.mixture(n, d, int(k), separation=s, seed=int(k))
            found = classes.mixture_spikes(mix.x, n_classes=int(k))
            theta = mix.signal_eigenvalue / mix.sigma2
            rows.append(
                {
                    "separation": s,
                    "k": int(k),
                    "spikes": found.n_spikes,
                    "bound k-1": int(k) - 1,
                    "theta": theta,
                    "above BBP": theta > np.sqrt(d / n),
                }
            )
    return pd.DataFrame(rows)


def spike_glue(
    spikes: pd.DataFrame, n: int, d: int, strong: float = 4.0, weak: float = 1.0
) -> dict[str, object]:
    """From ``spike_table``: the largest excess of spikes over ``k - 1``; at separation ``strong``, the mixtures
    with exactly ``k - 1`` spikes and their number; at separation ``weak``, the most spikes and the largest
    ``theta``; and the BBP threshold ``sqrt(d/n)``."""
    strong_rows = spikes[spikes["separation"] == strong]
    weak_rows = spikes[spikes["separation"] == weak]
    return {
        "max_excess": int((spikes["spikes"] - spikes["bound k-1"]).max()),
        "strong_exact": int((strong_rows["spikes"] == strong_rows["bound k-1"]).sum()),
        "strong_n": len(strong_rows),
        "weak_max": int(weak_rows["spikes"].max()),
        "weak_theta_max": float(weak_rows["theta"].max()),
        "bbp": float(np.sqrt(d / n)),
    }


def query_glue(
    separation: Mapping[str, Separability],
    gammas: Mapping[str, np.ndarray],
    band_high: float,
    bag: float,
    names: Sequence[str],
) -> dict[str, object]:
    """Per model of ``separation`` (nearest-centroid accuracy at the query, one value per depth ``gammas[label]``):
    its best accuracy ``query_best_{label}`` and that depth's gamma, how many depths lie above ``band_high`` (the
    chance band's top) and how many depths it has; and how many of the trained ``names``
    (``n_trained_above_bag``) and of their random twins (``n_twins_above_bag``) beat ``bag`` at any depth."""
    glued: dict[str, object] = {}
    for label, sep in separation.items():
        key, best = label_key(label), int(np.argmax(sep.accuracy))
        glued[f"query_best_{key}"] = float(sep.accuracy[best])
        glued[f"query_best_gamma_{key}"] = float(gammas[label][best])
        glued[f"query_above_{key}"] = int((sep.accuracy > band_high).sum())
        glued[f"query_depths_{key}"] = len(sep.accuracy)
    beats_bag = {label: bool(sep.accuracy.max() > bag) for label, sep in separation.items()}
    glued["n_trained_above_bag"] = sum(beats_bag[name] for name in names)
    glued["n_twins_above_bag"] = sum(beats_bag[f"random:{name}"] for name in names)
    return glued


def tco_table(scores: Mapping[str, TCOScores]) -> pd.DataFrame:
    """Per model (index): the two-way control accuracy at the query with its Wilson interval, the bag-of-values
    and first-value baselines, the stability at the hops with its interval, the k-way control and bag, and the
    best single depth of the control."""
    return pd.DataFrame(
        {
            label: {
                "control": v.control.accuracy,
                "control CI low": v.control.ci[0],
                "control CI high": v.control.ci[1],
                "bag of values": v.control_bag.accuracy,
                "first value": v.control_first.accuracy,
                "stability": v.stability.accuracy,
                "stability CI low": v.stability.ci[0],
                "stability CI high": v.stability.ci[1],
                "k-way control": v.control_kway.accuracy,
                "k-way bag": v.control_kway_bag.accuracy,
                "best single depth (control)": v.best_depth_control,
            }
            for label, v in scores.items()
        }
    ).T


def passes_control(v: TCOScores) -> bool:
    """Whether the control's interval lies above the strongest non-binding decoder plus ``verdict.TCO_MARGIN``."""
    return bool(v.control.ci[0] > v.control_bar + verdict.TCO_MARGIN)


def tco_glue(
    scores: Mapping[str, TCOScores], names: Sequence[str], model: str = "smollm2-135m"
) -> dict[str, object]:
    """Every model's ``tco_control_{label}`` (with ``_lo`` and ``_hi``) and ``tco_stability_{label}``; the
    criterion's margin, two-way chance and folds; ``model``'s first-value and bag-of-values accuracies and number
    of programs; and how many of the trained ``names`` (``tco_n_pass``) and of their random twins
    (``tco_n_twins_pass``) pass ``passes_control``."""
    glued: dict[str, object] = {}
    for label, v in scores.items():
        key = label_key(label)
        glued[f"tco_control_{key}"] = float(v.control.accuracy)
        glued[f"tco_control_{key}_lo"] = float(v.control.ci[0])
        glued[f"tco_control_{key}_hi"] = float(v.control.ci[1])
        glued[f"tco_stability_{key}"] = float(v.stability.accuracy)
    glued.update(
        {
            "tco_margin": verdict.TCO_MARGIN,
            "two_way_chance": tco.TWO_WAY_CHANCE,
            "tco_folds": tco.N_FOLDS,
            f"tco_first_{label_key(model)}": float(scores[model].control_first.accuracy),
            "tco_bag_two_way": float(scores[model].control_bag.accuracy),
            "tco_n_programs": int(scores[model].control.n),
            "tco_n_pass": sum(passes_control(scores[name]) for name in names),
            "tco_n_twins_pass": sum(passes_control(scores[f"random:{name}"]) for name in names),
        }
    )
    return glued
