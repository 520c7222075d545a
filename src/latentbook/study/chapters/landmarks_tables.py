"""Chapter 9's tables (the intrinsic-dimension estimators on planted manifolds; every run's landmarks) and the
numbers its prose glues under the prefix ``cl``, keyed by their names without it (``glue_frame("cl", values)``).
A run names its keys as chapter 3 does (``chapters.label_key``: ``smollm2``, ``random_smollm2``,
``smollm2_shuffled``). Introduced in: chapter 9.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ...analysis import intrinsic_dimension
from ...analysis.paper import PAPER_GAMMA_C
from ...analysis.synthetic import curved_manifold
from ...analysis.verdict import GAMMA_C_TOLERANCE
from ..run_landmarks import ID_SCALE, LANDMARK_NAMES
from . import label_key

if TYPE_CHECKING:
    from ..planted_calibration import PlantedTable
    from ..run_landmarks import DepthLandmarks

# (dimension, ambient d, within-prompt correlation, noise): the planted clouds of the estimator check
PLANTED_CLOUDS = ((3, 256, 0.0, 0.0), (6, 384, 0.5, 0.0), (10, 640, 0.5, 0.0), (6, 384, 0.3, 0.02))
PLANTED_PROMPTS, PLANTED_PER_PROMPT = 128, 4  # the book's capture: 128 prompts, about 4 sampled tokens each
_SHORT = dict(zip(LANDMARK_NAMES, ("id_two_nn", "id_gride", "onset", "lens", "jump")))


def planted_table(
    n_prompts: int = PLANTED_PROMPTS, tokens_per_prompt: int = PLANTED_PER_PROMPT, seed: int = 0
) -> pd.DataFrame:
    """TwoNN and Gride (``n1 = ID_SCALE``) on each of ``PLANTED_CLOUDS`` (``synthetic.curved_manifold``, bent by
    0.5) at the book's sample size, with prompt-bootstrap intervals and the relative error of each."""
    rows = []
    for dimension, d, rho, noise in PLANTED_CLOUDS:
        cloud = curved_manifold(n_prompts, tokens_per_prompt, dimension, d, rho=rho, noise=noise, seed=seed)
        two_nn = intrinsic_dimension.two_nn(cloud.x, cloud.prompt_ids, seed=seed)
        gride = intrinsic_dimension.gride(cloud.x, cloud.prompt_ids, n1=ID_SCALE, seed=seed)
        rows.append(
            {
                "planted": dimension,
                "d": d,
                "rho": rho,
                "noise": noise,
                "TwoNN": two_nn.dimension,
                "TwoNN CI": f"[{two_nn.ci[0]:.2f}, {two_nn.ci[1]:.2f}]",
                "TwoNN error": two_nn.dimension / dimension - 1,
                "Gride": gride.dimension,
                "Gride CI": f"[{gride.ci[0]:.2f}, {gride.ci[1]:.2f}]",
                "Gride error": gride.dimension / dimension - 1,
            }
        )
    return pd.DataFrame(rows)


def planted_glue(table: pd.DataFrame) -> dict[str, object]:
    """The largest relative errors of each estimator on the clean clouds (no noise) and on the noisy one."""
    clean, noisy = table[table["noise"] == 0], table[table["noise"] > 0].iloc[0]
    return {
        "planted_two_nn_clean_err": float(clean["TwoNN error"].abs().max() * 100),
        "planted_gride_clean_err": float(clean["Gride error"].abs().max() * 100),
        "planted_noisy_dim": int(noisy["planted"]),
        "planted_noisy_two_nn": float(noisy["TwoNN"]),
        "planted_noisy_gride": float(noisy["Gride"]),
        "id_scale": ID_SCALE,
        "planted_prompts": PLANTED_PROMPTS,
        "planted_per_prompt": PLANTED_PER_PROMPT,
        "planted_d_min": int(table["d"].min()),
        "planted_d_max": int(table["d"].max()),
    }


def landmark_table(results: Mapping[str, DepthLandmarks]) -> pd.DataFrame:
    """Every run's landmarks, one row each (``DepthLandmarks.table``)."""
    return pd.DataFrame([row for result in results.values() for row in result.table()])


