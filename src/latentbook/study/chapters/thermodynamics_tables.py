"""Chapter 2's tables (attention thermodynamics) and the numbers its prose glues.

Each ``*_table`` returns the DataFrame the chapter shows; each ``*_glue`` the values the chapter glues under
the prefix ``ch2``, keyed by their names without it (``glue_frame("ch2", values)``).
Introduced in: chapter 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import stats

from ...analysis import thermo
from . import label_key

if TYPE_CHECKING:
    from ...capturing import Capture
    from ...capturing.attention import AttentionRows

TREND_COLUMNS = {  # trend_table's columns -> glue-name suffix
    "rho(H/log n, gamma)": "rho_entropy",
    "p (entropy)": "p_entropy",
    "rho(beta_eff, gamma)": "rho_beta",
    "p (beta_eff)": "p_beta",
    "beta_eff, first layer": "beta_first",
    "beta_eff, last layer": "beta_last",
    "H/log n, first layer": "entropy_first",
    "H/log n, last layer": "entropy_last",
    "rho(beta_eff, |q||k|)": "rho_beta_qk",
}


def row_check_table(
    rows: Mapping[int, AttentionRows], betas: Iterable[float] = (0.5, 1.0, 2.0)
) -> pd.DataFrame:
    """One row per layer (0-based key of ``rows``, shown 1-based) and inverse temperature ``beta``:
    ``thermo.row_check`` of that layer's attention rows, the free-energy identities ``F(p*) = -(1/beta) log Z``
    and ``F(p) - F_min = KL(p || p*) / beta``."""
    betas = list(betas)
    return pd.DataFrame(
        [
            {"layer": layer + 1, "beta": beta, **thermo.row_check(r.logits, r.valid, r.weights, beta=beta)}
            for layer, r in rows.items()
            for beta in betas
        ]
    )


def row_check_glue(checks: pd.DataFrame, rows: Mapping[int, AttentionRows]) -> dict[str, object]:
    """From ``row_check_table``: the rows checked at ``beta = 1``, the keys of the first layer's rows, the
    largest ``F_min`` error, model gap and KL-identity error, and the smallest gap of a random row."""
    first = next(iter(rows.values()))
    return {
        "rows_checked": int(checks.loc[checks["beta"] == 1.0, "rows"].sum()),
        "n_keys_max": int(first.logits.shape[-1]),
        "fmin_error": float(checks["fmin_error"].max()),
        "model_gap": float(checks["model_gap"].max()),
        "min_random_gap": float(checks["min_random_gap"].min()),
        "kl_error": float(checks["kl_identity_error"].max()),
    }


def temperature_glue(temperatures: np.ndarray, excess: np.ndarray) -> dict[str, object]:
    """The number of temperatures ``beta'`` on the grid and the largest ``|argmin_beta' excess - 1|`` over the
    heads (rows of ``excess``, one column per temperature): how far a head's free-energy minimum is from the
    model's ``beta = 1``."""
    return {
        "n_temperatures": len(temperatures),
        "argmin_beta_max_dev": float(np.abs(temperatures[excess.argmin(1)] - 1.0).max()),
    }


def capture_gap_glue(attn: Mapping[str, Capture]) -> dict[str, object]:
    """Over every capture with attention: the largest variational gap ``|F(p) - F_min|`` of the weights the model
    used, and the number of (layer, head, query) rows recorded."""
    return {
        "capture_gap": float(max(cap.attention.variational_gap().max() for cap in attn.values())),
        "capture_rows": int(sum(cap.attention.n_rows().sum() for cap in attn.values())),
    }


