"""Chapter 3's Omega in a basis the model learned (issue 54): ``m_ICA`` of each model beside its random twin at the
depths the verdict reads, the learned-basis row's steps, and the numbers the prose glues under the prefix ``ch3``.

``analysis.learned_basis`` re-expresses each depth's token sample in 32 independent components fitted to the
sample (cross-fitted by prompt) and reads Omega there. The twin is read at the same depths: a component basis of
untrained weights can be non-Gaussian too, and only the model's excess over it is what training made. The
profiles are the verdict's own (``measure(learned=True)``, kept by ``study.measurement_cache``): the chapter
reads them, it does not fit them again.
Introduced in: chapter 3.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import pandas as pd

from ...analysis import learned_basis, omega
from . import label_key

if TYPE_CHECKING:
    from ...analysis.learned_basis import LearnedProfile


def _pair(profiles: Mapping[str, LearnedProfile], name: str) -> tuple[LearnedProfile, LearnedProfile]:
    return profiles[name], profiles[f"random:{name}"]


def learned_table(profiles: Mapping[str, LearnedProfile], names: Iterable[str]) -> pd.DataFrame:
    """Per model of ``names`` and depth read: ``m_ICA`` of the model and of ``random:<model>`` (``m_ICA``,
    ``twin m_ICA``), the difference with its prompt-bootstrap interval (``learned_basis.twin_contrast``) and whether
    each run's own interval clears the Gaussian level by ``learned_basis.MARGIN`` (``found``, ``twin found``)."""
    frames = []
    for name in names:
        model, twin = _pair(profiles, name)
        frame = learned_basis.twin_contrast(model, twin).rename(
            columns={"model": "m_ICA", "twin": "twin m_ICA"}
        )
        frame.insert(0, "model", name)
        frame["found"], frame["twin found"] = model.found, twin.found
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def rise_table(profiles: Mapping[str, LearnedProfile], names: Iterable[str]) -> pd.DataFrame:
    """Per model of ``names`` and step between read depths: ``learned_basis.rise_contrast`` (the rise of
    ``m_ICA`` beyond the twin's, family-wise interval), with the row's verdict on the model (``judge_rise``)."""
    frames = []
    for name in names:
        steps = learned_basis.rise_contrast(*_pair(profiles, name))
        steps.insert(0, "model", name)
        steps["verdict"] = learned_basis.judge_rise(steps)[0]
        frames.append(steps)
    return pd.concat(frames, ignore_index=True)


def learned_glue(table: pd.DataFrame, rises: pd.DataFrame) -> dict[str, object]:
    """Per model (``label_key`` stem): the smallest and largest excess over the twin (``lb_min``, ``lb_max``), the
    depth of the largest (``lb_gmax``), the depths read and those whose interval lies above the twin's (``lb_n``,
    ``lb_n_above``) or below it (``lb_n_below``), the twin's highest ``m_ICA`` (``lb_twin_max``); of ``rises``, the
    row's verdict (``lb_verdict``) and the largest step beyond the twin's with its interval and depths
    (``lb_rise``, ``lb_rise_low``, ``lb_rise_high``, ``lb_rise_from``, ``lb_rise_to``); with the Gaussian level of
    32 components (``lb_gauss``), the row's bar (``lb_bar``) and the number of models whose row holds
    (``lb_n_holds``)."""
    glued: dict[str, object] = {
        "lb_gauss": omega.gaussian_omega(learned_basis.N_COMPONENTS),
        "lb_bar": learned_basis.RISE_BAR,
        "lb_n_holds": int((rises.groupby("model")["verdict"].first() == "holds").sum()),
    }
    for name, rows in table.groupby("model", sort=False):
        stem = label_key(name)
        best = rows["difference"].idxmax()
        step = learned_basis.best_step(rises[rises["model"] == name].reset_index(drop=True))
        glued |= {
            f"{stem}_lb_min": float(rows["difference"].min()),
            f"{stem}_lb_max": float(rows["difference"].max()),
            f"{stem}_lb_gmax": float(rows.loc[best, "gamma"]),
            f"{stem}_lb_n": len(rows),
            f"{stem}_lb_n_above": int((rows["low"] > 0).sum()),
            f"{stem}_lb_n_below": int((rows["high"] < 0).sum()),
            f"{stem}_lb_twin_max": float(rows["twin m_ICA"].max()),
            f"{stem}_lb_verdict": str(step["verdict"]),
            f"{stem}_lb_rise": float(step["excess"]),
            f"{stem}_lb_rise_low": float(step["low"]),
            f"{stem}_lb_rise_high": float(step["high"]),
            f"{stem}_lb_rise_from": float(step["gamma_from"]),
            f"{stem}_lb_rise_to": float(step["gamma_to"]),
        }
    return glued