def landmark_glue(table: pd.DataFrame, trained: Sequence[str]) -> dict[str, object]:
    """Per run and landmark ``{run}_{landmark}`` (gamma, NaN when absent) with ``_lo``/``_hi``; and, over the
    ``trained`` runs, how many landmarks were found, how many lie within the paper's window and how many
    coincide with an Omega jump, with the list of those within the window."""
    glued: dict[str, object] = {
        "window_low": PAPER_GAMMA_C - GAMMA_C_TOLERANCE,
        "window_high": PAPER_GAMMA_C + GAMMA_C_TOLERANCE,
    }
    for row in table.to_dict("records"):
        key = f"{label_key(row['run'])}_{_SHORT[row['landmark']]}"
        glued[key], glued[f"{key}_lo"], glued[f"{key}_hi"] = row["gamma"], row["CI low"], row["CI high"]
        glued[f"{key}_text"] = landmark_words(row)
    mine = table[table["run"].isin(trained) & (table["landmark"] != LANDMARK_NAMES[-1])]
    found = mine[mine["found"]]
    near = found[found["near 0.42"]]
    glued["n_trained_found"] = len(found)
    glued["n_trained_near"] = len(near)
    glued["n_trained_with_jump"] = int(found["with the Omega jump"].sum())
    jumps = table[table["run"].isin(trained) & (table["landmark"] == LANDMARK_NAMES[-1])]
    glued["n_trained_jumps"] = int(jumps["found"].sum())
    glued["near_list"] = _listed(
        f"{r.landmark} of {r.run} ({r.gamma:.2f})" for r in near.itertuples(index=False)
    )
    return glued


def profile_ends_glue(results: Mapping[str, DepthLandmarks]) -> dict[str, float]:
    """Per run (``chapters.label_key``), what the prose reads off its profiles: the relative update norm at the first
    and last depth and its smallest and largest value (``{run}_update_first``, ``_last``, ``_min``, ``_max``), and
    TwoNN's intrinsic dimension at the first and last depth read (``{run}_two_nn_first``, ``_last``)."""
    glued: dict[str, float] = {}
    for label, result in results.items():
        key, updates, two_nn = label_key(label), result.updates.mean, result.id_two_nn.dimension
        glued[f"{key}_update_first"], glued[f"{key}_update_last"] = float(updates[0]), float(updates[-1])
        glued[f"{key}_update_min"], glued[f"{key}_update_max"] = float(updates.min()), float(updates.max())
        glued[f"{key}_two_nn_first"], glued[f"{key}_two_nn_last"] = float(two_nn[0]), float(two_nn[-1])
    return glued


def landmark_words(row: Mapping[str, object]) -> str:
    """A landmark row in words: ``"0.40, inside the paper's window"``, ``"0.72 [0.72, 0.95]"``, or why none."""
    if not row["found"]:
        return str(row["what"])
    low, high = row["CI low"], row["CI high"]
    words = f"{row['gamma']:.2f}" + ("" if low == high else f" [{low:.2f}, {high:.2f}]")
    return words + (", inside the paper's window" if row["near 0.42"] else "")


def _listed(items) -> str:
    items = list(items)
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def id_at_scales(
    vectors: np.ndarray, prompts: np.ndarray, scales: Sequence[int] = (1, 2, 4, 8, 16)
) -> pd.DataFrame:
    """Gride at each ``n1`` of ``scales`` (``n2 = 2 n1``) on one depth's token sample, with intervals."""
    rows = []
    for n1 in scales:
        estimate = intrinsic_dimension.gride(vectors, prompts, n1=n1)
        rows.append({"n1": n1, "ID": estimate.dimension, "CI low": estimate.ci[0], "CI high": estimate.ci[1]})
    return pd.DataFrame(rows)


def calibration_glue(calibration: PlantedTable) -> dict[str, object]:
    """The landmark judge's calibration (``landmark_calibration.load_record``, its ``landmark_coincidence`` families):
    power on the "near" family, the largest upper end of the false-hold intervals on the others, how many families
    meet their target, and provenance."""
    table = calibration.table[calibration.table["claim"] == "landmark_coincidence"]
    near = table[table["expected"] == "holds"].iloc[0]
    absent = table[table["expected"] != "holds"]
    return {
        "cal_cases": int(table["cases"].min()),
        "cal_power": float(near["holds rate"] * 100),
        "cal_power_lo": float(near["Wilson low"] * 100),
        "cal_false_max": int(absent["holds"].max()),
        "cal_false_upper": float(absent["Wilson high"].max() * 100),
        "cal_met": int(table["meets target"].sum()),
        "cal_families": len(table),
        "cal_date": str(calibration.provenance.get("date", "unknown"))[:10],
        "cal_current": "the current code"
        if calibration.current
        else "code that has changed since: rerun tools/calibrate_landmarks.py",
    }


def verdict_frame(results: Mapping[str, DepthLandmarks]) -> pd.DataFrame:
    """The landmark row of every run: its verdict and reason (``DepthLandmarks.verdict``)."""
    return pd.DataFrame(
        [{"run": label, **dict(zip(("verdict", "reason"), r.verdict()))} for label, r in results.items()]
    )
