"""Chapter 6's prototypes, directly (issue 54): before and after gamma_c, is each run's token cloud better told by
``k`` discrete prototypes (Theorem 6.3's "solid") than by one heavy-tailed cloud? The numbers the prose glues
under the prefix ``ch6``.

``analysis.prototypes.prototype_test``: ``k`` tied-covariance Gaussians (``k`` by BIC) against one multivariate
Student-t, both fitted on half of the prompts and scored on the other half (nats per held-out token, with a prompt
bootstrap), beside chapter 4's spike count of the same sample (Theorem 6.3: ``k`` prototypes leave ``k - 1``
spikes). BIC counts correlated tokens as independent, so a ``k`` at ``K_MAX`` is a lower bound, not a count.
Introduced in: chapter 6.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import pandas as pd

from ...analysis import prototypes
from . import label_key, nearest_depth

if TYPE_CHECKING:
    from ...capturing import Capture

# one depth well before the paper's gamma_c = 0.42 and one well after it, before the last layer's own norm
PROTOTYPE_GAMMAS = {"early": 0.2, "late": 0.7}


def prototype_table(
    captures: Mapping[str, Capture],
    names: Iterable[str],
    gammas: Mapping[str, float] = PROTOTYPE_GAMMAS,
    n_boot: int = 500,
) -> pd.DataFrame:
    """Per model of ``names`` and its ``random:`` twin, at the captured depths nearest ``gammas``: ``run``,
    ``depth`` (the name of the gamma), ``gamma`` and ``PrototypeTest.as_row`` (BIC's ``k``, the held-out gain of ``k`` prototypes over one t cloud in
    nats per token with its interval, the t's degrees of freedom, the spike count and the call: ``k >= 2`` and the
    interval above ``prototypes.MARGIN``), with ``k lower bound`` where ``k`` reached ``prototypes.K_MAX``."""
    rows = []
    for name in names:
        for label in (name, f"random:{name}"):
            cap = captures[label]
            for when, gamma in gammas.items():
                layer = nearest_depth(cap, gamma)
                test = prototypes.capture_prototypes(cap, layer, n_boot=n_boot)
                at = float(cap.gamma[list(cap.depths).index(layer)])
                row = {"run": label, "depth": when, "gamma": at, **test.as_row()}
                rows.append(row | {"k lower bound": test.k >= prototypes.K_MAX})
    return pd.DataFrame(rows)


def prototype_glue(table: pd.DataFrame) -> dict[str, object]:
    """Per run (``label_key`` stem) and depth (``early``, ``late``): ``pt_<depth>_gamma``, ``_k``, ``_gain``, ``_low``, ``_high``,
    ``_spikes``, ``_called``; with ``pt_k_max``, ``pt_n_lower_bounds`` (tests whose ``k`` reached it) and, per
    depth, the trained runs and twins called prototypes (``pt_<depth>_n_trained``, ``pt_<depth>_n_twins``) out of
    ``pt_n_models``."""
    twin = table["run"].str.startswith("random:")
    glued: dict[str, object] = {
        "pt_k_max": prototypes.K_MAX,
        "pt_n_models": int(table.loc[~twin, "run"].nunique()),
        "pt_n_tests": len(table),
        "pt_n_lower_bounds": int(table["k lower bound"].sum()),
    }
    for when, rows in table.groupby("depth", sort=False):
        is_twin = rows["run"].str.startswith("random:")
        glued[f"pt_{when}_n_trained"] = int(rows.loc[~is_twin, "prototypes"].sum())
        glued[f"pt_{when}_n_twins"] = int(rows.loc[is_twin, "prototypes"].sum())
    for row in table.itertuples(index=False):
        stem = f"{label_key(row.run)}_pt_{row.depth}"
        glued |= {
            f"{stem}_gamma": float(row.gamma),
            f"{stem}_k": int(row.k),
            f"{stem}_gain": float(row.gain),
            f"{stem}_low": float(row.low),
            f"{stem}_high": float(row.high),
            f"{stem}_spikes": int(row.n_spikes),
            f"{stem}_called": "prototypes" if row.prototypes else "one cloud or undecided",
        }
    return glued