def head_statistics(cap: Capture) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per layer and head of a capture with attention: ``gamma = l / L`` (``(L,)``, the layers 1 to ``L``), the
    normalised entropy ``H / log n`` and ``beta_eff`` (each ``(L, H)``, means over the recorded rows)."""
    a = cap.attention
    gamma = np.arange(1, a.n_layers + 1) / a.n_layers
    return gamma, a.entropy() / np.maximum(a.log_keys(), 1e-12), a.beta_eff()


def trend_table(attn: Mapping[str, Capture]) -> pd.DataFrame:
    """Per capture (index), from the head means of ``thermo.cooling``: the normalised entropy ``H / log n`` and
    ``beta_eff`` at the first and last layer, Spearman's ``rho`` of each against ``gamma`` with its p-value
    (``thermo.cooling_trend``), and Spearman's ``rho`` of ``beta_eff`` against ``|q||k|`` across layers."""
    rows = []
    for label, cap in attn.items():
        table = thermo.cooling(cap)
        gamma = table["gamma"].to_numpy()
        entropy_trend = thermo.cooling_trend(gamma, table["normalized_entropy"].to_numpy())
        beta_trend = thermo.cooling_trend(gamma, table["beta_eff"].to_numpy())
        rows.append(
            {
                "model": label,
                "layers": len(table),
                "H/log n, first layer": table["normalized_entropy"].iloc[0],
                "H/log n, last layer": table["normalized_entropy"].iloc[-1],
                "rho(H/log n, gamma)": entropy_trend["rho"],
                "p (entropy)": entropy_trend["p_value"],
                "beta_eff, first layer": table["beta_eff"].iloc[0],
                "beta_eff, last layer": table["beta_eff"].iloc[-1],
                "rho(beta_eff, gamma)": beta_trend["rho"],
                "p (beta_eff)": beta_trend["p_value"],
                "rho(beta_eff, |q||k|)": float(stats.spearmanr(table["qk_norm"], table["beta_eff"])[0]),
            }
        )
    return pd.DataFrame(rows).set_index("model")


def trend_glue(trends: pd.DataFrame) -> dict[str, float]:
    """``{label}_rho_entropy``, ``_p_entropy``, ``_rho_beta``, ``_p_beta``, ``_beta_first``, ``_beta_last``,
    ``_entropy_first``, ``_entropy_last`` and ``_rho_beta_qk`` of every capture of ``trend_table``."""
    return {
        f"{label_key(label)}_{short}": float(trends.loc[label, column])
        for label in trends.index
        for column, short in TREND_COLUMNS.items()
    }


def sink_table(attn: Mapping[str, Capture], n_boot: int = 200) -> pd.DataFrame:
    """Per trained capture (index), chapter 8's cooling ratio ``R`` (``cooling.cooling_summary``: mean normalised
    entropy after ``gamma = 0.42`` over before) with every row's sink key kept and with it removed (the rest
    renormalised), with the 95 % interval of the latter: how much of the fall with depth is attention parked on
    the first token."""
    from ...analysis import cooling

    rows = []
    for label, cap in attn.items():
        if label.startswith("random:"):
            continue
        kept = cooling.cooling_summary(cap, n_boot=n_boot, drop_sink=False)
        removed = cooling.cooling_summary(cap, n_boot=n_boot, drop_sink=True)
        rows.append(
            {
                "model": label,
                "R, sink kept": kept.estimate,
                "R, sink removed": removed.estimate,
                "95% CI (removed)": f"[{removed.ci[0]:.3f}, {removed.ci[1]:.3f}]",
                "sink removed": removed.sink_excluded,
            }
        )
    return pd.DataFrame(rows).set_index("model")


def sink_glue(sinks: pd.DataFrame) -> dict[str, object]:
    """``{label}_r_kept`` and ``{label}_r_removed`` of every capture of ``sink_table``, and ``sink_only``: the
    models whose entropy falls after 0.42 (R < 1) with the sink kept and not without it ("none" if none)."""
    values: dict[str, object] = {
        f"{label_key(label)}_{short}": float(sinks.loc[label, column])
        for label in sinks.index
        for column, short in (("R, sink kept", "r_kept"), ("R, sink removed", "r_removed"))
    }
    sink_only = sinks[(sinks["R, sink kept"] < 1) & (sinks["R, sink removed"] >= 1)].index
    values["sink_only"] = ", ".join(sink_only) or "none"
    return values
