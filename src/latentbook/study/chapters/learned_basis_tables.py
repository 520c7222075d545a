"""Chapter 3's Omega in a basis the model learned (issue 54): ``m_ICA`` of each model beside its random twin at a
few depths, and the numbers the prose glues under the prefix ``ch3``.

``analysis.learned_basis`` re-expresses each depth's token sample in 32 independent components fitted to the
sample (cross-fitted by prompt) and reads Omega there. The twin is read at the same depths: a component basis of
untrained weights can be non-Gaussian too, and only the model's excess over it is what training made.
Introduced in: chapter 3.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import pandas as pd

from ...analysis import learned_basis, omega
from . import label_key, nearest_depth

if TYPE_CHECKING:
    from ...capturing import Capture

LEARNED_GAMMAS = (0.15, 0.3, 0.42, 0.6, 0.8, 1.0)  # depths read: about 2 s of fitting each at d = 576


def nearest_depths(cap: Capture, gammas: Sequence[float] = LEARNED_GAMMAS) -> list[int]:
    """The captured depths nearest each of ``gammas``, each once, shallowest first."""
    return sorted({nearest_depth(cap, g) for g in gammas})


def learned_table(
    captures: Mapping[str, Capture],
    names: Iterable[str],
    gammas: Sequence[float] = LEARNED_GAMMAS,
    n_boot: int = 200,
    seed: int = 0,
) -> pd.DataFrame:
    """Per model of ``names`` and depth near ``gammas``: ``m_ICA`` of the model and of ``random:<model>`` at the
    same depths (``m_ICA``, ``twin m_ICA``), the difference with its prompt-bootstrap interval (``learned_basis.twin_contrast``) and whether
    each run's own interval clears the Gaussian level by ``learned_basis.MARGIN`` (``found``, ``twin found``)."""
    frames = []
    for name in names:
        depths = nearest_depths(captures[name], gammas)
        model = learned_basis.capture_profile(captures[name], layers=depths, n_boot=n_boot, seed=seed)
        twin = learned_basis.capture_profile(
            captures[f"random:{name}"], layers=depths, n_boot=n_boot, seed=seed
        )
        frame = learned_basis.twin_contrast(model, twin).rename(
            columns={"model": "m_ICA", "twin": "twin m_ICA"}
        )
        frame.insert(0, "model", name)
        frame["found"], frame["twin found"] = model.found, twin.found
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def learned_glue(table: pd.DataFrame) -> dict[str, object]:
    """Per model (``label_key`` stem): the smallest and largest excess over the twin (``lb_min``, ``lb_max``), the
    depth of the largest (``lb_gmax``), the depths read and those whose interval lies above the twin's (``lb_n``,
    ``lb_n_above``) or below it (``lb_n_below``), the twin's highest ``m_ICA`` (``lb_twin_max``); with the Gaussian level of 32 components (``lb_gauss``)."""
    glued: dict[str, object] = {"lb_gauss": omega.gaussian_omega(learned_basis.N_COMPONENTS)}
    for name, rows in table.groupby("model", sort=False):
        stem = label_key(name)
        best = rows["difference"].idxmax()
        glued |= {
            f"{stem}_lb_min": float(rows["difference"].min()),
            f"{stem}_lb_max": float(rows["difference"].max()),
            f"{stem}_lb_gmax": float(rows.loc[best, "gamma"]),
            f"{stem}_lb_n": len(rows),
            f"{stem}_lb_n_above": int((rows["low"] > 0).sum()),
            f"{stem}_lb_n_below": int((rows["high"] < 0).sum()),
            f"{stem}_lb_twin_max": float(rows["twin m_ICA"].max()),
        }
    return glued
